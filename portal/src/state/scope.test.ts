import { describe, expect, it } from 'vitest';
import { isStale, ScopeManager } from './scope';

interface AgentCache {
  projects: string[];
  files: Map<string, string>;
}

function deferred<T>() {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

describe('agent-switch cache isolation', () => {
  const mgr = () => new ScopeManager<AgentCache>(() => ({ projects: [], files: new Map() }));

  it('each selection starts from an empty cache, also when switching back', () => {
    const m = mgr();
    const a = m.switchTo('codex-a');
    a.state.projects.push('alpha');
    a.state.files.set('alpha/x', 'A text');
    const b = m.switchTo('codex-b');
    expect(b.state.projects).toEqual([]);
    expect(b.state.files.size).toBe(0);
    const a2 = m.switchTo('codex-a');
    expect(a2.state.projects).toEqual([]);
    expect(a2).not.toBe(a);
  });

  it("drops the previous agent's late response", async () => {
    const m = mgr();
    const a = m.switchTo('codex-a');
    const slow = deferred<string[]>();
    const pending = a.guard(slow.promise).then(
      (p) => a.state.projects.push(...p),
      (err) => (isStale(err) ? 'dropped' : Promise.reject(err)),
    );
    const b = m.switchTo('codex-b');
    slow.resolve(['alpha-from-a']);
    expect(await pending).toBe('dropped');
    expect(b.state.projects).toEqual([]);
    expect(m.current?.agentId).toBe('codex-b');
  });

  it('keeps errors of the current scope and hides those of an ended one', async () => {
    const m = mgr();
    const a = m.switchTo('codex-a');
    await expect(a.guard(Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    const d = deferred<never>();
    const p = a.guard(d.promise.then(() => Promise.reject(new Error('late'))));
    m.switchTo('codex-b');
    d.resolve(undefined as never);
    await expect(p).rejects.toSatisfy(isStale);
  });

  it('current scope stays usable', async () => {
    const m = mgr();
    const b = m.switchTo('codex-b');
    expect(await b.guard(Promise.resolve(3))).toBe(3);
    expect(b.alive).toBe(true);
  });
});
