import { describe, expect, it } from 'vitest';
import { initialAgent } from './agents';

const a = (agent_id: string, is_default = false, project_management_enabled = true) => ({ agent_id, is_default, project_management_enabled });

describe('initialAgent', () => {
  it('prefers the default agent', () => {
    expect(initialAgent([a('codex-a'), a('codex-b', true)])?.agent_id).toBe('codex-b');
  });
  it('falls back to the first agent with project management when the default has none', () => {
    expect(initialAgent([a('codex-a', true, false), a('codex-b'), a('codex-c')])?.agent_id).toBe('codex-b');
  });
  it('still selects something when no agent manages projects', () => {
    expect(initialAgent([a('x', false, false), a('y', true, false)])?.agent_id).toBe('y');
    expect(initialAgent([a('x', false, false)])?.agent_id).toBe('x');
    expect(initialAgent([])).toBeUndefined();
  });
});
