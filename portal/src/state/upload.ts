// Uploads (docs/transfer.md), the pure part: the folders a folder upload
// needs first, the "Keep both" name, the files over the size limit, and the
// queue whose items' progress, outcome and Cancel the upload panel shows.
// The sending is features/upload.ts's; nothing here touches the network.
import { formatSize } from './format';
import { baseName, joinPath, parentOf } from './names';

/** A file to send: its path relative to the folder it is uploaded into ("src/a.go" for a folder's file). */
export interface UploadFile {
  readonly rel: string;
  readonly file: Blob;
}

/** What happens to a file whose name exists: replaced (a version kept), skipped, or sent under a free name. */
export type Choice = 'replace' | 'skip' | 'keep';

export type Status = 'waiting' | 'sending' | 'done' | 'skipped' | 'failed' | 'cancelled';

export interface QueueItem {
  readonly id: number;
  /** The target path in the workspace (Keep both renames it before sending). */
  path: string;
  readonly size: number;
  readonly file: Blob;
  sent: number;
  status: Status;
  /** Why it failed or was skipped; the name it got for Keep both. */
  message: string;
}

/** The folders (relative, parents first, each once) the files' paths and the extra (empty) folders need. */
export function foldersToCreate(files: readonly Pick<UploadFile, 'rel'>[], extra: readonly string[] = []): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  const add = (segs: string[], upto: number) => {
    for (let i = 1; i <= upto; i++) {
      const d = segs.slice(0, i).join('/');
      if (!seen.has(d)) {
        seen.add(d);
        out.push(d);
      }
    }
  };
  for (const f of files) {
    const segs = f.rel.split('/');
    add(segs, segs.length - 1);
  }
  for (const d of extra) add(d.split('/'), d.split('/').length);
  return out;
}

/** "name (n).ext" for Keep both: n counts from 1; a leading dot (".env") is not an extension. */
export function keepBothName(name: string, n: number): string {
  const dot = name.lastIndexOf('.');
  if (dot <= 0) return `${name} (${n})`;
  return `${name.slice(0, dot)} (${n})${name.slice(dot)}`;
}

/** The first "name (n).ext" (n = 1, 2, …) that taken does not hold. */
export function freeName(name: string, taken: (candidate: string) => boolean): string {
  for (let n = 1; ; n++) {
    const c = keepBothName(name, n);
    if (!taken(c)) return c;
  }
}

/** Why a file of size bytes is refused before sending, or null when limit (null: unknown) allows it. */
export function limitProblem(size: number, limit: number | null): string | null {
  if (limit === null || size <= limit) return null;
  return `${formatSize(size)} (${size.toLocaleString('en-US')} bytes) is over this agent's upload limit of ${limit.toLocaleString('en-US')} bytes (${formatSize(limit)}); nothing was sent.`;
}

/** Bytes sent of the total, as a percentage rounded down (100 for nothing to send). */
export function percent(sent: number, total: number): number {
  return total <= 0 ? 100 : Math.floor((Math.min(sent, total) * 100) / total);
}

/** The first of failed (folder → why it could not be made) that path lies in, with its message; null when none. */
export function failedFolder(path: string, failed: ReadonlyMap<string, string>): string | null {
  for (let d = parentOf(path); d !== ''; d = parentOf(d)) {
    const why = failed.get(d);
    if (why !== undefined) return `${baseName(d)}: ${why}`;
  }
  return null;
}

export interface Totals {
  /** Bytes sent of the files that are or will be sent. */
  readonly sent: number;
  readonly total: number;
  readonly active: number;
  readonly done: number;
  readonly skipped: number;
  readonly failed: number;
  readonly cancelled: number;
}

const FINISHED: ReadonlySet<Status> = new Set(['done', 'skipped', 'failed', 'cancelled']);

/** The upload panel's list: every file of the uploads since it was last cleared. */
export class UploadQueue {
  readonly items: QueueItem[] = [];
  #serial = 0;

  /** Queues files for dir; each starts waiting. */
  add(dir: string, files: readonly UploadFile[]): QueueItem[] {
    const added = files.map((f): QueueItem => ({ id: ++this.#serial, path: joinPath(dir, f.rel), size: f.file.size, file: f.file, sent: 0, status: 'waiting', message: '' }));
    this.items.push(...added);
    return added;
  }

  /** Records progress of a sending item (never backwards, never past its size). */
  progress(it: QueueItem, sent: number): void {
    if (it.status !== 'sending') return;
    it.sent = Math.max(it.sent, Math.min(sent, it.size));
  }

  /** Ends an item (a cancelled one stays cancelled whatever its request answers after). */
  finish(it: QueueItem, status: Exclude<Status, 'waiting' | 'sending'>, message = ''): void {
    if (FINISHED.has(it.status)) return;
    it.status = status;
    it.message = message;
    if (status === 'done') it.sent = it.size;
  }

  /** Cancels a waiting or sending item; false when it had finished (or sent every byte: its answer decides). */
  cancel(it: QueueItem): boolean {
    if (!this.cancellable(it)) return false;
    it.status = 'cancelled';
    it.message = 'Cancelled: nothing was written.';
    return true;
  }

  /** Whether Cancel still means "nothing is written": waiting, or sending with bytes left to send. */
  cancellable(it: QueueItem): boolean {
    return it.status === 'waiting' || (it.status === 'sending' && it.sent < it.size);
  }

  /** Cancels every cancellable item; returns them. */
  cancelAll(): QueueItem[] {
    return this.items.filter((it) => this.cancel(it));
  }

  /** Removes the finished items. */
  clearFinished(): void {
    const keep = this.items.filter((it) => !FINISHED.has(it.status));
    this.items.splice(0, this.items.length, ...keep);
  }

  get busy(): boolean {
    return this.items.some((it) => !FINISHED.has(it.status));
  }

  totals(): Totals {
    let sent = 0;
    let total = 0;
    const n = { active: 0, done: 0, skipped: 0, failed: 0, cancelled: 0 };
    for (const it of this.items) {
      if (it.status === 'waiting' || it.status === 'sending' || it.status === 'done') {
        total += it.size;
        sent += it.sent;
      }
      if (it.status === 'waiting' || it.status === 'sending') n.active++;
      else n[it.status]++;
    }
    return { sent, total, ...n };
  }
}
