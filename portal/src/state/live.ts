// Live changes applied to the page's state (pure, unit tested): a watch
// event updates the tree in place (new, gone, renamed entries, refreshed
// revisions) and says what the open file should do.
import type { WatchEvent } from '../api/watch';
import type { Entry } from '../api/types';
import type * as ed from './editorState';
import { hasMore } from './paging';
import { isDir, type TreeState } from './tree';

const parentOf = (p: string) => {
  const i = p.lastIndexOf('/');
  return i < 0 ? '' : p.slice(0, i);
};

/** Listing order, as the server lists: directories first, then by name (byte order). */
export function entryLess(a: Entry, b: Entry): number {
  const da = isDir(a);
  if (da !== isDir(b)) return da ? -1 : 1;
  const x = a.name ?? '';
  const y = b.name ?? '';
  return x < y ? -1 : x > y ? 1 : 0;
}

function removeFrom(t: TreeState, path: string): boolean {
  const d = t.dirs.get(parentOf(path));
  if (!d) return false;
  const items = d.listing.items.filter((e) => e.path !== path);
  if (items.length === d.listing.items.length) return false;
  d.listing = { ...d.listing, items };
  for (const k of [...t.dirs.keys()]) if (k !== '' && (k === path || k.startsWith(path + '/'))) t.dirs.delete(k);
  return true;
}

/** Puts entry into its parent's listing (replacing one of the same path). */
function upsert(t: TreeState, entry: Entry): boolean {
  const path = entry.path ?? '';
  // The workspace root's own new revision: no listing shows the root.
  if (path === '') return false;
  const d = t.dirs.get(parentOf(path));
  if (!d || !d.listing.loaded) return false;
  const i = d.listing.items.findIndex((e) => e.path === path);
  if (i >= 0) {
    const items = d.listing.items.slice();
    items[i] = { ...items[i], ...entry };
    d.listing = { ...d.listing, items };
    return true;
  }
  const items = d.listing.items.slice();
  let at = items.findIndex((e) => entryLess(entry, e) < 0);
  if (at < 0) {
    // After the last loaded entry: only when the listing is complete (a
    // later page would bring it otherwise).
    if (hasMore(d.listing)) return false;
    at = items.length;
  }
  items.splice(at, 0, entry);
  d.listing = { ...d.listing, items };
  return true;
}

/** What applying an event to a tree needs done besides the in-place change. */
export interface TreeEffect {
  /** Listings to load again. */
  reload: string[];
  /** Everything shown may be stale (reload every listing, check the open file). */
  resyncAll: boolean;
  /** Directories that are not live (over a cap). */
  notLive: string[];
}

export function applyToTree(t: TreeState, ev: WatchEvent): TreeEffect {
  const out: TreeEffect = { reload: [], resyncAll: false, notLive: [] };
  const path = ev.path ?? '';
  switch (ev.kind) {
    case 'WATCH_EVENT_KIND_CREATED':
    case 'WATCH_EVENT_KIND_MODIFIED':
      if (ev.entry) upsert(t, { ...ev.entry, path, name: ev.entry.name ?? path.slice(path.lastIndexOf('/') + 1) });
      break;
    case 'WATCH_EVENT_KIND_REMOVED':
      removeFrom(t, path);
      break;
    case 'WATCH_EVENT_KIND_RENAMED': {
      const from = ev.from_path ?? '';
      const wasExpanded = t.dirs.get(from)?.expanded;
      removeFrom(t, from);
      if (ev.entry) upsert(t, { ...ev.entry, path });
      if (wasExpanded && ev.entry && isDir(ev.entry)) out.reload.push(path);
      break;
    }
    case 'WATCH_EVENT_KIND_DIRECTORY':
      out.reload.push(path);
      break;
    case 'WATCH_EVENT_KIND_RESYNC': {
      const dirs = ev.directories ?? [];
      if (ev.reason === 'RESYNC_REASON_LIMIT') {
        out.notLive.push(...dirs);
      } else if (ev.reason === 'RESYNC_REASON_GONE') {
        // The folder went away or was replaced: its parent's listing says
        // how, and it is no longer asked for (no resubscribe loop).
        for (const d of dirs) {
          out.reload.push(d === '' ? '' : parentOf(d));
          if (d !== '') for (const k of [...t.dirs.keys()]) if (k === d || k.startsWith(d + '/')) t.dirs.delete(k);
        }
      } else if (dirs.length) out.reload.push(...dirs);
      else out.resyncAll = true;
      break;
    }
  }
  out.reload = [...new Set(out.reload)].filter((d) => d === '' || t.dirs.has(d));
  return out;
}

/** The directories a tree wants live: the root and every expanded, listed folder. */
export function watchedDirs(t: TreeState): string[] {
  const out: string[] = [];
  for (const [k, d] of t.dirs) if (k === '' || (d.expanded && d.listing.loaded)) out.push(k);
  return out.sort();
}

/** What the open file does about an event. */
export type FileReaction =
  | { kind: 'none' }
  /** Changed on disk: load it again (clean) or show the bar (dirty). */
  | { kind: 'changed'; revision: string }
  | { kind: 'deleted' }
  /** May have changed: fetch it and compare revisions. */
  | { kind: 'check' };

export function fileReaction(f: ed.OpenFile | null, wsKey: string, ev: WatchEvent): FileReaction {
  if (!f || f.workspaceKey !== wsKey) return { kind: 'none' };
  const path = ev.path ?? '';
  const under = (dir: string) => dir === '' || f.path === dir || f.path.startsWith(dir + '/');
  switch (ev.kind) {
    case 'WATCH_EVENT_KIND_CREATED':
    case 'WATCH_EVENT_KIND_MODIFIED': {
      if (path !== f.path) return { kind: 'none' };
      const rev = ev.entry?.revision ?? '';
      return rev && rev !== f.revision ? { kind: 'changed', revision: rev } : { kind: 'none' };
    }
    case 'WATCH_EVENT_KIND_REMOVED':
      return under(path) && path !== '' ? { kind: 'deleted' } : { kind: 'none' };
    case 'WATCH_EVENT_KIND_RENAMED':
      if (path === f.path) {
        const rev = ev.entry?.revision ?? '';
        return rev && rev !== f.revision ? { kind: 'changed', revision: rev } : { kind: 'none' };
      }
      return under(ev.from_path ?? '') ? { kind: 'deleted' } : { kind: 'none' };
    case 'WATCH_EVENT_KIND_DIRECTORY':
      return parentOf(f.path) === path ? { kind: 'check' } : { kind: 'none' };
    case 'WATCH_EVENT_KIND_RESYNC': {
      const dirs = ev.directories ?? [];
      return dirs.length === 0 || dirs.some((d) => under(d)) ? { kind: 'check' } : { kind: 'none' };
    }
  }
  return { kind: 'none' };
}

/** One line of a comparison: kept, only on disk (+), only in yours (-). */
export interface DiffLine {
  op: ' ' | '+' | '-';
  text: string;
}

/**
 * A line diff of mine against disk (LCS). Above maxCells of work it gives
 * up and shows both wholesale (mine removed, disk added).
 */
export function lineDiff(mine: string, disk: string, maxCells = 4_000_000): DiffLine[] {
  const a = mine.split('\n');
  const b = disk.split('\n');
  let p = 0;
  while (p < a.length && p < b.length && a[p] === b[p]) p++;
  let s = 0;
  while (s < a.length - p && s < b.length - p && a[a.length - 1 - s] === b[b.length - 1 - s]) s++;
  const A = a.slice(p, a.length - s);
  const B = b.slice(p, b.length - s);
  const head: DiffLine[] = a.slice(0, p).map((text) => ({ op: ' ', text }));
  const tail: DiffLine[] = a.slice(a.length - s).map((text) => ({ op: ' ', text }));
  if (A.length * B.length > maxCells) {
    return [...head, ...A.map((text) => ({ op: '-' as const, text })), ...B.map((text) => ({ op: '+' as const, text })), ...tail];
  }
  const n = A.length;
  const m = B.length;
  const L = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--) L[i]![j] = A[i] === B[j] ? L[i + 1]![j + 1]! + 1 : Math.max(L[i + 1]![j]!, L[i]![j + 1]!);
  const mid: DiffLine[] = [];
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (A[i] === B[j]) {
      mid.push({ op: ' ', text: A[i]! });
      i++;
      j++;
    } else if (L[i + 1]![j]! >= L[i]![j + 1]!) mid.push({ op: '-', text: A[i++]! });
    else mid.push({ op: '+', text: B[j++]! });
  }
  while (i < n) mid.push({ op: '-', text: A[i++]! });
  while (j < m) mid.push({ op: '+', text: B[j++]! });
  return [...head, ...mid, ...tail];
}
