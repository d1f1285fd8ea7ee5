// CodeMirror 6 wrapper: one editor view, reused for every file; the document
// (and its undo history) is replaced when another file is opened, and the
// language follows the file's extension. Language packages are loaded lazily
// (languages.ts): a file shows as plain text until its language has arrived,
// then the language is switched on without touching the text or undo history.
import { basicSetup } from 'codemirror';
import { Compartment, EditorState } from '@codemirror/state';
import { EditorView, keymap } from '@codemirror/view';
import type { LanguageId } from '../state/language';
import { LanguageCache } from './languages';
import { isDark, themeFor, watchColorScheme } from './theme';

export class CodeEditor {
  readonly view: EditorView;
  readonly #language = new Compartment();
  readonly #theme = new Compartment();
  #dark = isDark();
  readonly #onChange: (text: string) => void;
  readonly #onSave: () => void;
  readonly #languages = new LanguageCache();
  #generation = 0; // bumped on every load: a late language for an older document is dropped
  #silent = false;

  constructor(onChange: (text: string) => void, onSave: () => void) {
    this.#onChange = onChange;
    this.#onSave = onSave;
    this.view = new EditorView({ state: this.#state('') });
    this.view.dom.classList.add('cm-host');
    this.view.dom.setAttribute('data-testid', 'code-editor');
    this.view.dom.dataset.theme = this.#dark ? 'dark' : 'light';
    watchColorScheme((dark) => {
      this.#dark = dark;
      this.view.dom.dataset.theme = dark ? 'dark' : 'light';
      this.view.dispatch({ effects: this.#theme.reconfigure(themeFor(dark)) });
    });
  }

  #state(text: string): EditorState {
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
        this.#language.of([]),
        this.#theme.of(themeFor(this.#dark)),
        EditorView.contentAttributes.of({ 'aria-label': 'File content' }),
        EditorView.updateListener.of((u) => {
          if (u.docChanged && !this.#silent) this.#onChange(u.state.doc.toString());
        }),
      ],
    });
  }

  /** Shows text as a fresh document (new undo history) in the given language. */
  load(text: string, lang: LanguageId): void {
    const generation = ++this.#generation;
    this.#silent = true;
    try {
      this.view.setState(this.#state(text));
    } finally {
      this.#silent = false;
    }
    this.view.dom.dataset.language = 'plain';
    const pending = this.#languages.load(lang);
    if (!pending) return;
    this.view.dom.dataset.language = 'loading';
    pending.then(
      (support) => {
        if (generation !== this.#generation) return;
        this.view.dispatch({ effects: this.#language.reconfigure(support) });
        this.view.dom.dataset.language = lang;
      },
      () => {
        // The chunk could not be fetched (offline, redeployed): the file stays editable as plain text.
        if (generation === this.#generation) this.view.dom.dataset.language = 'plain';
      },
    );
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

  /** Selects line (1-based, clamped), scrolls it to the middle and focuses the editor (a search result). */
  gotoLine(line: number): void {
    const doc = this.view.state.doc;
    const l = doc.line(Math.min(Math.max(1, line), doc.lines));
    this.view.dispatch({ selection: { anchor: l.from, head: l.to }, effects: EditorView.scrollIntoView(l.from, { y: 'center' }) });
    this.view.dom.dataset.line = String(l.number);
    this.view.focus();
  }
}
