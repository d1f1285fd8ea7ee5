import { describe, expect, it } from 'vitest';
import { ApiError } from '../api/errors';
import { appendPage, emptyListing, hasMore, loadFirst, loadMore, type Page } from './paging';

const key = (s: string) => s;

/** A fake directory served in pages of 2; cursors name the offset and a generation. */
function fakeDir(items: string[]) {
  let gen = 1;
  const calls: string[] = [];
  return {
    calls,
    change(next: string[]) {
      items = next;
      gen++;
    },
    fetch: async (cursor: string): Promise<Page<string>> => {
      calls.push(cursor);
      let off = 0;
      if (cursor) {
        const [g, o] = cursor.split(':').map(Number);
        if (g !== gen)
          throw ApiError.from(409, {
            code: 10,
            message: 'stale',
            details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'CURSOR_STALE' }],
          });
        off = o!;
      }
      const next = off + 2 < items.length ? `${gen}:${off + 2}` : '';
      return { items: items.slice(off, off + 2), nextCursor: next };
    },
  };
}

describe('cursor paging', () => {
  it('appends pages to the current directory until the cursor is empty', async () => {
    const d = fakeDir(['a', 'b', 'c', 'd', 'e']);
    let l = await loadFirst(d.fetch);
    expect(l.items).toEqual(['a', 'b']);
    expect(hasMore(l)).toBe(true);
    l = (await loadMore(l, d.fetch, key)).listing;
    expect(l.items).toEqual(['a', 'b', 'c', 'd']);
    l = (await loadMore(l, d.fetch, key)).listing;
    expect(l.items).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(hasMore(l)).toBe(false);
    expect(d.calls).toEqual(['', '1:2', '1:4']);
  });

  it('recovers from a stale cursor by reloading from the first page', async () => {
    const d = fakeDir(['a', 'b', 'c', 'd']);
    const l = await loadFirst(d.fetch);
    d.change(['a', 'b2', 'c', 'd', 'x']);
    const r = await loadMore(l, d.fetch, key);
    expect(r.restarted).toBe(true);
    expect(r.listing.items).toEqual(['a', 'b2']);
    expect(r.listing.nextCursor).toBe('2:2');
    expect(d.calls).toEqual(['', '1:2', '']);
  });

  it('passes other errors through untouched', async () => {
    const l = { items: ['a'], nextCursor: 'c1', loaded: true };
    const boom = ApiError.from(503, { code: 14, message: 'down', details: [] });
    await expect(loadMore(l, async () => Promise.reject(boom), key)).rejects.toBe(boom);
  });

  it('does not duplicate items already listed', () => {
    const l = appendPage({ items: ['a', 'b'], nextCursor: 'x', loaded: true }, { items: ['b', 'c'], nextCursor: '' }, key);
    expect(l.items).toEqual(['a', 'b', 'c']);
  });

  it('an empty listing has no more pages', () => {
    expect(hasMore(emptyListing())).toBe(false);
  });
});
