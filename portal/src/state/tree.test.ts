import { describe, expect, it } from 'vitest';
import type { Entry } from '../api/types';
import { dirState, forget, knownDirectories, listingsToReload, newTree, patchEntry, visibleRows } from './tree';

const dir = (path: string): Entry => ({ path, name: path.split('/').pop(), type: 'ENTRY_TYPE_DIRECTORY' });
const file = (path: string): Entry => ({ path, name: path.split('/').pop(), type: 'ENTRY_TYPE_FILE', editable: true });

describe('tree', () => {
  it('shows only expanded directories, a "more" row where pages remain, and load states', () => {
    const t = newTree({ scope: 'PROJECT', project_name: 'demo' });
    dirState(t, '').listing = { items: [dir('src'), dir('docs'), file('README.md')], nextCursor: 'c', loaded: true };
    let rows = visibleRows(t);
    expect(rows.map((r) => r.key)).toEqual(['e:docs', 'e:src', 'e:README.md', 'm:']); // natural order, folders first
    const src = dirState(t, 'src');
    src.expanded = true;
    src.loading = true;
    rows = visibleRows(t);
    expect(rows.map((r) => r.key)).toEqual(['e:docs', 'e:src', 's:src', 'e:README.md', 'm:']);
    src.loading = false;
    src.listing = { items: [file('src/a.ts')], nextCursor: '', loaded: true };
    rows = visibleRows(t);
    expect(rows.slice(1, 3).map((r) => [r.key, r.level])).toEqual([
      ['e:src', 1],
      ['e:src/a.ts', 2],
    ]);
    dirState(t, 'docs').expanded = true;
    dirState(t, 'docs').listing = { items: [], nextCursor: '', loaded: true };
    expect(visibleRows(t).find((r) => r.key === 's:docs')).toMatchObject({ kind: 'status', text: 'Empty folder' });
  });

  it('lists known folders for Move and forgets a moved subtree', () => {
    const t = newTree({ scope: 'GLOBAL' });
    dirState(t, '').listing = { items: [dir('skills'), file('AGENTS.md')], nextCursor: '', loaded: true };
    dirState(t, 'skills').listing = { items: [dir('skills/review')], nextCursor: '', loaded: true };
    dirState(t, 'skills/review').listing = { items: [], nextCursor: '', loaded: true };
    expect(knownDirectories(t)).toEqual(['', 'skills', 'skills/review']);
    forget(t, 'skills');
    expect([...t.dirs.keys()]).toEqual(['']);
  });
});

describe('revisions after a mutation', () => {
  const file = (path: string, revision: string) => ({ path, name: path.split('/').pop(), type: 'ENTRY_TYPE_FILE' as const, revision });
  const dir = (path: string, revision: string) => ({ path, name: path.split('/').pop(), type: 'ENTRY_TYPE_DIRECTORY' as const, revision });

  it('patchEntry replaces the listed entry with the saved one', () => {
    const t = newTree({ scope: 'PROJECT', project_name: 'p' });
    dirState(t, '').listing = { items: [dir('src', 'd1')], nextCursor: '', loaded: true };
    dirState(t, 'src').listing = { items: [file('src/a.go', 'r1'), file('src/b.go', 'r1')], nextCursor: '', loaded: true };
    expect(patchEntry(t, file('src/a.go', 'r2'))).toBe(true);
    expect(t.dirs.get('src')!.listing.items.map((e) => e.revision)).toEqual(['r2', 'r1']);
    expect(patchEntry(t, file('other/x', 'r'))).toBe(false);
  });

  it('listingsToReload: the changed folder and the folder that lists it', () => {
    const t = newTree({ scope: 'PROJECT', project_name: 'p' });
    dirState(t, '').listing = { items: [], nextCursor: '', loaded: true };
    dirState(t, 'src').listing = { items: [], nextCursor: '', loaded: true };
    dirState(t, 'src/lib').listing = { items: [], nextCursor: '', loaded: true };
    dirState(t, 'docs'); // never listed
    expect(listingsToReload(t, ['src/lib']).sort()).toEqual(['src', 'src/lib']);
    expect(listingsToReload(t, ['src']).sort()).toEqual(['', 'src']);
    expect(listingsToReload(t, ['']).sort()).toEqual(['']);
    expect(listingsToReload(t, ['docs', 'src/lib']).sort()).toEqual(['', 'src', 'src/lib']);
  });
});
