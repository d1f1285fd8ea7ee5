import { describe, expect, it } from 'vitest';
import { backoffDelay, watchUrl, type WatchEvent } from '../api/watch';
import type { Entry } from '../api/types';
import * as ed from './editorState';
import { applyToTree, fileReaction, lineDiff, watchedDirs } from './live';
import { dirState, newTree } from './tree';

const file = (path: string, revision = 'r1'): Entry => ({ path, name: path.split('/').pop(), type: 'ENTRY_TYPE_FILE', revision });
const dir = (path: string, revision = 'd1'): Entry => ({ path, name: path.split('/').pop(), type: 'ENTRY_TYPE_DIRECTORY', revision });
const ws = { scope: 'PROJECT' as const, project_name: 'demo' };

function tree() {
  const t = newTree(ws);
  t.dirs.get('')!.listing = { items: [dir('src'), file('a.txt'), file('c.txt')], nextCursor: '', loaded: true };
  const s = dirState(t, 'src');
  s.expanded = true;
  s.listing = { items: [file('src/x.go')], nextCursor: '', loaded: true };
  return t;
}
const names = (t: ReturnType<typeof tree>, d: string) => t.dirs.get(d)!.listing.items.map((e) => e.path);

describe('applyToTree', () => {
  it('inserts created entries in listing order, updates, removes and renames in place', () => {
    const t = tree();
    applyToTree(t, { kind: 'WATCH_EVENT_KIND_CREATED', path: 'b.txt', entry: file('b.txt') });
    applyToTree(t, { kind: 'WATCH_EVENT_KIND_CREATED', path: 'lib', entry: dir('lib') });
    expect(names(t, '')).toEqual(['lib', 'src', 'a.txt', 'b.txt', 'c.txt']);
    applyToTree(t, { kind: 'WATCH_EVENT_KIND_MODIFIED', path: 'a.txt', entry: file('a.txt', 'r2') });
    expect(t.dirs.get('')!.listing.items.find((e) => e.path === 'a.txt')!.revision).toBe('r2');
    applyToTree(t, { kind: 'WATCH_EVENT_KIND_RENAMED', from_path: 'c.txt', path: 'd.txt', entry: file('d.txt', 'r3') });
    expect(names(t, '')).toEqual(['lib', 'src', 'a.txt', 'b.txt', 'd.txt']);
    applyToTree(t, { kind: 'WATCH_EVENT_KIND_REMOVED', path: 'src' });
    expect(names(t, '')).toEqual(['lib', 'a.txt', 'b.txt', 'd.txt']);
    expect(t.dirs.has('src')).toBe(false);
  });
  it('a directory revision refresh patches its row in the parent; the root is listed nowhere', () => {
    const t = tree();
    applyToTree(t, { kind: 'WATCH_EVENT_KIND_MODIFIED', path: '', entry: dir('', 'd9') });
    expect(names(t, '')).toEqual(['src', 'a.txt', 'c.txt']);
    applyToTree(t, { kind: 'WATCH_EVENT_KIND_MODIFIED', path: 'src', entry: dir('src', 'd2') });
    expect(t.dirs.get('')!.listing.items[0]!.revision).toBe('d2');
  });
  it('does not insert past the loaded pages of a partial listing', () => {
    const t = tree();
    t.dirs.get('')!.listing = { ...t.dirs.get('')!.listing, nextCursor: 'more' };
    applyToTree(t, { kind: 'WATCH_EVENT_KIND_CREATED', path: 'z.txt', entry: file('z.txt') });
    expect(names(t, '')).not.toContain('z.txt');
  });
  it('reloads on a burst, resyncs everything on overflow, forgets gone folders', () => {
    const t = tree();
    expect(applyToTree(t, { kind: 'WATCH_EVENT_KIND_DIRECTORY', path: 'src' }).reload).toEqual(['src']);
    expect(applyToTree(t, { kind: 'WATCH_EVENT_KIND_RESYNC', reason: 'RESYNC_REASON_OVERFLOW' }).resyncAll).toBe(true);
    const gone = applyToTree(t, { kind: 'WATCH_EVENT_KIND_RESYNC', reason: 'RESYNC_REASON_GONE', directories: ['src'] });
    expect(gone.reload).toEqual(['']);
    expect(watchedDirs(t)).toEqual(['']);
    expect(applyToTree(t, { kind: 'WATCH_EVENT_KIND_RESYNC', reason: 'RESYNC_REASON_LIMIT', directories: ['x'] }).notLive).toEqual(['x']);
  });
});

describe('fileReaction', () => {
  const open = ed.openFile('PROJECT:demo', 'src/x.go', { entry: { ...file('src/x.go'), editable: true }, content: 'a' });
  const r = (ev: WatchEvent) => fileReaction(open, 'PROJECT:demo', ev).kind;
  it('tells changed, deleted and unrelated apart', () => {
    expect(r({ kind: 'WATCH_EVENT_KIND_MODIFIED', path: 'src/x.go', entry: file('src/x.go', 'r2') })).toBe('changed');
    expect(r({ kind: 'WATCH_EVENT_KIND_MODIFIED', path: 'src/x.go', entry: file('src/x.go', 'r1') })).toBe('none');
    expect(r({ kind: 'WATCH_EVENT_KIND_MODIFIED', path: 'src/y.go', entry: file('src/y.go', 'r2') })).toBe('none');
    expect(r({ kind: 'WATCH_EVENT_KIND_REMOVED', path: 'src/x.go' })).toBe('deleted');
    expect(r({ kind: 'WATCH_EVENT_KIND_REMOVED', path: 'src' })).toBe('deleted');
    expect(r({ kind: 'WATCH_EVENT_KIND_RENAMED', from_path: 'src/x.go', path: 'src/z.go' })).toBe('deleted');
    expect(r({ kind: 'WATCH_EVENT_KIND_DIRECTORY', path: 'src' })).toBe('check');
    expect(r({ kind: 'WATCH_EVENT_KIND_RESYNC', reason: 'RESYNC_REASON_GAP' })).toBe('check');
    expect(fileReaction(open, 'GLOBAL:', { kind: 'WATCH_EVENT_KIND_REMOVED', path: 'src/x.go' }).kind).toBe('none');
  });
});

describe('lineDiff', () => {
  it('marks lines only in mine and only on disk', () => {
    expect(lineDiff('a\nb\nc', 'a\nB\nc')).toEqual([
      { op: ' ', text: 'a' },
      { op: '-', text: 'b' },
      { op: '+', text: 'B' },
      { op: ' ', text: 'c' },
    ]);
    expect(lineDiff('same', 'same')).toEqual([{ op: ' ', text: 'same' }]);
  });
});

describe('watch stream helpers', () => {
  it('backs off exponentially with a cap', () => {
    const mid = () => 0.5;
    expect(backoffDelay(0, mid)).toBe(500);
    expect(backoffDelay(3, mid)).toBe(4000);
    expect(backoffDelay(40, mid)).toBe(30000);
  });
  it('builds the SSE URL with repeated directories and the resume id', () => {
    expect(watchUrl('codex a', ws, ['', 'src'], '1-2')).toBe(
      '/api/v1/agent-gateway/agents/codex%20a/watch?workspace.scope=PROJECT&workspace.project_name=demo&directory=&directory=src&resume_after=1-2',
    );
    expect(watchUrl('a', { scope: 'GLOBAL' }, [''], '')).toBe('/api/v1/agent-gateway/agents/a/watch?workspace.scope=GLOBAL&directory=');
  });
});
