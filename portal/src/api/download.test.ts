import { describe, expect, it } from 'vitest';
import { downloadUrl } from './download';

describe('downloadUrl', () => {
  it('names the workspace and the path as the REST route reads them', () => {
    expect(downloadUrl('codex-a', { scope: 'PROJECT', project_name: 'demo' }, 'src/a b.go')).toBe(
      '/api/v1/agent-gateway/agents/codex-a/download?workspace.scope=PROJECT&workspace.project_name=demo&path=src%2Fa+b.go',
    );
    expect(downloadUrl('codex a', { scope: 'GLOBAL' }, '')).toBe('/api/v1/agent-gateway/agents/codex%20a/download?workspace.scope=GLOBAL&path=');
  });
});
