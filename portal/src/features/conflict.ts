// A refused save ends in a merge, never a dead end: the version on disk is
// loaded and shown against your text (ui/mergeDialog.ts, loaded on demand),
// and the merged text is saved against the disk's revision shown (If-Match:
// never a blind overwrite; a further change on disk refuses it again and the
// merge opens again). A file deleted on disk can be saved again as a new
// file: created first (refused if a file of that name appeared meanwhile),
// then written.
import { asApiError } from '../api/errors';
import type { GetFileResponse } from '../api/types';
import type { ConflictsPort, FilesPort, Shell } from './ports';
import * as ed from '../state/editorState';
import { stillOpen, workspaceOf } from '../state/fileFlow';
import { languageForPath } from '../state/language';
import { baseName, parentOf } from '../state/names';
import { confirmDialog } from '../ui/dialogs';

/** What the merge of a refused save needs of the page (a narrow part of context.ts, ports.ts). */
export interface ConflictContext extends Pick<Shell, 'state' | 'api' | 'notify' | 'fail' | 'update' | 'succeeded'> {
  readonly files: Pick<FilesPort, 'save' | 'loadEditor'>;
}

export class Conflicts implements ConflictsPort {
  readonly #c: ConflictContext;
  /** A merge or save-as-new question is open (Ctrl+S reaches both the page and the editor's keymap). */
  #busy = false;

  constructor(c: ConflictContext) {
    this.#c = c;
  }

  /** The merge view of the open file's refused save; saving the merged text against the disk's revision. */
  async resolve(): Promise<void> {
    if (this.#busy) return;
    this.#busy = true;
    let save = false;
    try {
      save = await this.#resolve();
    } finally {
      this.#busy = false;
    }
    // After the question closed: a save refused again opens the merge again.
    if (save) await this.#c.files.save();
  }

  /** True when the merged text is to be saved. */
  async #resolve(): Promise<boolean> {
    const scope = this.#c.state.scopes.current;
    const f = scope?.state.file;
    if (!scope || !f) return false;
    let disk: GetFileResponse;
    try {
      disk = await scope.guard(this.#c.api.getFile(scope.agentId, workspaceOf(f.workspaceKey), f.path));
    } catch (err) {
      if (asApiError(err).status === 404) await this.#saveAsNew();
      else this.#c.fail(err, 'The version on disk could not be loaded for the merge.');
      return false;
    }
    if (disk.entry?.editable !== true) {
      this.#c.notify('error', `${f.path} on disk can no longer be edited here (binary or too large): copy your text to keep it.`);
      return false;
    }
    const { mergeDialog } = await import('../ui/mergeDialog');
    const merged = await mergeDialog({ path: f.path, mine: f.text, disk: disk.content ?? '' });
    const cur = scope.state.file;
    if (merged === null || !scope.alive || !stillOpen(cur, f)) return false;
    scope.state.file = ed.mergedOnto(cur, disk, merged);
    this.#c.files.loadEditor(merged, languageForPath(f.path));
    this.#c.succeeded();
    if (!ed.isDirty(scope.state.file)) {
      this.#c.notify('info', `Your text now is the version on disk of ${f.path}: nothing to save.`);
      return false;
    }
    return true;
  }

  /** The open file was deleted on disk: save its text again as a new file (refused if one of that name appeared). */
  async saveAsNew(): Promise<void> {
    if (this.#busy) return;
    this.#busy = true;
    try {
      await this.#saveAsNew();
    } finally {
      this.#busy = false;
    }
  }

  async #saveAsNew(): Promise<void> {
    const scope = this.#c.state.scopes.current;
    const f = scope?.state.file;
    if (!scope || !f) return;
    const ok = await confirmDialog({
      title: `${f.path} was deleted`,
      body: [
        'The file was deleted on disk after you opened it. Save your text as a new file at the same path?',
        'If a file of that name has appeared meanwhile, nothing is overwritten.',
      ],
      confirmLabel: 'Save as new file',
      cancelLabel: 'Keep editing',
      testid: 'save-as-new-dialog',
    });
    if (!ok || !scope.alive) return;
    const ws = workspaceOf(f.workspaceKey);
    const text = f.text;
    try {
      const created = await scope.guard(this.#c.api.createEntry(scope.agentId, ws, parentOf(f.path), baseName(f.path), 'ENTRY_TYPE_FILE'));
      const entry = await scope.guard(this.#c.api.updateFile(scope.agentId, ws, f.path, text, created.revision ?? ''));
      const cur = scope.state.file;
      if (stillOpen(cur, f)) scope.state.file = ed.savedAsNew(cur, entry, text);
      this.#c.succeeded();
      this.#c.notify('info', `Saved ${f.path} as a new file.`);
    } catch (err) {
      this.#c.fail(err, `${f.path} was not saved as a new file.`);
    }
  }
}
