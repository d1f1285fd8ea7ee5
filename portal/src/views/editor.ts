// The editor pane: the open file's head (path, saved state, Reload, size,
// modification time, language), the conflict banner, CodeMirror with Revert
// and Save, or why a file cannot be edited here.
import { html, nothing, type TemplateResult } from 'lit-html';
import { describeError } from '../api/errors';
import type { WorkspaceRef } from '../api/types';
import type { AgentState } from '../state/appState';
import * as ed from '../state/editorState';
import { formatSize, formatTime, reasonText } from '../state/format';
import { LANGUAGE_LABEL, languageForPath } from '../state/language';

export interface EditorHandlers {
  /** Where CodeMirror lives (LazyEditor.dom). */
  editorDom: HTMLElement;
  retryOpen: (ws: WorkspaceRef, path: string) => void;
  copyMine: () => void;
  reloadServer: () => void;
  merge: () => void;
  reload: () => void;
  revert: () => void;
  save: () => void;
  /** Downloads the open file as it is on disk (a binary or large file too). */
  download: () => void;
}

export function editorView(st: AgentState, h: EditorHandlers): TemplateResult {
  if (st.fileLoading && !st.file) return html`<div class="placeholder"><p>Opening ${st.fileLoading}…</p></div>`;
  if (st.fileError) {
    const fe = st.fileError;
    return html`<div class="placeholder" role="alert" data-testid="file-error">
      <p>${fe.path} could not be opened. ${describeError(fe.error)}</p>
      <button class="btn btn-primary" @click=${() => h.retryOpen(fe.ws, fe.path)}>Retry</button>
    </div>`;
  }
  const f = st.file;
  if (!f) {
    return html`<div class="placeholder"><p>Select a file in the tree to view or edit it.</p>
      <p class="muted">Keyboard: arrow keys move, Enter opens, F2 renames, Delete deletes, Shift+F10 opens the actions menu.</p></div>`;
  }
  const dirty = ed.isDirty(f);
  const lang = languageForPath(f.path);
  return html`<div class="file-head" data-testid="file-head">
      <div class="file-path"><code data-testid="file-path">${f.path}</code>
        ${f.editable
          ? dirty
            ? html`<span class="dirty" data-testid="dirty" title="Unsaved changes">● Unsaved changes</span>`
            : html`<span class="clean" data-testid="clean">Saved</span>`
          : nothing}
      </div>
      <div class="file-meta">
        <button class="btn btn-small" data-testid="reload-file" title="Load the server's current version of this file" ?disabled=${f.saving} @click=${h.reload}>
          Reload
        </button>
        <span>${formatSize(f.entry.size)}</span><span>Modified ${formatTime(f.entry.modified_at)}</span>${f.editable
          ? html`<span>${LANGUAGE_LABEL[lang]}</span>`
          : nothing}
      </div>
    </div>
    ${f.conflict
      ? html`<div class="conflict-banner" role="alert" data-testid="conflict-banner">
          <strong>The file was changed elsewhere.</strong> Your text below was not saved: merge it with the version on disk.
          <span class="banner-actions">
            <button
              class="btn btn-small"
              @click=${h.copyMine}
            >
              Copy my version
            </button>
            <button class="btn btn-small" @click=${h.reloadServer}>Reload server version</button>
            <button class="btn btn-small btn-primary" data-testid="conflict-merge" @click=${h.merge}>Merge…</button>
          </span>
        </div>`
      : nothing}
    ${f.editable
      ? html`<div class="editor-box">${h.editorDom}</div>
          <div class="editor-actions">
            <span class="muted">${navigator.platform.startsWith('Mac') ? '⌘S' : 'Ctrl+S'} saves. Nothing is saved automatically.</span>
            <button class="btn" data-testid="cancel" title="Back to the saved text (undoable)" ?disabled=${!dirty || f.saving} @click=${h.revert}>
              Revert
            </button>
            <button class="btn btn-primary" data-testid="save" ?disabled=${!ed.canSave(f)} @click=${h.save}>
              ${f.saving ? 'Saving…' : 'Save'}
            </button>
          </div>`
      : html`<div class="non-editable" data-testid="non-editable">
          <h2>This file cannot be edited here</h2>
          <p data-testid="non-editable-reason">${reasonText(f.entry.non_editable_reason)}</p>
          <dl>
            <dt>Path</dt><dd><code>${f.path}</code></dd>
            <dt>Size</dt><dd>${formatSize(f.entry.size)}</dd>
            <dt>Modified</dt><dd>${formatTime(f.entry.modified_at)}</dd>
          </dl>
          <p>
            <button class="btn btn-primary" data-testid="download-file" @click=${h.download}>Download</button>
          </p>
          <p class="muted">Or use the agent's own tools or a WebDAV client to work with it.</p>
        </div>`}`;
}
