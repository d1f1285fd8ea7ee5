// The open file: what was loaded from the server, what the user typed, and
// the save/conflict state. Pure functions over a plain object so the rules
// (dirty tracking, Cancel, conflict keeps local text, no force save) are unit
// tested without a browser.
import { isConflict } from '../api/errors';
import type { Entry, GetFileResponse } from '../api/types';

export interface OpenFile {
  /** "PROJECT:demo" or "GLOBAL:" (see workspaceKey). */
  workspaceKey: string;
  path: string;
  entry: Entry;
  editable: boolean;
  /** The server text as last loaded or saved. */
  loadedText: string;
  /** The text in the editor. */
  text: string;
  /** Revision the next save is based on. */
  revision: string;
  /** True after a save failed with REVISION_MISMATCH, until reloaded. */
  conflict: boolean;
  saving: boolean;
}

export function openFile(workspaceKey: string, path: string, resp: GetFileResponse): OpenFile {
  const entry = resp.entry ?? {};
  const editable = entry.editable === true;
  const text = editable ? (resp.content ?? '') : '';
  return {
    workspaceKey,
    path,
    entry,
    editable,
    loadedText: text,
    text,
    revision: entry.revision ?? '',
    conflict: false,
    saving: false,
  };
}

export function isDirty(f: OpenFile | null | undefined): boolean {
  return !!f && f.editable && f.text !== f.loadedText;
}

export function edit(f: OpenFile, text: string): OpenFile {
  return { ...f, text };
}

/** Cancel: back to what was loaded from the server. */
export function cancel(f: OpenFile): OpenFile {
  return { ...f, text: f.loadedText };
}

/** Save is offered only for an editable, dirty file that is not in conflict (no force save). */
export function canSave(f: OpenFile | null | undefined): boolean {
  return !!f && f.editable && !f.saving && !f.conflict && isDirty(f);
}

export function saveStarted(f: OpenFile): OpenFile {
  return { ...f, saving: true };
}

/** savedText is what was sent; text typed meanwhile stays (and stays dirty). */
export function saveSucceeded(f: OpenFile, entry: Entry, savedText: string): OpenFile {
  return {
    ...f,
    entry,
    loadedText: savedText,
    revision: entry.revision ?? f.revision,
    conflict: false,
    saving: false,
  };
}

/** Returns the new state and whether err was a revision conflict. Local text is always kept. */
export function saveFailed(f: OpenFile, err: unknown): { file: OpenFile; conflict: boolean } {
  const conflict = isConflict(err);
  return { file: { ...f, saving: false, conflict: f.conflict || conflict }, conflict };
}

/** "Reload server version": replaces local text with the server's current file. */
export function reloaded(f: OpenFile, resp: GetFileResponse): OpenFile {
  return openFile(f.workspaceKey, f.path, resp);
}

/**
 * A merge of a refused save: the file is based on the version on disk now
 * (its text and revision: the next save carries that revision, never a blind
 * overwrite) and holds the merged text, to be saved.
 */
export function mergedOnto(f: OpenFile, disk: GetFileResponse, merged: string): OpenFile {
  return { ...openFile(f.workspaceKey, f.path, disk), text: merged };
}

/** A file deleted on disk, saved again as a new file: clean at the new revision. */
export function savedAsNew(f: OpenFile, entry: Entry, savedText: string): OpenFile {
  return saveSucceeded({ ...f, conflict: false }, entry, savedText);
}
