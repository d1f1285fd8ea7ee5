// The open file: opening it (with a draft from the browser's storage), the
// editor's text (line endings kept), drafts, Save with the conflict path,
// signing in again and retrying a refused save, Revert (undoable), Reload,
// and the refresh of a clean open file. The decisions are in
// state/editorState.ts and state/fileFlow.ts; the pane is views/editor.ts.
import { html, type TemplateResult } from 'lit-html';
import { downloadUrl, startDownload } from '../api/download';
import { asApiError, isUnauthenticated } from '../api/errors';
import type { Entry, GetFileResponse, WorkspaceRef } from '../api/types';
import type { ConflictsPort, FilesPort, SessionPort, Shell, TreeActionsPort } from './ports';
import type { AgentState } from '../state/appState';
import * as ed from '../state/editorState';
import { closesWhenGone, draftStep, listingsAfterSave, openWithDraft, refreshReplaces, stillOpen, undoRevertApplies, workspaceOf } from '../state/fileFlow';
import { languageForPath } from '../state/language';
import { restoreLineEndings } from '../state/lineEndings';
import { skillFolderOf, skillProblems } from '../state/skills';
import { isStale, type AgentScope } from '../state/scope';
import { patchEntry, workspaceKey } from '../state/tree';
import { confirmDialog, copyText } from '../ui/dialogs';
import type { LazyEditor } from '../ui/lazyEditor';
import { editorView } from '../views/editor';

/** What the open file needs of the page (a narrow part of context.ts, ports.ts). */
export interface EditorContext extends Pick<Shell, 'state' | 'update' | 'fail' | 'notify' | 'drafts' | 'api' | 'editor'> {
  readonly treeActions: Pick<TreeActionsPort, 'afterMutation'>;
  readonly session: Pick<SessionPort, 'reauthenticate'>;
  readonly conflicts: Pick<ConflictsPort, 'resolve' | 'saveAsNew'>;
}

export class Editor implements FilesPort {
  readonly #c: EditorContext;
  #draftTimer: ReturnType<typeof setTimeout> | null = null;
  /** The text the editor was last loaded with: the separators restored on every edit come from it. */
  #editorBase = '';
  /** A question before a save (the SKILL.md check) is open. */
  #asking = false;

  constructor(c: EditorContext) {
    this.#c = c;
  }

  get #scope(): AgentScope<AgentState> | null {
    return this.#c.state.scopes.current;
  }

  /** Asks before unsaved text would be lost. True when it is fine to go on. */
  async confirmDiscard(action: string): Promise<boolean> {
    const f = this.#scope?.state.file;
    if (!ed.isDirty(f)) return true;
    const ok = await confirmDialog({
      title: 'Discard unsaved changes?',
      body: [html`<code>${f!.path}</code> has changes that are not saved. ${action} discards them.`],
      confirmLabel: 'Discard changes',
      cancelLabel: 'Keep editing',
      danger: true,
      testid: 'discard-dialog',
    });
    if (ok) this.#discardDraft();
    return ok;
  }

  // ---- drafts: unsaved text in the browser's storage ----------------------

  #scheduleDraft(): void {
    if (this.#draftTimer === null) this.#draftTimer = setTimeout(() => this.flushDraft(), 300);
  }

  #cancelDraftTimer(): void {
    if (this.#draftTimer !== null) {
      clearTimeout(this.#draftTimer);
      this.#draftTimer = null;
    }
  }

  /** Stores the open file's unsaved text now (or forgets it once the file is clean). */
  flushDraft(): void {
    this.#cancelDraftTimer();
    const scope = this.#scope;
    const f = scope?.state.file;
    if (!scope || !f) return;
    const step = draftStep(f);
    if (step === 'put') {
      this.#c.drafts.put({ agentId: scope.agentId, workspaceKey: f.workspaceKey, path: f.path, baseRevision: f.revision, text: f.text });
    } else if (step === 'remove') {
      this.#c.drafts.remove(scope.agentId, f.workspaceKey, f.path);
    }
  }

  /** The user chose to throw the open file's unsaved text away. */
  #discardDraft(): void {
    this.#cancelDraftTimer();
    const scope = this.#scope;
    const f = scope?.state.file;
    if (scope && f) this.#c.drafts.remove(scope.agentId, f.workspaceKey, f.path);
  }

  // ---- the editor --------------------------------------------------------

  get #editor(): LazyEditor {
    return this.#c.editor;
  }

  loadEditor(text: string, lang: Parameters<LazyEditor['load']>[1]): void {
    this.#editorBase = text;
    this.#editor.load(text, lang);
  }

  closeFile(st: AgentState): void {
    st.file = null;
    st.fileLoading = null;
    st.fileError = null;
    st.fileRequest++;
    this.loadEditor('', 'plain');
  }

  /** listed is the entry as the tree listed it (metadata for files the server will not read). */
  async openFile(ws: WorkspaceRef, path: string, force = false, listed?: Entry): Promise<void> {
    const scope = this.#scope;
    if (!scope) return;
    const st = scope.state;
    if (!force && st.file && st.file.path === path && st.file.workspaceKey === workspaceKey(ws)) return;
    if (!force && !(await this.confirmDiscard('Opening another file'))) return;
    if (!scope.alive) return;
    const req = ++st.fileRequest;
    st.fileLoading = path;
    st.fileError = null;
    this.#c.update();
    try {
      const r = await scope.guard(this.#c.api.getFile(scope.agentId, ws, path));
      if (req !== st.fileRequest) return;
      const loaded = ed.openFile(workspaceKey(ws), path, r);
      const o = openWithDraft(loaded, loaded.editable ? this.#c.drafts.get(scope.agentId, loaded.workspaceKey, path) : null);
      st.file = o.file;
      if (o.dropDraft) this.#c.drafts.remove(scope.agentId, o.file.workspaceKey, path);
      // A restored draft: back in the editor, on the revision it was typed on.
      this.loadEditor(o.file.text, languageForPath(path));
      if (o.notice) this.#c.notify('info', o.notice);
    } catch (err) {
      if (isStale(err) || req !== st.fileRequest) return;
      if (isUnauthenticated(err)) return this.#c.fail(err);
      if (listed && asApiError(err).reason === 'MULTIPLE_LINKS') {
        // The server refuses to read a file with several hard links: show what the listing knows.
        st.file = ed.openFile(workspaceKey(ws), path, {
          entry: { ...listed, editable: false, non_editable_reason: 'NON_EDITABLE_REASON_MULTIPLE_LINKS' },
        });
        this.loadEditor('', 'plain');
        return;
      }
      st.file = null;
      st.fileError = { path, ws, error: asApiError(err) };
    } finally {
      if (scope.alive && req === st.fileRequest) {
        st.fileLoading = null;
        this.#c.update();
      }
    }
  }

  /** Every change in CodeMirror. */
  onEdit(text: string): void {
    const st = this.#scope?.state;
    if (!st?.file) return;
    const wasDirty = ed.isDirty(st.file);
    // The editor joins lines with LF: the file's own separators go back in (CRLF files stay CRLF).
    st.file = ed.edit(st.file, restoreLineEndings(this.#editorBase, text));
    this.#scheduleDraft();
    if (wasDirty !== ed.isDirty(st.file)) this.#c.update();
  }

  // ---- save and conflict ---------------------------------------------------

  async save(): Promise<void> {
    const scope = this.#scope;
    const f = scope?.state.file;
    if (!scope || !f) return;
    if (f.conflict) {
      await this.#c.conflicts.resolve();
      return;
    }
    if (!ed.canSave(f)) return;
    // One question at a time: Ctrl+S reaches both the page and the editor's keymap.
    if (this.#asking) return;
    this.#asking = true;
    const go = await this.#skillCheck(f).finally(() => (this.#asking = false));
    if (!go || !ed.canSave(scope.state.file) || !stillOpen(scope.state.file, f)) return;
    const text = f.text;
    this.flushDraft(); // stored before the request: a session that ends now loses nothing
    scope.state.file = ed.saveStarted(f);
    this.#c.update();
    try {
      const entry = await scope.guard(this.#c.api.updateFile(scope.agentId, workspaceOf(f.workspaceKey), f.path, text, f.revision));
      const cur = scope.state.file;
      if (!stillOpen(cur, f)) return;
      scope.state.file = ed.saveSucceeded(cur, entry, text);
      this.flushDraft(); // gone, or re-based on the new revision when more was typed meanwhile
      this.#c.notify('info', `Saved ${f.path}.`);
      // The tree's copy of the file, and of its folder (whose revision the save changed), are out of date.
      const tree = scope.state.trees.get(f.workspaceKey);
      if (tree) {
        patchEntry(tree, entry);
        const dirs = listingsAfterSave(f.path);
        if (dirs.length) await this.#c.treeActions.afterMutation(scope, tree, dirs);
        else this.#c.update();
      }
    } catch (err) {
      if (isStale(err)) return;
      const cur = scope.state.file;
      if (!stillOpen(cur, f)) return this.#c.fail(err);
      const r = ed.saveFailed(cur, err);
      scope.state.file = r.file;
      this.#c.update();
      if (isUnauthenticated(err)) {
        // Sign in again in place, then the same save (same expected revision) once more.
        if ((await this.#c.session.reauthenticate()) && scope.alive) await this.save();
        return;
      }
      // One notice: the merge view (the banner stays while it is not resolved).
      if (r.conflict) await this.#c.conflicts.resolve();
      else if (asApiError(err).status === 404) await this.#c.conflicts.saveAsNew();
      else this.#c.fail(err, 'Not saved.');
    }
  }

  /** A skill's SKILL.md: says before saving what Codex would skip (state/skills.ts); true to save. */
  async #skillCheck(f: ed.OpenFile): Promise<boolean> {
    const folder = f.workspaceKey === 'GLOBAL:' ? skillFolderOf(f.path) : null;
    const problems = folder === null ? [] : skillProblems(folder, f.text);
    if (problems.length === 0) return true;
    return confirmDialog({
      title: `Codex would skip skill ${folder}`,
      body: [...problems, 'Save anyway, or keep editing to fix the front matter (name: the folder name; description: at most 1,024 characters).'],
      confirmLabel: 'Save anyway',
      cancelLabel: 'Keep editing',
      testid: 'skill-check-dialog',
    });
  }

  async #copyMine(): Promise<boolean> {
    const f = this.#scope?.state.file;
    if (!f) return false;
    return copyText(f.text);
  }

  /** "Reload server version": the server's text replaces the editor's (and the draft goes). */
  async reloadServerVersion(): Promise<void> {
    const scope = this.#scope;
    const f = scope?.state.file;
    if (!scope || !f) return;
    try {
      const r = await scope.guard(this.#c.api.getFile(scope.agentId, workspaceOf(f.workspaceKey), f.path));
      const cur = scope.state.file;
      if (!stillOpen(cur, f)) return;
      this.#discardDraft();
      scope.state.file = ed.reloaded(cur, r);
      this.loadEditor(scope.state.file.text, languageForPath(f.path));
      const tree = scope.state.trees.get(f.workspaceKey);
      if (tree && r.entry) patchEntry(tree, r.entry);
      this.#c.notify('info', 'The server version was loaded.');
    } catch (err) {
      this.#c.fail(err, 'The server version could not be loaded.');
    }
  }

  /** Shows r as the open file's loaded (clean) version, in the editor and in the tree's listing. */
  showLoaded(scope: AgentScope<AgentState>, r: GetFileResponse): void {
    const cur = scope.state.file;
    if (!cur) return;
    scope.state.file = ed.reloaded(cur, r);
    this.loadEditor(scope.state.file.text, languageForPath(cur.path));
    const tree = scope.state.trees.get(cur.workspaceKey);
    if (tree && r.entry) patchEntry(tree, r.entry);
  }

  /** Revert: back to the saved text, undoable (from the message, or Ctrl+Z in the editor). */
  #revert(): void {
    const st = this.#scope?.state;
    if (!st?.file || !ed.isDirty(st.file)) return;
    const mine = st.file.text;
    const path = st.file.path;
    const reverted = ed.cancel(st.file);
    st.file = reverted;
    this.#editorBase = reverted.text;
    this.#editor.replace(reverted.text);
    this.#discardDraft();
    this.#c.notify('info', `Your changes to ${path} were reverted.`, {
      label: 'Undo',
      testid: 'undo-revert',
      run: () => {
        const scope = this.#scope;
        const cur = scope?.state.file;
        if (!scope || !undoRevertApplies(cur, path)) return;
        this.#editorBase = mine;
        this.#editor.replace(mine);
        scope.state.file = ed.edit(cur, mine);
        this.flushDraft();
        this.#c.state.notice = null;
        this.#c.update();
      },
    });
  }

  /** The editor's Reload: the server's current version (asks first when there are unsaved changes). */
  async #reload(): Promise<void> {
    const f = this.#scope?.state.file;
    if (!f) return;
    if (!(await this.confirmDiscard('Reloading the file'))) return;
    await this.reloadServerVersion();
  }

  /** The tree's Refresh read the open, clean file again: a newer version is shown, a deleted file closes. */
  async refreshOpenFile(scope: AgentScope<AgentState>, f: ed.OpenFile): Promise<void> {
    try {
      const r = await scope.guard(this.#c.api.getFile(scope.agentId, workspaceOf(f.workspaceKey), f.path));
      const cur = scope.state.file;
      if (!cur || !refreshReplaces(cur, f, r)) return;
      scope.state.file = ed.reloaded(cur, r);
      this.loadEditor(scope.state.file.text, languageForPath(f.path));
      this.#c.notify('info', `${f.path} was changed elsewhere: its new version is shown.`);
    } catch (err) {
      if (isStale(err)) return;
      if (asApiError(err).status === 404) {
        if (closesWhenGone(scope.state.file, f)) this.closeFile(scope.state);
        this.#c.notify('info', `${f.path} no longer exists.`);
        return;
      }
      this.#c.fail(err, `${f.path} could not be refreshed.`);
    }
  }

  /** The editor pane of st. */
  view(st: AgentState): TemplateResult {
    return editorView(st, {
      editorDom: this.#editor.dom,
      retryOpen: (ws, path) => void this.openFile(ws, path, true),
      copyMine: async () =>
        (await this.#copyMine())
          ? this.#c.notify('info', 'Your version was copied to the clipboard.')
          : this.#c.notify('error', 'Copying failed: select the text in the editor and copy it by hand.'),
      reloadServer: () => void this.reloadServerVersion(),
      merge: () => void this.#c.conflicts.resolve(),
      reload: () => void this.#reload(),
      revert: () => this.#revert(),
      save: () => void this.save(),
      download: () => {
        const scope = this.#c.state.scopes.current;
        const f = st.file;
        if (scope && f) startDownload(downloadUrl(scope.agentId, workspaceOf(f.workspaceKey), f.path));
      },
    });
  }
}
