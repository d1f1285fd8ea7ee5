// The rules of the tree's actions (create, rename, move, delete, Refresh):
// what may be done to an entry, where it may move, what happens to the open
// file when it or a folder above it moves or goes, and which folders a
// Refresh lists again. Pure, so features/treeActions.ts only carries them out.
import type { Entry } from '../api/types';
import type * as ed from './editorState';
import { baseName, isWithin, normaliseFolderPath } from './names';
import { isDir, knownDirectories, workspaceKey, type TreeState } from './tree';

/** SKILL.md of a new skill: the front matter Codex reads, and a place for the instructions. */
export function skillTemplate(name: string): string {
  return `---\nname: ${name}\ndescription: What this skill does and when the agent should use it.\n---\n\n# ${name}\n\nThe steps the agent follows when this skill applies.\n`;
}

export interface Allowed {
  create: boolean;
  rename: boolean;
  move: boolean;
  delete: boolean;
}

/** What may be done to an entry: Global's skills root and AGENTS.md are fixed in place. */
export function allowedActions(tree: TreeState, entry: Entry): Allowed {
  const path = entry.path ?? '';
  const global = tree.workspace.scope === 'GLOBAL';
  const skillsRoot = global && path === 'skills';
  const agentsMd = global && path === 'AGENTS.md';
  return {
    create: isDir(entry),
    rename: !skillsRoot && !agentsMd,
    move: !skillsRoot && !agentsMd,
    delete: !skillsRoot,
  };
}

/** The listed folders entry (in folder from) may move to: not where it is, not into itself; in Global only inside skills. */
export function moveCandidates(tree: TreeState, entry: Entry, from: string): string[] {
  const path = entry.path ?? '';
  const global = tree.workspace.scope === 'GLOBAL';
  return knownDirectories(tree).filter((d) => d !== from && !(isDir(entry) && isWithin(d, path)) && (!global || isWithin(d, 'skills')));
}

/** Why the typed destination folder v will not do for entry (in folder from); null when it will. */
export function moveProblem(v: string, tree: TreeState, entry: Entry, from: string): string | null {
  const path = entry.path ?? '';
  const global = tree.workspace.scope === 'GLOBAL';
  const n = normaliseFolderPath(v);
  if (n === null) return 'Enter a folder path like src/lib, without "." or ".." segments.';
  if (n === from) return 'That is where it already is.';
  if (isDir(entry) && isWithin(n, path)) return 'A folder cannot be moved into itself.';
  if (global && !isWithin(n, 'skills')) return 'In Global, choose a folder inside skills.';
  if (global && n === '') return 'In Global, choose a folder inside skills.';
  return null;
}

/** The open file f is path, or lies below the folder path, in tree's workspace. */
export function holdsOpenFile(f: ed.OpenFile | null | undefined, tree: TreeState, path: string): f is ed.OpenFile {
  return !!f && f.workspaceKey === workspaceKey(tree.workspace) && isWithin(f.path, path);
}

/**
 * The open file after source moved to destination (moved: the server's
 * answer): it keeps its unsaved text under its new path, and when it is the
 * moved file itself it takes the new revision, so a save right after the
 * move is not refused as "changed elsewhere". Unaffected files are returned as they are.
 */
export function fileAfterMove(
  f: ed.OpenFile | null,
  tree: TreeState,
  entry: Entry,
  source: string,
  destination: string,
  moved: Entry,
): ed.OpenFile | null {
  if (!holdsOpenFile(f, tree, source)) return f;
  const newPath = destination + f.path.slice(source.length);
  const out: ed.OpenFile = { ...f, path: newPath, entry: { ...f.entry, path: newPath, name: baseName(newPath) } };
  if (newPath === destination && !isDir(entry)) {
    out.revision = moved.revision ?? out.revision;
    out.entry = { ...out.entry, ...moved };
  }
  return out;
}

/** The folders the tree's Refresh lists again: the root and every expanded, loaded folder. */
export function refreshedDirs(tree: TreeState): string[] {
  return [...tree.dirs.entries()].filter(([k, d]) => k === '' || (d.expanded && d.listing.loaded)).map(([k]) => k);
}
