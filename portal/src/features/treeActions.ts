// What is done to the tree's entries: the actions menu, New file/folder,
// Global's New skill and Create AGENTS.md, Rename, Move and Delete. Every
// successful mutation reloads the listings whose revisions it changed, so a
// next action right after it is not refused as "changed elsewhere"; the
// rules (what may be done, where an entry may move, what happens to the open
// file) are in state/entryActions.ts.
import { html } from 'lit-html';
import { asApiError, isConflict } from '../api/errors';
import type { Entry, EntryType } from '../api/types';
import type { CheckpointsPort, FilesPort, Shell, TreeActionsPort, TreePort, UploadPort } from './ports';
import { GLOBAL, type AgentState } from '../state/appState';
import * as ed from '../state/editorState';
import { skillNameProblem } from '../state/skills';
import { allowedActions, fileAfterMove, holdsOpenFile, moveCandidates, moveProblem, skillTemplate } from '../state/entryActions';
import { baseName, entryNameProblem, joinPath, normaliseFolderPath, parentOf } from '../state/names';
import type { AgentScope } from '../state/scope';
import { dirState, forget, isDir, listingsToReload, type TreeState } from '../state/tree';
import { confirmDialog, promptDialog } from '../ui/dialogs';
import { deleteWithOverride } from '../views/deleteOverride';
import { openMenu, type MenuItem } from '../ui/menu';
import { downloadUrl, startDownload } from '../api/download';

/** What the entry actions needs of the page (a narrow part of context.ts, ports.ts). */
export interface TreeActionsContext extends Pick<Shell, 'state' | 'update' | 'fail' | 'notify' | 'succeeded' | 'drafts' | 'api' | 'ckpt'> {
  readonly tree: Pick<TreePort, 'reloadDir' | 'focusRow'>;
  readonly files: Pick<FilesPort, 'openFile' | 'closeFile'>;
  readonly checkpoints: Pick<CheckpointsPort, 'openForTree'>;
  readonly upload: Pick<UploadPort, 'pick'>;
}

export class TreeActions implements TreeActionsPort {
  readonly #c: TreeActionsContext;

  constructor(c: TreeActionsContext) {
    this.#c = c;
  }

  /** Reloads the listings whose revisions a mutation in dirs changed (see listingsToReload). */
  async afterMutation(scope: AgentScope<AgentState>, tree: TreeState, dirs: string[]): Promise<void> {
    await Promise.all(listingsToReload(tree, dirs).map((d) => this.#c.tree.reloadDir(scope, tree, d)));
  }

  menu(tree: TreeState, entry: Entry, anchor: HTMLElement, at?: { x: number; y: number }): void {
    const can = allowedActions(tree, entry);
    const items: MenuItem[] = [];
    if (isDir(entry)) {
      items.push({ label: 'New file…', run: () => void this.newEntry(tree, entry.path ?? '', 'ENTRY_TYPE_FILE') });
      items.push({ label: 'New folder…', run: () => void this.newEntry(tree, entry.path ?? '', 'ENTRY_TYPE_DIRECTORY') });
      items.push({ label: 'Upload files here…', run: () => this.#c.upload.pick(tree, entry.path ?? '', false) });
      items.push({ label: 'Upload folder here…', run: () => this.#c.upload.pick(tree, entry.path ?? '', true) });
      items.push({
        label: 'Refresh',
        run: () => {
          const scope = this.#c.state.scopes.current;
          if (scope) void this.#c.tree.reloadDir(scope, tree, entry.path ?? '');
        },
      });
    } else {
      items.push({ label: 'Open', hint: 'Enter', run: () => void this.#c.files.openFile(tree.workspace, entry.path ?? '', false, entry) });
    }
    const agent = this.#c.state.scopes.current?.agentId;
    if (agent) {
      const what = isDir(entry) ? 'Download as .zip' : 'Download';
      items.push({ label: what, run: () => startDownload(downloadUrl(agent, tree.workspace, entry.path ?? '')) });
    }
    if (!isDir(entry)) {
      items.push({ label: 'Compare with checkpoint…', run: () => void this.#c.checkpoints.openForTree(tree, entry.path ?? '') });
    }
    if (can.rename) items.push({ label: 'Rename…', hint: 'F2', run: () => void this.rename(tree, entry) });
    if (can.move) items.push({ label: 'Move to folder…', run: () => void this.#move(tree, entry) });
    if (can.delete) items.push({ label: 'Delete…', hint: 'Del', danger: true, run: () => void this.delete(tree, entry) });
    const r = anchor.getBoundingClientRect();
    openMenu(at?.x ?? r.left + 24, at?.y ?? r.bottom, items, anchor, `Actions for ${entry.name ?? ''}`);
  }

  async newEntry(tree: TreeState, parent: string, type: EntryType): Promise<void> {
    const scope = this.#c.state.scopes.current;
    if (!scope) return;
    const kind = type === 'ENTRY_TYPE_DIRECTORY' ? 'folder' : 'file';
    const where = parent === '' ? (tree.workspace.scope === 'GLOBAL' ? 'Global' : tree.workspace.project_name) : parent;
    const name = await promptDialog({
      title: `New ${kind}`,
      label: `Name of the new ${kind} in ${where}`,
      confirmLabel: `Create ${kind}`,
      validate: entryNameProblem,
      testid: 'new-entry-dialog',
    });
    if (name === null || !scope.alive) return;
    await this.create(scope, tree, parent, name, type);
  }

  async create(scope: AgentScope<AgentState>, tree: TreeState, parent: string, name: string, type: EntryType): Promise<void> {
    try {
      const created = await scope.guard(this.#c.api.createEntry(scope.agentId, tree.workspace, parent, name, type));
      this.#c.succeeded();
      dirState(tree, parent).expanded = true;
      await this.afterMutation(scope, tree, [parent]);
      if (!tree.dirs.get(parent)?.listing.loaded) await this.#c.tree.reloadDir(scope, tree, parent);
      tree.focusKey = 'e:' + (created.path ?? joinPath(parent, name));
      if (type === 'ENTRY_TYPE_FILE') await this.#c.files.openFile(tree.workspace, created.path ?? joinPath(parent, name));
    } catch (err) {
      this.#c.fail(err, `${name} was not created.`);
      if (isConflict(err) || asApiError(err).status === 404) await this.#c.tree.reloadDir(scope, tree, parent);
    }
  }

  /** Global's "New skill": a folder in skills/ holding a SKILL.md from a small template, opened for editing. */
  async newSkill(scope: AgentScope<AgentState>, tree: TreeState): Promise<void> {
    const name = await promptDialog({
      title: 'New skill',
      label: 'Skill name (the folder in skills/)',
      help: 'Lowercase letters, digits and single "-", at most 64 (e.g. review-prs): Codex skips other names. Creates skills/<name>/SKILL.md from a short template.',
      confirmLabel: 'Create skill',
      validate: skillNameProblem,
      testid: 'new-skill-dialog',
    });
    if (name === null || !scope.alive) return;
    const dir = joinPath('skills', name);
    const api = this.#c.api;
    try {
      await scope.guard(api.createEntry(scope.agentId, GLOBAL, 'skills', name, 'ENTRY_TYPE_DIRECTORY'));
      const file = await scope.guard(api.createEntry(scope.agentId, GLOBAL, dir, 'SKILL.md', 'ENTRY_TYPE_FILE'));
      await scope.guard(api.updateFile(scope.agentId, GLOBAL, file.path ?? joinPath(dir, 'SKILL.md'), skillTemplate(name), file.revision ?? ''));
      this.#c.succeeded();
      dirState(tree, 'skills').expanded = true;
      dirState(tree, dir).expanded = true;
      await this.afterMutation(scope, tree, ['skills', dir]);
      for (const d of ['skills', dir]) if (!tree.dirs.get(d)?.listing.loaded) await this.#c.tree.reloadDir(scope, tree, d);
      this.#c.notify('info', `Skill ${name} was created.`);
      await this.#c.files.openFile(GLOBAL, joinPath(dir, 'SKILL.md'));
    } catch (err) {
      this.#c.fail(err, `Skill ${name} was not created.`);
      await this.afterMutation(scope, tree, ['skills']);
    }
  }

  async rename(tree: TreeState, entry: Entry): Promise<void> {
    if (!allowedActions(tree, entry).rename) {
      this.#c.notify('error', `${entry.name} cannot be renamed.`);
      return;
    }
    const name = entry.name ?? '';
    const dot = name.lastIndexOf('.');
    const newName = await promptDialog({
      title: `Rename ${isDir(entry) ? 'folder' : 'file'}`,
      label: 'New name',
      value: name,
      select: [0, !isDir(entry) && dot > 0 ? dot : name.length],
      confirmLabel: 'Rename',
      validate: (v) => (v === name ? 'Enter a different name.' : entryNameProblem(v)),
      testid: 'rename-dialog',
    });
    if (newName === null) return;
    await this.#moveTo(tree, entry, joinPath(parentOf(entry.path ?? ''), newName));
  }

  async #move(tree: TreeState, entry: Entry): Promise<void> {
    if (!allowedActions(tree, entry).move) {
      this.#c.notify('error', `${entry.name} cannot be moved.`);
      return;
    }
    const from = parentOf(entry.path ?? '');
    const global = tree.workspace.scope === 'GLOBAL';
    const folder = await promptDialog({
      title: `Move ${entry.name}`,
      label: 'Destination folder (path inside this workspace; empty for the top level)',
      help: global ? 'In Global, files can only move within skills/.' : `Currently in ${from === '' ? 'the top level' : from}.`,
      value: '',
      suggestions: moveCandidates(tree, entry, from),
      confirmLabel: 'Move',
      validate: (v) => moveProblem(v, tree, entry, from),
      testid: 'move-dialog',
    });
    if (folder === null) return;
    await this.#moveTo(tree, entry, joinPath(normaliseFolderPath(folder) ?? '', entry.name ?? ''));
  }

  async #moveTo(tree: TreeState, entry: Entry, destination: string): Promise<void> {
    const scope = this.#c.state.scopes.current;
    if (!scope) return;
    const source = entry.path ?? '';
    try {
      const moved = await scope.guard(this.#c.api.moveEntry(scope.agentId, tree.workspace, entry, destination));
      const st = scope.state;
      // Keep an open file (and its unsaved text) when it or a folder above it moved.
      st.file = fileAfterMove(st.file, tree, entry, source, destination, moved);
      this.#c.succeeded();
      forget(tree, source);
      await this.afterMutation(scope, tree, [parentOf(source), parentOf(destination)]);
      tree.focusKey = 'e:' + destination;
      this.#c.state.focusAfterRender = tree.focusKey;
      this.#c.update();
    } catch (err) {
      this.#c.fail(err, `${entry.name} was not moved.`);
      if (isConflict(err) || asApiError(err).status === 404) await this.#c.tree.reloadDir(scope, tree, parentOf(source));
    }
  }

  async delete(tree: TreeState, entry: Entry): Promise<void> {
    const scope = this.#c.state.scopes.current;
    if (!scope) return;
    if (!allowedActions(tree, entry).delete) {
      this.#c.notify('error', `${entry.name} cannot be deleted.`);
      return;
    }
    const path = entry.path ?? '';
    const dir = isDir(entry);
    const st = scope.state;
    const losesEdits = ed.isDirty(st.file) && holdsOpenFile(st.file, tree, path);
    const ok = await confirmDialog({
      title: `Delete ${dir ? 'folder' : 'file'} ${entry.name}?`,
      body: [
        dir
          ? html`This deletes the folder <code>${path}</code>. If it is not empty, <strong>everything inside it is deleted recursively and
              permanently</strong>.`
          : html`This permanently deletes the file <code>${path}</code>.`,
        dir
          ? html`<strong>The deletion is permanent.</strong> With automatic checkpoints on (the default), a checkpoint of the folder is
              taken first: while it is kept, Checkpoints can bring it back.`
          : html`With automatic checkpoints on (the default), a checkpoint of the file is taken first: Undo, or Checkpoints while it is
              kept, brings it back. Without them the delete cannot be undone.`,
        ...(losesEdits ? [html`Your unsaved changes in the open file will be lost.`] : []),
      ],
      confirmLabel: dir ? 'Delete folder permanently' : 'Delete file permanently',
      danger: true,
      testid: 'delete-entry-dialog',
    });
    if (!ok || !scope.alive) return;
    try {
      const what = dir ? `the folder ${path}` : `the file ${path}`;
      const r = await deleteWithOverride(what, (skip) => scope.guard(this.#c.api.deleteEntry(scope.agentId, tree.workspace, entry, dir, skip)));
      if (holdsOpenFile(st.file, tree, path)) {
        this.#c.drafts.remove(scope.agentId, st.file.workspaceKey, st.file.path);
        this.#c.files.closeFile(st);
      }
      forget(tree, path);
      const auto = r.auto_checkpoint_id ?? '';
      this.#c.notify(
        'info',
        `${entry.name} was deleted.`,
        auto ? { label: 'Undo', testid: 'undo-delete', run: () => void this.#undoDelete(scope, tree, path, auto) } : undefined,
      );
      await this.afterMutation(scope, tree, [parentOf(path)]);
      if (parentOf(path) !== '') this.#c.tree.focusRow(tree, 'e:' + parentOf(path));
    } catch (err) {
      this.#c.fail(err, `${entry.name} was not deleted.`);
      if (isConflict(err) || asApiError(err).status === 404) await this.#c.tree.reloadDir(scope, tree, parentOf(path));
    }
  }

  /** Undo of a delete: restores path from the automatic checkpoint taken before it (compared first, as every restore). */
  async #undoDelete(scope: AgentScope<AgentState>, tree: TreeState, path: string, id: string): Promise<void> {
    if (!scope.alive) return;
    const ck = this.#c.ckpt;
    try {
      const cmp = await scope.guard(ck.compare(scope.agentId, tree.workspace, id, { path }));
      await scope.guard(ck.restore(scope.agentId, tree.workspace, id, path, cmp.plan_token ?? ''));
      this.#c.succeeded();
      this.#c.notify('info', `${baseName(path)} is back.`);
      await this.afterMutation(scope, tree, [parentOf(path)]);
    } catch (err) {
      this.#c.fail(err, `${baseName(path)} was not brought back.`);
    }
  }
}
