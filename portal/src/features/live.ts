// The portal's live-changes controller (issue #16): keeps one watch stream
// open for the selected agent's shown workspace and its expanded folders,
// reopens it (resuming) when that set changes, closes it when the agent
// changes or the user signs out, and applies each event to the tree and the
// open file. liveHooks.ts hands it a small host; the rules are in
// state/live.ts, the screens in views/live.ts.
import { html, type TemplateResult } from 'lit-html';
import { asApiError } from '../api/errors';
import type { GetFileResponse, WorkspaceRef } from '../api/types';
import { LiveStream, watchUrl, type StreamStatus, type WatchEvent } from '../api/watch';
import type { AgentState } from '../state/appState';
import * as ed from '../state/editorState';
import { applyToTree, fileReaction, lineDiff, watchedDirs } from '../state/live';
import type { AgentScope } from '../state/scope';
import { workspaceKey, type TreeState } from '../state/tree';
import { confirmDialog, copyText } from '../ui/dialogs';
import { diffView, diskBarView, liveStatusView, type DiskBar } from '../views/live';

export interface LiveHost {
  scope(): AgentScope<AgentState> | null;
  /** The tree on screen (none while no project is selected). */
  tree(st: AgentState): TreeState | undefined;
  /** The selected agent has a sidecar and the app screen is up. */
  enabled(): boolean;
  reloadDir(scope: AgentScope<AgentState>, tree: TreeState, dir: string): Promise<void>;
  getFile(scope: AgentScope<AgentState>, ws: WorkspaceRef, path: string): Promise<GetFileResponse>;
  /** Shows r as the open file's loaded (clean) version. */
  showLoaded(scope: AgentScope<AgentState>, r: GetFileResponse): void;
  /** The editor's "load the server version" (drops the draft). */
  reloadServerVersion(): Promise<void>;
  /** Saves the open file's text again as a new file (it was deleted on disk). */
  saveAsNew(): Promise<void>;
  notify(kind: 'info' | 'error', text: string): void;
  /** The outcome of opening agentId's stream: null once live, else why it failed (state/features.ts). */
  watchOutcome?(agentId: string, err: unknown | null): void;
  update(): void;
}

interface DiskState extends DiskBar {
  wsKey: string;
  revision: string;
  dismissed: boolean;
}

export class LiveController {
  readonly #h: LiveHost;
  #stream: LiveStream | null = null;
  #key = '';
  #serial = -1;
  #timer: ReturnType<typeof setTimeout> | null = null;
  #status: StreamStatus = { kind: 'off' };
  #notLive = new Set<string>();
  #disk: DiskState | null = null;
  /** The id to resume from when the same agent and workspace reopen. */
  #resume = { key: '', id: '' };
  /** Agent selection and workspace of the open stream. */
  #streamKey = '';
  /**
   * Serial of the latest reaction to a change of the open file: a response
   * to an older one (two quick changes, the first answer arriving last) is
   * dropped instead of showing the older version.
   */
  #fileSeq = 0;

  constructor(h: LiveHost) {
    this.#h = h;
  }

  get status(): StreamStatus {
    return this.#status;
  }

  /** Brings the stream in line with what is on screen (called after each render). */
  sync(): void {
    const scope = this.#h.scope();
    const tree = scope && this.#h.enabled() ? this.#h.tree(scope.state) : undefined;
    if (!scope || !tree || !tree.dirs.get('')?.listing.loaded) {
      if (!scope || scope.serial !== this.#serial) this.#close();
      else if (this.#stream && !tree) this.#close();
      return;
    }
    const wsKey = workspaceKey(tree.workspace);
    const dirs = watchedDirs(tree);
    const key = [scope.serial, wsKey, ...dirs].join('\n');
    if (key === this.#key) return;
    // Another agent selection or another workspace: the old stream goes now,
    // and the view is not live until the new one is ready.
    const rkey = scope.serial + '\n' + wsKey;
    if (scope.serial !== this.#serial || this.#streamKey !== rkey) {
      this.#close();
      this.#status = { kind: 'connecting' };
      this.#h.update();
    }
    this.#key = key;
    this.#serial = scope.serial;
    if (this.#timer) clearTimeout(this.#timer);
    // Expanding several folders at once reopens once.
    this.#timer = setTimeout(() => this.#open(scope, tree, wsKey, dirs), this.#stream ? 150 : 0);
  }

  #open(scope: AgentScope<AgentState>, tree: TreeState, wsKey: string, dirs: string[]): void {
    this.#timer = null;
    if (!scope.alive) return;
    const rkey = scope.serial + '\n' + wsKey;
    const resume = this.#stream && this.#resume.key === rkey ? this.#stream.lastId : this.#resume.key === rkey ? this.#resume.id : '';
    this.#stream?.close();
    this.#notLive.clear();
    const stream = new LiveStream(
      (from) => watchUrl(scope.agentId, tree.workspace, dirs, from),
      resume,
      {
        event: (ev) => {
          if (this.#stream !== stream) return;
          this.#resume = { key: rkey, id: stream.lastId };
          if (ev.kind === 'WATCH_EVENT_KIND_READY' && !stream.resumedFrom) {
            // A fresh subscription: what changed between the listings and the
            // watches is in no event, so list the watched folders once more.
            void this.#apply(scope, tree, { kind: 'WATCH_EVENT_KIND_RESYNC', reason: 'RESYNC_REASON_GAP', directories: ev.directories ?? [] });
          }
          void this.#apply(scope, tree, ev);
        },
        status: (s) => {
          if (this.#stream !== stream) return;
          this.#status = s;
          if (s.kind === 'live') this.#h.watchOutcome?.(scope.agentId, null);
          this.#h.update();
        },
        failed: (err) => {
          if (this.#stream === stream) this.#h.watchOutcome?.(scope.agentId, err);
        },
      },
    );
    this.#stream = stream;
    this.#streamKey = rkey;
  }

  #close(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    this.#stream?.close();
    this.#stream = null;
    this.#streamKey = '';
    this.#key = '';
    this.#serial = -1;
    this.#notLive.clear();
    this.#disk = null;
    if (this.#status.kind !== 'off') {
      this.#status = { kind: 'off' };
      this.#h.update();
    }
  }

  async #apply(scope: AgentScope<AgentState>, tree: TreeState, ev: WatchEvent): Promise<void> {
    if (!scope.alive || this.#h.tree(scope.state) !== tree) return;
    const wsKey = workspaceKey(tree.workspace);
    const eff = applyToTree(tree, ev);
    for (const d of eff.notLive) this.#notLive.add(d);
    const reload = eff.resyncAll ? watchedDirs(tree) : eff.reload;
    const st = scope.state;
    let r = fileReaction(st.file, wsKey, ev);
    if (eff.resyncAll && st.file?.workspaceKey === wsKey) r = { kind: 'check' };
    this.#h.update();
    await Promise.all([...reload.map((d) => this.#h.reloadDir(scope, tree, d)), this.#fileChange(scope, r)]);
  }

  async #fileChange(scope: AgentScope<AgentState>, r: ReturnType<typeof fileReaction>): Promise<void> {
    const f = scope.state.file;
    if (!f || r.kind === 'none') return;
    const seq = ++this.#fileSeq;
    const ws = f.workspaceKey === 'GLOBAL:' ? ({ scope: 'GLOBAL' } as WorkspaceRef) : ({ scope: 'PROJECT', project_name: f.workspaceKey.slice('PROJECT:'.length) } as WorkspaceRef);
    let revision = r.kind === 'changed' ? r.revision : '';
    let deleted = r.kind === 'deleted';
    let resp: GetFileResponse | null = null;
    if (r.kind === 'check' || (r.kind === 'changed' && !ed.isDirty(f))) {
      try {
        resp = await this.#h.getFile(scope, ws, f.path);
        revision = resp.entry?.revision ?? '';
      } catch (err) {
        if (asApiError(err).status !== 404) return;
        deleted = true;
      }
    }
    if (seq !== this.#fileSeq) return; // a later change of the file is being handled
    const cur = scope.state.file;
    if (!scope.alive || !cur || cur.path !== f.path || cur.workspaceKey !== f.workspaceKey) return;
    if (deleted) {
      this.#disk = { kind: 'deleted', path: cur.path, wsKey: cur.workspaceKey, revision: '', dismissed: false };
      this.#h.update();
      return;
    }
    if (!revision || revision === cur.revision) return;
    if (!ed.isDirty(cur) && !cur.saving && resp) {
      this.#h.showLoaded(scope, resp);
      this.#disk = null;
      this.#h.notify('info', `${cur.path} was changed on disk and has been reloaded.`);
      return;
    }
    this.#disk = { kind: 'changed', path: cur.path, wsKey: cur.workspaceKey, revision, dismissed: false };
    this.#h.update();
  }

  /** The bar for the open file, when the disk moved under it. */
  #bar(st: AgentState): DiskState | null {
    const d = this.#disk;
    const f = st.file;
    if (!d || !f || d.path !== f.path || d.wsKey !== f.workspaceKey || d.dismissed) return null;
    // A refused save shows its own banner and the merge: one notice, not two.
    if (f.conflict) return null;
    // A save of ours (or a reload) caught up with the disk.
    if (d.kind === 'changed' && (d.revision === f.revision || f.saving)) return null;
    if (d.kind === 'changed' && !ed.isDirty(f)) return null;
    return d;
  }

  statusView(): TemplateResult {
    return liveStatusView(this.#status, this.#notLive.size);
  }

  fileBar(st: AgentState) {
    const d = this.#bar(st);
    const scope = this.#h.scope();
    return diskBarView(d, {
      compare: () => void this.#compare(),
      reload: () => void this.#reload(),
      saveAsNew: () => void this.#h.saveAsNew(),
      keepMine: () => {
        if (this.#disk) this.#disk.dismissed = true;
        this.#h.notify('info', 'Your text is kept. Saving it now shows the conflict with the version on disk.');
      },
      copy: () => {
        const f = scope?.state.file;
        if (f)
          void copyText(f.text).then((ok) =>
            this.#h.notify(ok ? 'info' : 'error', ok ? 'Your text was copied to the clipboard.' : 'Copying failed: select the text and copy it by hand.'),
          );
      },
    });
  }

  async #reload(): Promise<void> {
    const f = this.#h.scope()?.state.file;
    if (!f) return;
    const ok = await confirmDialog({
      title: 'Discard your changes?',
      body: [html`Reloading <code>${f.path}</code> loads the version on disk and <strong>discards your unsaved changes</strong>.`],
      confirmLabel: 'Discard mine and reload',
      cancelLabel: 'Keep editing',
      danger: true,
      testid: 'disk-reload-dialog',
    });
    if (!ok) return;
    this.#disk = null;
    await this.#h.reloadServerVersion();
  }

  async #compare(): Promise<void> {
    const scope = this.#h.scope();
    const f = scope?.state.file;
    if (!scope || !f) return;
    const ws = f.workspaceKey === 'GLOBAL:' ? ({ scope: 'GLOBAL' } as WorkspaceRef) : ({ scope: 'PROJECT', project_name: f.workspaceKey.slice('PROJECT:'.length) } as WorkspaceRef);
    let disk: GetFileResponse;
    try {
      disk = await this.#h.getFile(scope, ws, f.path);
    } catch {
      this.#h.notify('error', `The version of ${f.path} on disk could not be loaded.`);
      return;
    }
    const cur = scope.state.file;
    if (!cur || cur.path !== f.path) return;
    const take = await confirmDialog({
      title: `Compare ${f.path}`,
      // The same signs as a checkpoint's Compare: − the stored version, + the text in front of you.
      body: [html`Lines marked − are only in the version on disk, + only in your text.`, diffView(lineDiff(disk.content ?? '', cur.text))],
      confirmLabel: 'Load the version on disk',
      cancelLabel: 'Keep mine',
      testid: 'disk-compare-dialog',
    });
    if (take) {
      this.#disk = null;
      await this.#h.reloadServerVersion();
    }
  }
}
