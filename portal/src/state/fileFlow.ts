// The open file's decisions that are not the editor's own rules
// (editorState.ts): which workspace it belongs to, what a draft in the
// browser's storage does when the file opens, what the tree must reload
// after a save, and when a refresh or Undo may replace the editor's text.
// Pure, so features/editor.ts only carries them out.
import type { GetFileResponse, WorkspaceRef } from '../api/types';
import { GLOBAL, project } from './appState';
import type { Draft } from './drafts';
import * as ed from './editorState';
import { parentOf } from './names';

/** The workspace of a workspaceKey ("GLOBAL:" or "PROJECT:<name>"; see tree.ts). */
export function workspaceOf(key: string): WorkspaceRef {
  return key === 'GLOBAL:' ? GLOBAL : project(key.slice('PROJECT:'.length));
}

/** What to do with the stored draft of the open file now. */
export type DraftStep = 'put' | 'remove' | 'none';

/** Unsaved text is stored; a clean editable file's draft is forgotten; a read-only one has none. */
export function draftStep(f: ed.OpenFile | null | undefined): DraftStep {
  if (!f || !f.editable) return 'none';
  return ed.isDirty(f) ? 'put' : 'remove';
}

export interface Opened {
  file: ed.OpenFile;
  /** The draft's text is in the editor now (on the revision it was typed on). */
  restored: boolean;
  /** The stored draft is no longer needed (it holds the server's text). */
  dropDraft: boolean;
  /** What to tell the user; '' for nothing. */
  notice: string;
}

/**
 * A file just opened (f, from the server) and its stored draft: text typed
 * before the session ended or the page closed comes back on the revision it
 * was typed on, so saving it takes the conflict path if the file changed since.
 */
export function openWithDraft(f: ed.OpenFile, draft: Draft | null): Opened {
  const d = f.editable ? draft : null;
  if (d && d.text !== f.loadedText) {
    const changed = d.baseRevision !== (f.entry.revision ?? '');
    return {
      file: { ...f, text: d.text, revision: d.baseRevision },
      restored: true,
      dropDraft: false,
      notice: changed
        ? `Your unsaved changes to ${f.path} were restored. The file was changed elsewhere since, so saving them shows the conflict.`
        : `Your unsaved changes to ${f.path} were restored.`,
    };
  }
  return { file: f, restored: false, dropDraft: !!d, notice: '' };
}

/**
 * Besides the saved file's own entry (patched from the save's answer), a save
 * changes the revision of the file's folder: these listings hold it (handed to
 * listingsToReload). A file at the top level has no listed folder.
 */
export function listingsAfterSave(path: string): string[] {
  const dir = parentOf(path);
  return dir === '' ? [] : [parentOf(dir)];
}

/**
 * An answer about file f still applies to the open file cur: the same path in
 * the same workspace (another project's file of the same path is not it).
 */
export function stillOpen(cur: ed.OpenFile | null | undefined, f: ed.OpenFile): cur is ed.OpenFile {
  return !!cur && cur.path === f.path && cur.workspaceKey === f.workspaceKey;
}

/**
 * The tree's Refresh read f again as r: the new version replaces the editor's
 * text only when the same file is still open, has no unsaved changes, and the
 * server's revision differs (unsaved text is never overwritten).
 */
export function refreshReplaces(cur: ed.OpenFile | null | undefined, f: ed.OpenFile, r: GetFileResponse): boolean {
  if (!cur || cur.path !== f.path || cur.workspaceKey !== f.workspaceKey || ed.isDirty(cur)) return false;
  return (r.entry?.revision ?? '') !== cur.revision;
}

/** The refreshed file is gone on the server: the editor closes it unless it holds unsaved text. */
export function closesWhenGone(cur: ed.OpenFile | null | undefined, f: ed.OpenFile): boolean {
  return stillOpen(cur, f) && !ed.isDirty(cur);
}

/** Undo of a Revert puts the reverted text back only on the same, still clean file (nothing typed since). */
export function undoRevertApplies(cur: ed.OpenFile | null | undefined, path: string): cur is ed.OpenFile {
  return !!cur && cur.path === path && !ed.isDirty(cur);
}
