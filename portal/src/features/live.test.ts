import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { GetFileResponse, WorkspaceRef } from '../api/types';
import { LiveController, type LiveHost } from './live';
import type { AgentState } from '../state/appState';
import * as ed from '../state/editorState';
import { AgentScope } from '../state/scope';
import { newTree, type TreeState } from '../state/tree';

/** A stand-in for EventSource: the test emits its events. */
class FakeES {
  static last: FakeES | null = null;
  #l = new Map<string, ((m: MessageEvent<string>) => void)[]>();
  constructor() {
    FakeES.last = this;
  }
  addEventListener(name: string, fn: (m: MessageEvent<string>) => void): void {
    this.#l.set(name, [...(this.#l.get(name) ?? []), fn]);
  }
  emit(name: string, data: unknown): void {
    for (const fn of this.#l.get(name) ?? []) fn({ data: JSON.stringify(data) } as MessageEvent<string>);
  }
  close(): void {}
}

const ws: WorkspaceRef = { scope: 'PROJECT', project_name: 'demo' };
const version = (revision: string, content: string): GetFileResponse => ({
  entry: { path: 'a.txt', name: 'a.txt', type: 'ENTRY_TYPE_FILE', revision, editable: true },
  content,
});

describe('LiveController and the open file', () => {
  beforeEach(() => {
    vi.useFakeTimers();
    vi.stubGlobal('EventSource', FakeES);
  });
  afterEach(() => {
    vi.useRealTimers();
    vi.unstubAllGlobals();
  });

  it('drops a reload answer that arrives after a newer one (two quick changes of a clean file)', async () => {
    const tree: TreeState = newTree(ws);
    tree.dirs.get('')!.listing = { items: [], nextCursor: '', loaded: true };
    const state = { file: ed.openFile('PROJECT:demo', 'a.txt', version('r1', 'one')), trees: new Map() } as unknown as AgentState;
    const scope = new AgentScope('codex-a', 1, state);
    const pending: { resolve: (r: GetFileResponse) => void }[] = [];
    const shown: string[] = [];
    const host: LiveHost = {
      scope: () => scope,
      tree: () => tree,
      enabled: () => true,
      reloadDir: async () => {},
      getFile: () => new Promise<GetFileResponse>((resolve) => pending.push({ resolve })),
      showLoaded: (_s, r) => {
        shown.push(r.content ?? '');
        state.file = ed.openFile('PROJECT:demo', 'a.txt', r);
      },
      reloadServerVersion: async () => {},
      saveAsNew: async () => {},
      notify: () => {},
      update: () => {},
    };
    const live = new LiveController(host);
    live.sync();
    vi.advanceTimersByTime(0);
    await Promise.resolve();
    const es = FakeES.last!;
    expect(es).not.toBeNull();
    // A fresh subscription checks the open file once: unchanged.
    es.emit('change', { id: 'e-1', kind: 'WATCH_EVENT_KIND_READY', directories: [''] });
    await vi.waitFor(() => expect(pending).toHaveLength(1));
    pending[0]!.resolve(version('r1', 'one'));
    // Two quick changes: two reloads in flight.
    es.emit('change', { id: 'e-2', kind: 'WATCH_EVENT_KIND_MODIFIED', directory: '', path: 'a.txt', entry: version('r2', '').entry });
    es.emit('change', { id: 'e-3', kind: 'WATCH_EVENT_KIND_MODIFIED', directory: '', path: 'a.txt', entry: version('r3', '').entry });
    await vi.waitFor(() => expect(pending).toHaveLength(3));
    // The newer answer first, the older one last.
    pending[2]!.resolve(version('r3', 'three'));
    await vi.waitFor(() => expect(shown).toEqual(['three']));
    pending[1]!.resolve(version('r2', 'two'));
    for (let i = 0; i < 10; i++) await Promise.resolve();
    expect(shown).toEqual(['three']);
    expect(state.file?.revision).toBe('r3');
  });
});
