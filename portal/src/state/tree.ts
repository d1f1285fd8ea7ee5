// The lazily expanded tree of one workspace: one listing per directory that
// has been opened, keyed by its path; flattened into visible rows for
// rendering and keyboard navigation.
import { naturalCompare } from './naturalSort';
import type { ApiError } from '../api/errors';
import type { Entry, WorkspaceRef } from '../api/types';
import { emptyListing, hasMore, type Listing } from './paging';

export interface DirState {
  listing: Listing<Entry>;
  expanded: boolean;
  loading: boolean;
  error: string | null;
}

export interface TreeState {
  workspace: WorkspaceRef;
  dirs: Map<string, DirState>;
  /** Row key that holds the roving tabindex. */
  focusKey: string;
  /** Why the root listing failed (kept to tell "unavailable" from other errors). */
  rootError: ApiError | null;
}

export function workspaceKey(ws: WorkspaceRef): string {
  return ws.scope === 'GLOBAL' ? 'GLOBAL:' : `PROJECT:${ws.project_name ?? ''}`;
}

export function newTree(workspace: WorkspaceRef): TreeState {
  const dirs = new Map<string, DirState>();
  dirs.set('', { listing: emptyListing(), expanded: true, loading: false, error: null });
  return { workspace, dirs, focusKey: '', rootError: null };
}

export function dirState(t: TreeState, path: string): DirState {
  let d = t.dirs.get(path);
  if (!d) {
    d = { listing: emptyListing(), expanded: false, loading: false, error: null };
    t.dirs.set(path, d);
  }
  return d;
}

export function isDir(e: Entry): boolean {
  return e.type === 'ENTRY_TYPE_DIRECTORY';
}

export type Row =
  | { kind: 'entry'; key: string; entry: Entry; level: number; parent: string }
  | { kind: 'more'; key: string; dir: string; level: number; parent: string }
  | { kind: 'status'; key: string; dir: string; level: number; text: string; error: boolean };

/** Visible rows, depth first; "more" rows where a directory has further pages. */
export function visibleRows(t: TreeState): Row[] {
  const rows: Row[] = [];
  const walk = (dir: string, level: number) => {
    const d = t.dirs.get(dir);
    if (!d) return;
    for (const e of sortedEntries(d.listing.items)) {
      const path = e.path ?? '';
      rows.push({ kind: 'entry', key: 'e:' + path, entry: e, level, parent: dir });
      if (isDir(e) && t.dirs.get(path)?.expanded) walk(path, level + 1);
    }
    if (d.loading) rows.push({ kind: 'status', key: 's:' + dir, dir, level, text: 'Loading…', error: false });
    else if (d.error) rows.push({ kind: 'status', key: 's:' + dir, dir, level, text: d.error, error: true });
    else if (hasMore(d.listing)) rows.push({ kind: 'more', key: 'm:' + dir, dir, level, parent: dir });
    else if (d.listing.loaded && d.listing.items.length === 0 && dir !== '')
      rows.push({ kind: 'status', key: 's:' + dir, dir, level, text: 'Empty folder', error: false });
  };
  walk('', 1);
  return rows;
}

/** Entries of every loaded directory (for the Move target list). */
export function knownDirectories(t: TreeState): string[] {
  const out = new Set<string>(['']);
  for (const d of t.dirs.values()) {
    for (const e of d.listing.items) if (isDir(e)) out.add(e.path ?? '');
  }
  return [...out].sort(naturalCompare);
}

/** Entries as shown: folders first, then names in natural order (burst-2 before burst-10). */
export function sortedEntries(items: readonly Entry[]): Entry[] {
  return [...items].sort((a, b) => Number(isDir(b)) - Number(isDir(a)) || naturalCompare(a.name ?? '', b.name ?? ''));
}

/** Forgets path and everything below it (after a move or delete). */
export function forget(t: TreeState, path: string): void {
  for (const k of [...t.dirs.keys()]) {
    if (k !== '' && (k === path || k.startsWith(path + '/'))) t.dirs.delete(k);
  }
}

/** Replaces the listed copy of entry (same path) with the server's newer one; false when it is not listed. */
export function patchEntry(t: TreeState, entry: Entry): boolean {
  const path = entry.path ?? '';
  const i = path.lastIndexOf('/');
  const d = t.dirs.get(i < 0 ? '' : path.slice(0, i));
  if (!d) return false;
  let found = false;
  const items = d.listing.items.map((e) => {
    if (e.path !== path) return e;
    found = true;
    return { ...e, ...entry };
  });
  if (found) d.listing = { ...d.listing, items };
  return found;
}

/**
 * The listings to reload after a mutation changed the entries of dirs: each
 * of those directories (their entries' revisions) and its parent (a
 * directory's own revision changes with its entries, and its parent lists
 * it). Only loaded listings, and the root, are reloaded.
 */
export function listingsToReload(t: TreeState, dirs: string[]): string[] {
  const out = new Set<string>();
  for (const d of dirs) {
    out.add(d);
    if (d !== '') {
      const i = d.lastIndexOf('/');
      out.add(i < 0 ? '' : d.slice(0, i));
    }
  }
  return [...out].filter((d) => d === '' || t.dirs.get(d)?.listing.loaded);
}
