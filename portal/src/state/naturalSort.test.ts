import { describe, expect, it } from 'vitest';
import { naturalCompare, naturalSorted } from './naturalSort';

describe('naturalCompare', () => {
  it('orders numbers by value', () => {
    expect(['burst-100', 'burst-10', 'burst-2', 'burst-1'].sort(naturalCompare)).toEqual(['burst-1', 'burst-2', 'burst-10', 'burst-100']);
  });
  it('ignores case first, then stays total', () => {
    expect(['b', 'B', 'a', 'A'].sort(naturalCompare)).toEqual(['A', 'a', 'B', 'b']);
    expect(naturalCompare('x', 'x')).toBe(0);
  });
  it('sorts by a key without changing the input', () => {
    const xs = [{ n: 'f10' }, { n: 'f9' }];
    expect(naturalSorted(xs, (x) => x.n).map((x) => x.n)).toEqual(['f9', 'f10']);
    expect(xs[0]?.n).toBe('f10');
  });
});

describe('tree order', async () => {
  const { sortedEntries } = await import('./tree');
  it('lists folders first, then names naturally', () => {
    const e = (name: string, dir = false) => ({ name, path: name, type: dir ? ('ENTRY_TYPE_DIRECTORY' as const) : ('ENTRY_TYPE_FILE' as const) });
    const got = sortedEntries([e('burst-100'), e('burst-10'), e('z', true), e('burst-1'), e('a', true)]).map((x) => x.name);
    expect(got).toEqual(['a', 'z', 'burst-1', 'burst-10', 'burst-100']);
  });
});
