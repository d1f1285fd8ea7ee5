// The upload flow against a fake server (the REST rules of docs/transfer.md:
// create only, replace keeping a version or by revision, a missing parent
// refused, a denylisted name refused): folders made first and a refused one
// failing only its files, Replace's fallback without checkpoints, Keep both
// taking the next name when one is taken meanwhile, Skip for all, the limit,
// and Cancel of a PUT in flight. The browser's side (pickers, drops, the
// dialog, XMLHttpRequest) is e2e/29-upload.spec.ts's.
import { describe, expect, it } from 'vitest';
import { ApiError } from '../api/errors';
import type { PutHandle } from '../api/upload';
import type { Entry, WorkspaceRef } from '../api/types';
import { AgentScope } from '../state/scope';
import { newTree } from '../state/tree';
import type { Picked } from '../ui/fileDrop';
import { Upload, type Answer, type UploadContext, type UploadIO } from './upload';

const WS: WorkspaceRef = { scope: 'PROJECT', project_name: 'demo' };

/** The volume as the fake server keeps it: folders, and files with their text and revision. */
class FakeServer {
  dirs = new Set<string>(['']);
  files = new Map<string, { text: string; rev: number }>();
  versions: string[] = [];
  checkpoints = true;
  puts: string[] = [];
  /** Runs before a PUT is answered (a race: someone creates a name meanwhile). */
  beforePut: ((path: string) => void) | null = null;
  /** Holds PUTs of these paths until released. */
  hold = new Set<string>();
  held: (() => void)[] = [];
  #rev = 1;

  write(path: string, text: string): void {
    this.files.set(path, { text, rev: this.#rev++ });
  }

  entries(dir: string): Entry[] {
    const under = (p: string) => (dir === '' ? !p.includes('/') : p.startsWith(dir + '/') && !p.slice(dir.length + 1).includes('/'));
    const name = (p: string) => p.slice(p.lastIndexOf('/') + 1);
    return [
      ...[...this.dirs].filter((d) => d !== '' && under(d)).map((d): Entry => ({ name: name(d), path: d, type: 'ENTRY_TYPE_DIRECTORY' })),
      ...[...this.files].filter(([p]) => under(p)).map(([p, f]): Entry => ({ name: name(p), path: p, type: 'ENTRY_TYPE_FILE', revision: String(f.rev) })),
    ];
  }

  async answer(url: string, text: string): Promise<ApiError | null> {
    const q = new URL(url, 'http://x').searchParams;
    const path = q.get('path') ?? '';
    const parent = path.includes('/') ? path.slice(0, path.lastIndexOf('/')) : '';
    this.puts.push(`${q.get('if_exists')}${q.get('expected_revision') ? '@' + q.get('expected_revision') : ''} ${path}`);
    this.beforePut?.(path);
    const cur = this.files.get(path);
    if (!this.dirs.has(parent)) return new ApiError(404, 5, 'NOT_FOUND', `"${parent}" not found`);
    if (q.get('if_exists') === 'fail') {
      if (cur) return new ApiError(409, 10, 'REVISION_MISMATCH', 'exists');
    } else if (q.get('expected_revision')) {
      if (!cur || String(cur.rev) !== q.get('expected_revision')) return new ApiError(409, 10, 'REVISION_MISMATCH', 'stale');
    } else if (!this.checkpoints) {
      return new ApiError(428, 9, 'PRECONDITION_REQUIRED', 'send If-Match');
    } else if (cur) this.versions.push(`${path}:${cur.text}`);
    this.write(path, text);
    return null;
  }
}

function setUp(server: FakeServer, answers: Answer[] = [], limit: number | null = 1000) {
  const scope = new AgentScope('codex-a', 1, {});
  const asked: string[] = [];
  const notices: string[] = [];
  const reloaded: string[] = [];
  const aborted: string[] = [];
  const c = {
    state: { scopes: { current: scope }, session: { csrf_token: 'tok' } },
    api: {
      createEntry: async (_a: string, _ws: WorkspaceRef, parent: string, name: string) => {
        const p = parent === '' ? name : `${parent}/${name}`;
        if (name === 'node_modules') throw new ApiError(403, 7, 'DENYLISTED', '"node_modules" is on the denylist');
        if (server.dirs.has(p)) throw new ApiError(409, 6, 'ALREADY_EXISTS', 'exists');
        if (!server.dirs.has(parent)) throw new ApiError(404, 5, 'NOT_FOUND', 'no parent');
        server.dirs.add(p);
        return { path: p };
      },
      listEntries: async (_a: string, _ws: WorkspaceRef, dir: string) => {
        if (!server.dirs.has(dir)) throw new ApiError(404, 5, 'NOT_FOUND', 'no such folder');
        return { entries: server.entries(dir), next_cursor: '' };
      },
    },
    update: () => {},
    notify: (_k: string, t: string) => notices.push(t),
    tree: { reloadDir: async (_s: unknown, _t: unknown, d: string) => void reloaded.push(d) },
    projects: { refreshUsage: async () => void reloaded.push('(usage)') },
  } as unknown as UploadContext;
  const io: UploadIO = {
    limit: async () => limit,
    ask: async (path) => {
      asked.push(path);
      return answers.shift() ?? null;
    },
    put: (url, body, csrf, onProgress): PutHandle => {
      expect(csrf).toBe('tok');
      let abort = () => {};
      const done = (async () => {
        const text = await body.text();
        onProgress(Math.floor(body.size / 2));
        const path = new URL(url, 'http://x').searchParams.get('path') ?? '';
        if (server.hold.has(path)) {
          const cancelled = await new Promise<boolean>((resolve) => {
            server.held.push(() => resolve(false));
            abort = () => {
              aborted.push(path);
              resolve(true);
            };
          });
          if (cancelled) return new ApiError(0, 1, 'CANCELLED', 'cancelled');
        }
        return server.answer(url, text);
      })();
      return { done, abort: () => abort() };
    },
  };
  return { up: new Upload(c, io), tree: newTree(WS), asked, notices, reloaded, aborted };
}

const files = (...specs: [string, string][]): Picked => ({ files: specs.map(([rel, text]) => ({ rel, file: new Blob([text]) })), folders: [] });
const statuses = (up: Upload) => Object.fromEntries(up.queue.items.map((it) => [it.path, it.status]));

describe('upload flow', () => {
  it('makes the folders first; a refused folder fails only its files, with the server reason', async () => {
    const server = new FakeServer();
    const t = setUp(server);
    await t.up.upload(t.tree, '', { ...files(['top/a.txt', 'A'], ['top/node_modules/m/i.js', 'denied'], ['top/sub/b.txt', 'B']), folders: ['top/empty'] });
    expect(statuses(t.up)).toEqual({ 'top/a.txt': 'done', 'top/node_modules/m/i.js': 'failed', 'top/sub/b.txt': 'done' });
    expect(t.up.queue.items[1]!.message).toBe('node_modules: "node_modules" is on the denylist.');
    expect([...server.dirs].sort()).toEqual(['', 'top', 'top/empty', 'top/sub']);
    expect(server.files.get('top/sub/b.txt')?.text).toBe('B');
    expect(server.puts.every((p) => p.startsWith('fail '))).toBe(true);
    expect(t.reloaded).toContain('');
    expect(t.reloaded, 'the project sizes reloaded after the upload').toContain('(usage)');
    expect(t.notices.at(-1)).toContain('2 files uploaded, 1 file not uploaded: top/node_modules/m/i.js: node_modules:');
  });

  it('Replace keeps a version; without checkpoints it replaces the revision it listed and says no version was kept', async () => {
    const server = new FakeServer();
    server.write('x.txt', 'old');
    const t = setUp(server, [{ choice: 'replace', forAll: false }]);
    await t.up.upload(t.tree, '', files(['x.txt', 'new']));
    expect([server.files.get('x.txt')?.text, server.versions]).toEqual(['new', ['x.txt:old']]);
    expect(t.asked).toEqual(['x.txt']);

    server.checkpoints = false;
    const rev = server.files.get('x.txt')!.rev;
    const t2 = setUp(server, [{ choice: 'replace', forAll: false }]);
    await t2.up.upload(t2.tree, '', files(['x.txt', 'newer']));
    expect(server.puts.slice(-2)).toEqual(['replace x.txt', `replace@${rev} x.txt`]);
    expect(server.files.get('x.txt')?.text).toBe('newer');
    expect(t2.up.queue.items[0]!.message).toContain('no version was kept');
  });

  it('Keep both sends the first free name create-only, and the next one when it is taken meanwhile', async () => {
    const server = new FakeServer();
    server.write('x.txt', 'old');
    server.beforePut = (p) => {
      if (p === 'x (1).txt' && !server.files.has(p)) server.write(p, 'someone else');
    };
    const t = setUp(server, [{ choice: 'keep', forAll: false }]);
    await t.up.upload(t.tree, '', files(['x.txt', 'mine']));
    expect(server.puts).toEqual(['fail x (1).txt', 'fail x (2).txt']);
    expect([server.files.get('x.txt')?.text, server.files.get('x (1).txt')?.text, server.files.get('x (2).txt')?.text]).toEqual(['old', 'someone else', 'mine']);
    expect(t.up.queue.items[0]).toMatchObject({ path: 'x (2).txt', status: 'done' });
  });

  it('Skip for all asks once and sends nothing of the names that exist', async () => {
    const server = new FakeServer();
    server.write('a.txt', 'A0');
    server.write('b.txt', 'B0');
    const t = setUp(server, [{ choice: 'skip', forAll: true }]);
    await t.up.upload(t.tree, '', files(['a.txt', 'A1'], ['b.txt', 'B1'], ['c.txt', 'C1']));
    expect(t.asked).toEqual(['a.txt']);
    expect(statuses(t.up)).toEqual({ 'a.txt': 'skipped', 'b.txt': 'skipped', 'c.txt': 'done' });
    expect(server.puts).toEqual(['fail c.txt']);
    expect([server.files.get('a.txt')?.text, server.files.get('b.txt')?.text]).toEqual(['A0', 'B0']);
  });

  it('Cancel upload in the dialog sends nothing; a name created meanwhile is refused, not overwritten', async () => {
    const server = new FakeServer();
    server.write('a.txt', 'A0');
    const t = setUp(server, [null]);
    await t.up.upload(t.tree, '', files(['a.txt', 'A1'], ['b.txt', 'B1']));
    expect(statuses(t.up)).toEqual({ 'a.txt': 'cancelled', 'b.txt': 'cancelled' });
    expect(server.puts).toEqual([]);

    server.beforePut = (p) => server.write(p, 'theirs');
    const t2 = setUp(server);
    await t2.up.upload(t2.tree, '', files(['c.txt', 'mine']));
    expect(server.files.get('c.txt')?.text).toBe('theirs');
    expect(t2.up.queue.items[0]!.message).toContain('created meanwhile; nothing was overwritten');
  });

  it('refuses a file over the limit before sending it, naming the limit', async () => {
    const server = new FakeServer();
    const t = setUp(server, [], 4);
    await t.up.upload(t.tree, '', files(['big.bin', '12345'], ['ok.bin', '1234']));
    expect(statuses(t.up)).toEqual({ 'big.bin': 'failed', 'ok.bin': 'done' });
    expect(t.up.queue.items[0]!.message).toContain('limit of 4 bytes');
    expect(server.puts).toEqual(['fail ok.bin']);
  });

  it('Cancel aborts a PUT in flight; nothing is written and the others go on', async () => {
    const server = new FakeServer();
    server.hold.add('slow.bin');
    const t = setUp(server);
    const run = t.up.upload(t.tree, '', files(['slow.bin', 'abcdef'], ['quick.bin', 'q']));
    await expect.poll(() => t.up.queue.items[0]?.sent).toBe(3);
    t.up.cancel(t.up.queue.items[0]!.id);
    await run;
    expect(t.aborted).toEqual(['slow.bin']);
    expect(statuses(t.up)).toEqual({ 'slow.bin': 'cancelled', 'quick.bin': 'done' });
    expect(server.files.has('slow.bin')).toBe(false);
    expect(t.up.queue.busy).toBe(false);
  });
});
