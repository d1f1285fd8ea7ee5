import { describe, expect, it } from 'vitest';
import { failedFolder, foldersToCreate, freeName, keepBothName, limitProblem, percent, UploadQueue } from './upload';

const blob = (n: number) => new Blob([new Uint8Array(n)]);

describe('keep both names', () => {
  it.each([
    ['x.txt', 1, 'x (1).txt'],
    ['x.txt', 2, 'x (2).txt'],
    ['archive.tar.gz', 1, 'archive.tar (1).gz'],
    ['Makefile', 1, 'Makefile (1)'],
    ['.env', 1, '.env (1)'],
    ['a.', 3, 'a (3).'],
  ])('%s, %i → %s', (name, n, want) => expect(keepBothName(name, n)).toBe(want));

  it('takes the first name not taken', () => {
    const taken = new Set(['x.txt', 'x (1).txt', 'x (2).txt', 'x (4).txt']);
    expect(freeName('x.txt', (c) => taken.has(c))).toBe('x (3).txt');
    expect(freeName('y.txt', (c) => taken.has(c))).toBe('y (1).txt');
  });
});

describe('folders of an upload', () => {
  it('lists each parent once, parents first, with the empty folders seen', () => {
    const files = [{ rel: 'top/a.txt' }, { rel: 'top/sub/deep/b.txt' }, { rel: 'top/sub/c.txt' }, { rel: 'loose.txt' }];
    expect(foldersToCreate(files, ['top/empty', 'top'])).toEqual(['top', 'top/sub', 'top/sub/deep', 'top/empty']);
    expect(foldersToCreate([{ rel: 'x.bin' }])).toEqual([]);
  });

  it('finds the refused folder a file lies in', () => {
    const failed = new Map([['up/top/node_modules', 'denied']]);
    expect(failedFolder('up/top/node_modules/m/i.js', failed)).toBe('node_modules: denied');
    expect(failedFolder('up/top/a.txt', failed)).toBeNull();
    expect(failedFolder('node_modules', failed)).toBeNull();
  });
});

describe('the size limit', () => {
  it('refuses above it with the number, not at it, and not when unknown', () => {
    expect(limitProblem(1000, 1000)).toBeNull();
    expect(limitProblem(1 << 40, null)).toBeNull();
    const msg = limitProblem(104857601, 104857600) ?? '';
    expect(msg).toContain('104,857,600 bytes');
    expect(msg).toContain('100 MiB');
    expect(msg).toContain('nothing was sent');
  });

  it('percent rounds down and caps', () => {
    expect(percent(0, 0)).toBe(100);
    expect(percent(1, 3)).toBe(33);
    expect(percent(5, 3)).toBe(100);
  });
});

describe('the upload queue', () => {
  it('queues files under the folder, counts progress and totals', () => {
    const q = new UploadQueue();
    const [a, b, c] = q.add('dst', [
      { rel: 'a.txt', file: blob(100) },
      { rel: 'sub/b.txt', file: blob(300) },
      { rel: 'c.txt', file: blob(600) },
    ]);
    expect([a!.path, b!.path, c!.path]).toEqual(['dst/a.txt', 'dst/sub/b.txt', 'dst/c.txt']);
    expect(q.totals()).toMatchObject({ sent: 0, total: 1000, active: 3 });
    q.progress(a!, 50); // not sending yet: ignored
    expect(a!.sent).toBe(0);
    a!.status = 'sending';
    q.progress(a!, 50);
    q.progress(a!, 20); // never backwards
    q.progress(a!, 500); // never past the size
    expect(a!.sent).toBe(100);
    q.finish(a!, 'done');
    q.finish(c!, 'skipped', 'exists');
    expect(q.totals()).toMatchObject({ sent: 100, total: 400, active: 1, done: 1, skipped: 1 });
    expect(q.busy).toBe(true);
  });

  it('cancels waiting and half-sent files, not finished or fully sent ones', () => {
    const q = new UploadQueue();
    const [w, s, full, done] = q.add('', [1, 2, 3, 4].map((n) => ({ rel: `f${n}`, file: blob(10) })));
    s!.status = 'sending';
    s!.sent = 4;
    full!.status = 'sending';
    full!.sent = 10; // every byte sent: the answer decides whether it was written
    q.finish(done!, 'done');
    expect(q.cancelAll().map((it) => it.path)).toEqual(['f1', 'f2']);
    expect([w!.status, s!.status, full!.status, done!.status]).toEqual(['cancelled', 'cancelled', 'sending', 'done']);
    expect(q.cancel(w!)).toBe(false);
    q.finish(s!, 'done'); // its aborted request answering late does not undo the cancel
    expect(s!.status).toBe('cancelled');
    expect(q.totals()).toMatchObject({ total: 20, cancelled: 2, done: 1, active: 1 });
  });

  it('clears the finished files and keeps the others', () => {
    const q = new UploadQueue();
    const [a, b] = q.add('', [{ rel: 'a', file: blob(1) }, { rel: 'b', file: blob(1) }]);
    q.finish(a!, 'failed', 'no');
    q.clearFinished();
    expect(q.items).toEqual([b]);
    q.finish(b!, 'done');
    expect(q.busy).toBe(false);
  });
});
