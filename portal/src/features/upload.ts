// Upload: files and folders into a folder of the shown workspace, from the
// pickers (the tree's Upload menu, a folder's menu) or dropped on the tree.
// In order: the files over the agent's upload limit are refused before
// anything is sent (the route's OPTIONS, X-Max-Upload-Size); a folder's
// folders are made first (the upload route needs its parent; a refused
// folder fails the files in it with the server's reason); names that exist
// are asked about (Replace, kept as a version when checkpoints are on;
// Skip; Keep both, "name (1).ext" chosen on a fresh listing and sent as
// create-only, so a race is refused, never overwritten); then the files are
// sent, a few at once, each with its progress and Cancel (an aborted PUT
// commits nothing: the sidecar streams into a temp file). Afterwards the
// folders shown are reloaded. The queue's rules are in state/upload.ts.
import { html, nothing, type TemplateResult } from 'lit-html';
import { asApiError, describeError, sanitize, type ApiError } from '../api/errors';
import type { Entry, WorkspaceRef } from '../api/types';
import { putFile, uploadLimit, uploadUrl, type IfExists, type PutHandle } from '../api/upload';
import type { AgentState } from '../state/appState';
import { formatSize } from '../state/format';
import { baseName, isWithin, joinPath, parentOf } from '../state/names';
import type { AgentScope } from '../state/scope';
import { dirState, type TreeState } from '../state/tree';
import { failedFolder, foldersToCreate, freeName, limitProblem, percent, UploadQueue, type Choice, type QueueItem } from '../state/upload';
import { modal } from '../ui/dialogs';
import { carriesFiles, dropped, openPicker, type Picked } from '../ui/fileDrop';
import type { ProjectsPort, Shell, TreePort, UploadPort } from './ports';

/** What uploads need of the page (a narrow part of context.ts, ports.ts). */
export interface UploadContext extends Pick<Shell, 'state' | 'api' | 'update' | 'notify'> {
  readonly tree: Pick<TreePort, 'reloadDir'>;
  readonly projects: Pick<ProjectsPort, 'refreshUsage'>;
}

/** A conflict's answer: the choice, and whether it holds for the other names that exist. */
export type Answer = { choice: Choice; forAll: boolean } | null;

/** What uploads do outside the page: the limit, the PUTs, the question about a name (tests hand in fakes). */
export interface UploadIO {
  limit(agentId: string, ws: WorkspaceRef): Promise<number | null>;
  put(url: string, body: Blob, csrf: string, onProgress: (sent: number) => void): PutHandle;
  ask(path: string, others: number): Promise<Answer>;
}

const browserIO: UploadIO = { limit: (a, ws) => uploadLimit(a, ws), put: putFile, ask: (p, n) => conflictDialog(p, n) };

/** Files sent at once (the gateway's limits.uploadsPerAgent is 16 by default, shared with other clients). */
const PARALLEL = 3;

/** One upload: where it goes, and what was decided for its files. */
interface Batch {
  readonly scope: AgentScope<AgentState>;
  readonly tree: TreeState;
  readonly ws: WorkspaceRef;
  readonly dir: string;
  readonly items: QueueItem[];
  /** Per item whose name exists: the choice, and the entry seen (its revision). */
  readonly choices: Map<number, { choice: Choice; existing: Entry }>;
  /** The first item #sendNext has not looked at (items only ever leave 'waiting'). */
  next: number;
}

export class Upload implements UploadPort {
  readonly #c: UploadContext;
  readonly #io: UploadIO;
  readonly queue = new UploadQueue();
  readonly #handles = new Map<number, PutHandle>();
  /** The tree row a drag is over (its folder is highlighted). */
  #dropDir: string | null = null;

  constructor(c: UploadContext, io: UploadIO = browserIO) {
    this.#c = c;
    this.#io = io;
  }

  /** Opens the file (or folder) picker; what is chosen is uploaded into dir. */
  pick(tree: TreeState, dir: string, folder: boolean): void {
    openPicker(folder, (p) => void this.upload(tree, dir, p));
  }

  /** The tree's drag-and-drop: over a folder row its folder, a file row its parent, else the root. */
  dropHandlers(tree: TreeState): { over: (e: DragEvent) => void; leave: (e: DragEvent) => void; drop: (e: DragEvent) => void } {
    const dirOf = (e: DragEvent): string => {
      const row = (e.target as HTMLElement | null)?.closest?.<HTMLElement>('.tree-row[data-path]');
      if (!row) return '';
      const p = row.dataset['path'] ?? '';
      return row.classList.contains('dir') ? p : parentOf(p);
    };
    const mark = (d: string | null) => {
      if (d === this.#dropDir) return;
      this.#dropDir = d;
      this.#c.update();
    };
    return {
      over: (e) => {
        if (!carriesFiles(e)) return;
        e.preventDefault();
        if (e.dataTransfer) e.dataTransfer.dropEffect = 'copy';
        mark(dirOf(e));
      },
      leave: (e) => {
        if (!(e.currentTarget as HTMLElement).contains(e.relatedTarget as Node | null)) mark(null);
      },
      drop: (e) => {
        if (!carriesFiles(e) || !e.dataTransfer) return;
        e.preventDefault();
        const dir = dirOf(e);
        mark(null);
        const read = dropped(e.dataTransfer);
        void read().then(
          (p) => this.upload(tree, dir, p),
          (err: unknown) => this.#c.notify('error', `The dropped files could not be read (${err instanceof Error ? err.message : 'unknown error'}).`),
        );
      },
    };
  }

  /** The folder a drag is over ('' the root), or null. */
  get dropTarget(): string | null {
    return this.#dropDir;
  }

  /** Uploads what was picked or dropped into dir of tree's workspace. */
  async upload(tree: TreeState, dir: string, p: Picked): Promise<void> {
    const scope = this.#c.state.scopes.current;
    if (!scope || p.files.length + p.folders.length === 0) return;
    const b: Batch = { scope, tree, ws: tree.workspace, dir, items: this.queue.add(dir, p.files), choices: new Map(), next: 0 };
    this.#c.update();
    await this.#refuseTooLarge(b);
    await this.#makeFolders(b, foldersToCreate(p.files, p.folders));
    if (!(await this.#askConflicts(b))) this.#cancelWaiting(b);
    this.#c.update();
    await Promise.all(Array.from({ length: PARALLEL }, () => this.#sendNext(b)));
    await this.#refresh(b);
    this.#summary(b);
  }

  async #refuseTooLarge(b: Batch): Promise<void> {
    let limit: number | null = null;
    try {
      limit = await this.#io.limit(b.scope.agentId, b.ws);
    } catch {
      limit = null; // not published: the sidecar still refuses a larger body (413, with the number)
    }
    for (const it of b.items) {
      const why = limitProblem(it.size, limit);
      if (why !== null) this.queue.finish(it, 'failed', why);
    }
  }

  /** Makes the folders (relative to b.dir, parents first); a refused one fails the files inside it. */
  async #makeFolders(b: Batch, folders: string[]): Promise<void> {
    const failed = new Map<string, string>();
    for (const rel of folders) {
      const path = joinPath(b.dir, rel);
      if (failedFolder(path, failed) !== null) continue;
      try {
        await b.scope.guard(this.#c.api.createEntry(b.scope.agentId, b.ws, parentOf(path), baseName(path), 'ENTRY_TYPE_DIRECTORY'));
      } catch (err) {
        const e = asApiError(err);
        if (e.status === 409 && (e.reason === 'ALREADY_EXISTS' || e.reason === '')) continue; // merged into the folder there
        failed.set(path, uploadError(e));
      }
    }
    for (const it of b.items) {
      const why = it.status === 'waiting' ? failedFolder(it.path, failed) : null;
      if (why !== null) this.queue.finish(it, 'failed', why);
    }
  }

  /** Every entry of dir by name (all pages); an empty map when dir does not exist. */
  async #names(b: Batch, dir: string): Promise<Map<string, Entry>> {
    const out = new Map<string, Entry>();
    let cursor = '';
    try {
      do {
        const r = await b.scope.guard(this.#c.api.listEntries(b.scope.agentId, b.ws, dir, cursor));
        for (const e of r.entries ?? []) out.set(e.name ?? '', e);
        cursor = r.next_cursor ?? '';
      } while (cursor);
    } catch (err) {
      if (asApiError(err).status !== 404) throw err;
    }
    return out;
  }

  /** Asks what to do with each waiting file whose name exists; false when the upload was cancelled. */
  async #askConflicts(b: Batch): Promise<boolean> {
    const byDir = new Map<string, QueueItem[]>();
    for (const it of b.items) {
      if (it.status !== 'waiting') continue;
      const dir = parentOf(it.path);
      const list = byDir.get(dir);
      if (list) list.push(it);
      else byDir.set(dir, [it]);
    }
    const clashes: { it: QueueItem; existing: Entry }[] = [];
    for (const [dir, items] of byDir) {
      let names: Map<string, Entry>;
      try {
        names = await this.#names(b, dir);
      } catch (err) {
        for (const it of items) this.queue.finish(it, 'failed', uploadError(asApiError(err)));
        continue;
      }
      for (const it of items) {
        const existing = names.get(baseName(it.path));
        if (existing) clashes.push({ it, existing });
      }
    }
    let all: Choice | null = null;
    for (let i = 0; i < clashes.length; i++) {
      const { it, existing } = clashes[i]!;
      if (it.status !== 'waiting') continue;
      const answer: Answer = all ? { choice: all, forAll: true } : await this.#io.ask(it.path, clashes.length - i - 1);
      if (answer === null) return false;
      const choice: Choice = answer.choice;
      if (answer.forAll) all = choice;
      if (choice === 'skip') this.queue.finish(it, 'skipped', 'Skipped: a file of that name exists; it was left as it is.');
      else b.choices.set(it.id, { choice, existing });
    }
    return true;
  }

  #cancelWaiting(b: Batch): void {
    for (const it of b.items) if (it.status === 'waiting') this.queue.cancel(it);
  }

  /** Sends the batch's waiting files one after another (PARALLEL of these run at once). */
  async #sendNext(b: Batch): Promise<void> {
    for (;;) {
      while (b.next < b.items.length && b.items[b.next]!.status !== 'waiting') b.next++;
      const it = b.items[b.next++];
      if (!it) return;
      if (!b.scope.alive) return this.#cancelWaiting(b); // another agent was opened: what has not started stays unsent
      it.status = 'sending';
      this.#c.update();
      const c = b.choices.get(it.id);
      try {
        if (c?.choice === 'keep') await this.#keepBoth(b, it);
        else if (c?.choice === 'replace') await this.#replace(b, it, c.existing);
        else this.#end(it, await this.#put(b, it, { mode: 'fail' }), '');
      } catch (err) {
        this.queue.finish(it, 'failed', uploadError(asApiError(err)));
      }
      this.#c.update();
    }
  }

  /** One PUT of it to its path, with progress and Cancel. */
  async #put(b: Batch, it: QueueItem, ifExists: IfExists): Promise<ApiError | null> {
    it.sent = 0;
    const h = this.#io.put(uploadUrl(b.scope.agentId, b.ws, it.path, ifExists), it.file, this.#c.state.session?.csrf_token ?? '', (n) => {
      this.queue.progress(it, n);
      this.#c.update();
    });
    this.#handles.set(it.id, h);
    try {
      return await h.done;
    } finally {
      this.#handles.delete(it.id);
    }
  }

  #end(it: QueueItem, err: ApiError | null, ok: string): void {
    if (!err) return this.queue.finish(it, 'done', ok);
    if (err.reason === 'CANCELLED') return void this.queue.cancel(it);
    const exists = err.status === 409 && (err.reason === 'REVISION_MISMATCH' || err.reason === 'ALREADY_EXISTS');
    this.queue.finish(it, 'failed', exists ? `${baseName(it.path)} was created meanwhile; nothing was overwritten. Upload it again to choose.` : uploadError(err));
  }

  /** Replace: keeps the old file as a version (checkpoints on); without checkpoints, replaces the revision that was asked about. */
  async #replace(b: Batch, it: QueueItem, existing: Entry): Promise<void> {
    const err = await this.#put(b, it, { mode: 'replace' });
    if (err?.reason !== 'PRECONDITION_REQUIRED') return this.#end(it, err, 'Replaced; the old file is kept as a version.');
    const again = await this.#put(b, it, { mode: 'replace', revision: existing.revision ?? '' });
    this.#end(it, again, 'Replaced (no checkpoints: no version was kept).');
  }

  /** Keep both: the first free "name (n).ext" of a fresh listing, sent create-only (a name taken meanwhile: the next one). */
  async #keepBoth(b: Batch, it: QueueItem): Promise<void> {
    const dir = parentOf(it.path);
    const name = baseName(it.path);
    for (let attempt = 0; attempt < 3; attempt++) {
      const names = await this.#names(b, dir);
      const busy = new Set(this.queue.items.filter((x) => x !== it && (x.status === 'waiting' || x.status === 'sending')).map((x) => x.path));
      it.path = joinPath(dir, freeName(name, (c) => names.has(c) || busy.has(joinPath(dir, c))));
      const err = await this.#put(b, it, { mode: 'fail' });
      if (!(err?.status === 409 && err.reason === 'REVISION_MISMATCH')) return this.#end(it, err, `Kept both: uploaded as ${baseName(it.path)}.`);
    }
    this.queue.finish(it, 'failed', `No free name for ${name} could be taken (others kept taking them); nothing was overwritten.`);
  }

  /** Reloads the listed folders the upload changed, with its folder expanded. */
  async #refresh(b: Batch): Promise<void> {
    if (!b.scope.alive) return;
    dirState(b.tree, b.dir).expanded = true;
    const dirs = [...b.tree.dirs.keys()].filter((d) => isWithin(d, b.dir) && (d === b.dir || b.tree.dirs.get(d)?.listing.loaded));
    await Promise.all(dirs.map((d) => this.#c.tree.reloadDir(b.scope, b.tree, d)));
    // The project list's sizes and the volume bar count what was uploaded.
    if (b.tree.workspace.scope !== 'GLOBAL') await this.#c.projects.refreshUsage(b.scope);
  }

  #summary(b: Batch): void {
    const n = (s: QueueItem['status']) => b.items.filter((it) => it.status === s).length;
    const parts = [
      [n('done'), 'uploaded'],
      [n('skipped'), 'skipped'],
      [n('cancelled'), 'cancelled'],
      [n('failed'), 'not uploaded'],
    ].filter(([k]) => k) as [number, string][];
    if (parts.length === 0) return;
    const failed = b.items.filter((it) => it.status === 'failed');
    const why = failed.length === 1 ? `: ${failed[0]!.path}: ${failed[0]!.message}` : failed.length ? ' (see the list).' : '.';
    const text = parts.map(([k, what]) => `${k} ${k === 1 ? 'file' : 'files'} ${what}`).join(', ') + why;
    this.#c.notify(n('failed') ? 'error' : 'info', text);
  }

  cancel(id: number): void {
    const it = this.queue.items.find((x) => x.id === id);
    if (it && this.queue.cancel(it)) this.#handles.get(id)?.abort();
    this.#c.update();
  }

  cancelAll(): void {
    for (const it of this.queue.cancelAll()) this.#handles.get(it.id)?.abort();
    this.#c.update();
  }

  clear(): void {
    this.queue.clearFinished();
    this.#c.update();
  }

  /** The upload panel: every file with its progress, outcome and Cancel, the total, Cancel all. */
  view(): TemplateResult | typeof nothing {
    const q = this.queue;
    if (q.items.length === 0) return nothing;
    const t = q.totals();
    return html`<section class="upload-panel" aria-label="Uploads" data-testid="upload-panel">
      <div class="upload-head">
        <strong>Uploads</strong>
        <span class="muted" data-testid="upload-total-text">${formatSize(t.sent)} of ${formatSize(t.total)} · ${t.done} done${t.active ? `, ${t.active} to go` : ''}</span>
        <progress data-testid="upload-total" max="100" .value=${percent(t.sent, t.total)} aria-label="Total upload progress"></progress>
        ${q.busy
          ? html`<button class="btn btn-small" data-testid="upload-cancel-all" @click=${() => this.cancelAll()}>Cancel all</button>`
          : html`<button class="btn btn-small" data-testid="upload-clear" @click=${() => this.clear()}>Close</button>`}
      </div>
      <ul class="upload-list">
        ${q.items.map(
          (it) => html`<li class="upload-item ${it.status}" data-testid="upload-item" data-path=${it.path} data-status=${it.status}>
            <span class="upload-name" title=${it.path}>${it.path}</span>
            <progress max="100" .value=${percent(it.sent, it.size)} aria-label="Progress of ${it.path}"></progress>
            ${q.cancellable(it)
              ? html`<button class="btn btn-small btn-ghost" data-testid="upload-cancel" aria-label="Cancel ${it.path}" @click=${() => this.cancel(it.id)}>Cancel</button>`
              : html`<span></span>`}
            <span class="upload-status" data-testid="upload-status" role=${it.status === 'failed' ? 'alert' : nothing}>${statusText(it)}</span>
          </li>`,
        )}
      </ul>
    </section>`;
  }
}

function statusText(it: QueueItem): string {
  switch (it.status) {
    case 'waiting':
      return `waiting · ${formatSize(it.size)}`;
    case 'sending':
      return `${percent(it.sent, it.size)} % of ${formatSize(it.size)}`;
    case 'done':
      return it.message || 'Uploaded.';
    default:
      return it.message;
  }
}

/** The message of a refused upload: the server's own for sizes and paths (it names the limit or the segment). */
function uploadError(e: ApiError): string {
  if (e.reason === 'CHECKPOINT_LIMIT') {
    return "The agent's checkpoint store is full, so the file it would replace could not be kept as a version; nothing was changed. Free space in Checkpoints, or upload it again with Keep both.";
  }
  if ((e.reason === 'TOO_LARGE' || e.reason === 'INVALID_PATH' || e.reason === 'DENYLISTED' || e.reason === 'OUTSIDE_GLOBAL') && e.message) {
    const m = sanitize(e.message);
    return /[.!?]$/.test(m) ? m : m + '.';
  }
  return describeError(e);
}

/** Asks about one existing name: Replace, Skip or Keep both, optionally for the others too; null cancels the upload. */
function conflictDialog(path: string, others: number): Promise<Answer> {
  let forAll = false;
  return modal<Answer>(
    ({ close, update, id }) =>
      () => html`
        <h2 id="${id}-title">${baseName(path)} exists</h2>
        <div id="${id}-body" class="dialog-body">
          <p><code>${path}</code> is already there. Replace keeps the file it replaces as a version when checkpoints are on; Keep both uploads yours as <code>${freeName(baseName(path), () => false)}</code> (or the next free name).</p>
        </div>
        ${others > 0
          ? html`<label class="search-toggle"
              ><input type="checkbox" data-testid="conflict-for-all" .checked=${forAll} @change=${(e: Event) => ((forAll = (e.target as HTMLInputElement).checked), update())} />Do
              the same for the other ${others} ${others === 1 ? 'name' : 'names'} that exist</label
            >`
          : nothing}
        <div class="dialog-actions">
          <button type="button" class="btn" data-action="cancel" @click=${() => close(null)}>Cancel upload</button>
          <button type="button" class="btn" data-action="skip" @click=${() => close({ choice: 'skip', forAll })}>Skip</button>
          <button type="button" class="btn" data-action="keep" @click=${() => close({ choice: 'keep', forAll })}>Keep both</button>
          <button type="button" class="btn btn-primary" data-action="replace" @click=${() => close({ choice: 'replace', forAll })}>Replace</button>
        </div>
      `,
    { cancelValue: null, testid: 'upload-conflict-dialog', focus: '[data-action="skip"]' },
  );
}
