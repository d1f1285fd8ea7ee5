import { describe, expect, it } from 'vitest';
import { Drafts, type KeyValue } from './drafts';

function memory(): KeyValue & { map: Map<string, string> } {
  const map = new Map<string, string>();
  return { map, getItem: (k) => map.get(k) ?? null, setItem: (k, v) => void map.set(k, v), removeItem: (k) => void map.delete(k) };
}

describe('Drafts', () => {
  it('keeps one draft per agent, workspace and path with its base revision', () => {
    const m = memory();
    const d = new Drafts(m);
    d.put({ agentId: 'a', workspaceKey: 'PROJECT:p', path: 'x.txt', baseRevision: 'r1', text: 'one\r\n' });
    d.put({ agentId: 'b', workspaceKey: 'PROJECT:p', path: 'x.txt', baseRevision: 'r9', text: 'other agent' });
    expect(d.get('a', 'PROJECT:p', 'x.txt')).toMatchObject({ baseRevision: 'r1', text: 'one\r\n' });
    expect(d.get('b', 'PROJECT:p', 'x.txt')?.text).toBe('other agent');
    expect(d.get('a', 'GLOBAL:', 'x.txt')).toBeNull();
    d.put({ agentId: 'a', workspaceKey: 'PROJECT:p', path: 'x.txt', baseRevision: 'r2', text: 'two' });
    expect(d.get('a', 'PROJECT:p', 'x.txt')).toMatchObject({ baseRevision: 'r2', text: 'two' });
    d.remove('a', 'PROJECT:p', 'x.txt');
    expect(d.get('a', 'PROJECT:p', 'x.txt')).toBeNull();
    expect(m.map.size).toBe(1);
  });

  it('survives a broken or missing storage', () => {
    const broken: KeyValue = {
      getItem: () => '{not json',
      setItem: () => {
        throw new Error('QuotaExceededError');
      },
      removeItem: () => {},
    };
    const d = new Drafts(broken);
    expect(d.get('a', 'w', 'p')).toBeNull();
    expect(d.put({ agentId: 'a', workspaceKey: 'w', path: 'p', baseRevision: 'r', text: 't' })).toBe(false);
    expect(new Drafts(null).get('a', 'w', 'p')).toBeNull();
  });
});
