// Cursor paging for lazily listed directories and the project list. A page is
// appended to what is already listed; when the server says the cursor went
// stale (the directory changed), the listing restarts from the first page.
import { isStaleCursor } from '../api/errors';

export interface Page<T> {
  items: T[];
  /** Empty on the last page. */
  nextCursor: string;
}

export interface Listing<T> {
  items: T[];
  nextCursor: string;
  /** True once the first page arrived. */
  loaded: boolean;
}

export type PageFetcher<T> = (cursor: string) => Promise<Page<T>>;

export function emptyListing<T>(): Listing<T> {
  return { items: [], nextCursor: '', loaded: false };
}

export function hasMore<T>(l: Listing<T>): boolean {
  return l.loaded && l.nextCursor !== '';
}

/** Appends page to l, dropping items already listed (same key). */
export function appendPage<T>(l: Listing<T>, page: Page<T>, key: (t: T) => string): Listing<T> {
  const seen = new Set(l.items.map(key));
  const fresh = page.items.filter((t) => !seen.has(key(t)));
  return { items: [...l.items, ...fresh], nextCursor: page.nextCursor, loaded: true };
}

export interface PageResult<T> {
  listing: Listing<T>;
  /** True when a stale cursor made the listing restart from the first page. */
  restarted: boolean;
}

/** Loads the first page, replacing whatever was listed. */
export async function loadFirst<T>(fetchPage: PageFetcher<T>): Promise<Listing<T>> {
  const page = await fetchPage('');
  return { items: page.items, nextCursor: page.nextCursor, loaded: true };
}

/**
 * Loads the page after l. On a stale cursor it reloads from the first page
 * (PRD §7.5: "the client refreshes from the first page"); other errors throw.
 */
export async function loadMore<T>(
  l: Listing<T>,
  fetchPage: PageFetcher<T>,
  key: (t: T) => string,
): Promise<PageResult<T>> {
  if (!l.loaded || l.nextCursor === '') {
    return { listing: await loadFirst(fetchPage), restarted: false };
  }
  try {
    const page = await fetchPage(l.nextCursor);
    return { listing: appendPage(l, page, key), restarted: false };
  } catch (err) {
    if (!isStaleCursor(err)) throw err;
    return { listing: await loadFirst(fetchPage), restarted: true };
  }
}
