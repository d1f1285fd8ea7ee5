// Pure helpers of the Checkpoints panel (features/checkpointPanel.ts): labels for
// reasons and change kinds, the parts of a comparison a restore of one
// path changes, and a unified diff split into classified lines.
import type { Checkpoint, CheckpointChange, CompareResponse, ListResponse } from '../api/checkpoints';

/** A listing of the checkpoints holding a file: what it holds and whether
 * the server searched only the newest candidates (it decodes a bounded
 * number of manifests), so that the panel never presents it as complete. */
export interface HoldingList {
  list: Checkpoint[];
  /** The note to show under the list; '' when every candidate was searched. */
  note: string;
  /** The notice when nothing listed holds the file. */
  none: string;
}

export function holdingList(r: ListResponse): HoldingList {
  const older = r.truncated === true;
  return {
    list: r.checkpoints ?? [],
    note: older ? 'Older checkpoints were not searched.' : '',
    none: older
      ? 'None of the newest checkpoints holds this file; older checkpoints were not searched.'
      : 'No checkpoint or version holds this file yet.',
  };
}

export function reasonLabel(c: Checkpoint): string {
  switch (c.reason) {
    case 'CHECKPOINT_REASON_BEFORE_RESTORE':
      return 'before a restore';
    case 'CHECKPOINT_REASON_BEFORE_PROJECT_DELETE':
      return 'before the project was deleted';
    case 'CHECKPOINT_REASON_BEFORE_DELETE':
      return 'before a folder was deleted';
    case 'CHECKPOINT_REASON_BEFORE_WEBDAV_WRITE':
      return 'version: before a WebDAV client replaced or removed it';
  }
  return '';
}

export function kindLabel(ch: CheckpointChange): string {
  switch (ch.kind) {
    case 'CHANGE_KIND_ADDED':
      return 'added';
    case 'CHANGE_KIND_REMOVED':
      return 'removed';
    case 'CHANGE_KIND_MODIFIED':
      return 'changed';
  }
  return '';
}

/** What a restore does to a change, in words. */
export function restoreEffect(ch: CheckpointChange): string {
  switch (ch.kind) {
    case 'CHANGE_KIND_ADDED':
      return 'removed';
    case 'CHANGE_KIND_REMOVED':
      return 'recreated';
  }
  return 'put back';
}

/** p is path or inside it ("" contains everything). */
export function within(p: string, path: string): boolean {
  return path === '' || p === path || p.startsWith(path + '/');
}

/** The changes a restore of path would make. */
export function changesUnder(changes: CheckpointChange[], path: string): CheckpointChange[] {
  return changes.filter((c) => within(c.path ?? '', path));
}

/** What the confirmation of a restore shows, from a fresh comparison of
 * exactly the path restored: the first max changes, how many there are in
 * all (total_changes: a truncated comparison lists fewer) and the plan
 * token the restore must send. */
export interface RestorePlan {
  shown: CheckpointChange[];
  total: number;
  more: number;
  token: string;
}

export function restorePlan(result: CompareResponse, max = 30): RestorePlan {
  const changes = result.changes ?? [];
  const total = Math.max(Number(result.total_changes ?? 0), changes.length);
  const shown = changes.slice(0, max);
  return { shown, total, more: total - shown.length, token: result.plan_token ?? '' };
}

export type DiffLineKind = 'add' | 'del' | 'hunk' | 'head' | 'ctx' | 'note';

export interface DiffLine {
  kind: DiffLineKind;
  text: string;
}

/** Splits a unified diff into lines for display (never evaluated as HTML). */
export function diffLines(diff: string): DiffLine[] {
  const out: DiffLine[] = [];
  const lines = diff.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  for (const l of lines) {
    let kind: DiffLineKind = 'ctx';
    if (l.startsWith('+++') || l.startsWith('---')) kind = 'head';
    else if (l.startsWith('@@')) kind = 'hunk';
    else if (l.startsWith('+')) kind = 'add';
    else if (l.startsWith('-')) kind = 'del';
    else if (l.startsWith('\\')) kind = 'note';
    out.push({ kind, text: l });
  }
  return out;
}

export function diffStateText(ch: CheckpointChange): string {
  switch (ch.diff_state) {
    case 'DIFF_STATE_NOT_TEXT':
      return 'Not a text file: no diff is shown.';
    case 'DIFF_STATE_TOO_LARGE':
      return 'Too large for a diff (a side above the editable limit, or the diff itself too long): no diff is shown.';
    case 'DIFF_STATE_OVER_BUDGET':
      return 'Too many changes to show every diff here: compare this file alone.';
    case 'DIFF_STATE_UNAVAILABLE':
      return ch.type === 'ENTRY_TYPE_DIRECTORY' ? 'A folder.' : 'Only the permissions changed, or a side cannot be read.';
  }
  return '';
}

export function modeText(m: number | undefined): string {
  return (m ?? 0).toString(8).padStart(4, '0');
}
