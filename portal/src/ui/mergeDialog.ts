// The merge view of a refused save (@codemirror/merge, loaded on demand with
// the editor): your text on the left, editable, against the version on disk
// on the right; the arrows between them take a hunk of the disk's version
// into yours. "Save merged" hands back the left side, which the caller saves
// against the disk's revision shown here (never a blind overwrite).
import { MergeView } from '@codemirror/merge';
import { basicSetup } from 'codemirror';
import { EditorState } from '@codemirror/state';
import { EditorView } from '@codemirror/view';
import { html } from 'lit-html';
import { modal } from './dialogs';

export interface MergeOptions {
  path: string;
  /** Your text (the left side, the result). */
  mine: string;
  /** The version on disk now (the right side, read-only). */
  disk: string;
}

export function mergeDialog(o: MergeOptions): Promise<string | null> {
  const host = document.createElement('div');
  host.className = 'merge-host';
  host.dataset['testid'] = 'merge-view';
  const view = new MergeView({
    a: { doc: o.mine, extensions: [basicSetup, EditorView.lineWrapping] },
    b: { doc: o.disk, extensions: [basicSetup, EditorView.lineWrapping, EditorState.readOnly.of(true), EditorView.editable.of(false)] },
    parent: host,
    revertControls: 'b-to-a',
    highlightChanges: true,
    gutter: true,
  });
  const done = modal<string | null>(
    ({ close, id }) =>
      () => html`
        <h2 id="${id}-title">Merge ${o.path}</h2>
        <div id="${id}-body" class="dialog-body">
          <p>
            Your save was refused: the file changed on disk since you opened it. Left: <strong>your text</strong> (editable). Right: the
            <strong>version on disk</strong>. Use the arrows to take a change from the disk into yours, edit as you like, then save the
            merged text over the version shown on the right.
          </p>
        </div>
        <div class="merge-heads"><span>Your text</span><span>On disk now</span></div>
        ${host}
        <div class="dialog-actions">
          <button type="button" class="btn" data-action="cancel" @click=${() => close(null)}>Keep editing</button>
          <button type="button" class="btn" data-action="take-disk" @click=${() => setMine(view, o.disk)}>Take all from disk</button>
          <button type="button" class="btn btn-primary" data-action="save-merged" @click=${() => close(view.a.state.doc.toString())}>
            Save merged
          </button>
        </div>
      `,
    { cancelValue: null, testid: 'merge-dialog', focus: '[data-action="save-merged"]' },
  );
  return done.finally(() => view.destroy());
}

function setMine(view: MergeView, text: string): void {
  view.a.dispatch({ changes: { from: 0, to: view.a.state.doc.length, insert: text } });
}
