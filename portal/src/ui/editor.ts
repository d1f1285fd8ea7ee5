// CodeMirror 6 wrapper: one editor view, reused for every file; the document
// (and its undo history) is replaced when another file is opened, and the
// language follows the file's extension.
import { basicSetup } from 'codemirror';
import { Compartment, EditorState, type Extension } from '@codemirror/state';
import { EditorView, keymap } from '@codemirror/view';
import { javascript } from '@codemirror/lang-javascript';
import { json } from '@codemirror/lang-json';
import { markdown } from '@codemirror/lang-markdown';
import { python } from '@codemirror/lang-python';
import { go } from '@codemirror/lang-go';
import { yaml } from '@codemirror/lang-yaml';
import { html } from '@codemirror/lang-html';
import { css } from '@codemirror/lang-css';
import type { LanguageId } from '../state/language';

export function languageExtension(id: LanguageId): Extension {
  switch (id) {
    case 'javascript':
      return javascript();
    case 'jsx':
      return javascript({ jsx: true });
    case 'typescript':
      return javascript({ typescript: true });
    case 'tsx':
      return javascript({ typescript: true, jsx: true });
    case 'json':
      return json();
    case 'markdown':
      return markdown();
    case 'python':
      return python();
    case 'go':
      return go();
    case 'yaml':
      return yaml();
    case 'html':
      return html();
    case 'css':
      return css();
    case 'plain':
      return [];
  }
}

export class CodeEditor {
  readonly view: EditorView;
  readonly #language = new Compartment();
  readonly #onChange: (text: string) => void;
  readonly #onSave: () => void;
  #silent = false;

  constructor(onChange: (text: string) => void, onSave: () => void) {
    this.#onChange = onChange;
    this.#onSave = onSave;
    this.view = new EditorView({ state: this.#state('', 'plain') });
    this.view.dom.classList.add('cm-host');
    this.view.dom.setAttribute('data-testid', 'code-editor');
  }

  #state(text: string, lang: LanguageId): EditorState {
    return EditorState.create({
      doc: text,
      extensions: [
        keymap.of([
          {
            key: 'Mod-s',
            preventDefault: true,
            run: () => {
              this.#onSave();
              return true;
            },
          },
        ]),
        basicSetup,
        EditorView.lineWrapping,
        this.#language.of(languageExtension(lang)),
        EditorView.contentAttributes.of({ 'aria-label': 'File content' }),
        EditorView.updateListener.of((u) => {
          if (u.docChanged && !this.#silent) this.#onChange(u.state.doc.toString());
        }),
      ],
    });
  }

  /** Shows text as a fresh document (new undo history) in the given language. */
  load(text: string, lang: LanguageId): void {
    this.#silent = true;
    try {
      this.view.setState(this.#state(text, lang));
    } finally {
      this.#silent = false;
    }
  }

  /** Replaces the whole text (Cancel), keeping undo history so it can be undone. */
  replace(text: string): void {
    if (this.text === text) return;
    this.#silent = true;
    try {
      this.view.dispatch({ changes: { from: 0, to: this.view.state.doc.length, insert: text } });
    } finally {
      this.#silent = false;
    }
  }

  get text(): string {
    return this.view.state.doc.toString();
  }

  focus(): void {
    this.view.focus();
  }
}
