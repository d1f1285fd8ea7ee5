// Natural order for names shown in lists: digits compare as numbers
// (burst-1, burst-2, burst-10, burst-100), then case-insensitively, then by
// code point so that the order is total and stable.

const collator = new Intl.Collator('en', { numeric: true, sensitivity: 'base' });

export function naturalCompare(a: string, b: string): number {
  return collator.compare(a, b) || (a < b ? -1 : a > b ? 1 : 0);
}

/** A sorted copy of xs by key, in natural order. */
export function naturalSorted<T>(xs: readonly T[], key: (x: T) => string): T[] {
  return [...xs].sort((x, y) => naturalCompare(key(x), key(y)));
}
