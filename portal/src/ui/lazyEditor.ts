// The CodeMirror editor, loaded on demand: CodeMirror is most of the portal's
// script, and neither the sign-in page nor the project list needs it. The
// page asks for it (preload) once an admin is signed in, and any file opened
// before it has arrived is shown as soon as it has. Until then load/replace
// only remember the document, so nothing typed can be lost (there is no
// editor to type into yet).
import type { LanguageId } from '../state/language';
import type { CodeEditor } from './editor';

export class LazyEditor {
  /** Where the editor goes in the page; it holds CodeMirror's own element once loaded. */
  readonly dom: HTMLElement;
  readonly #onChange: (text: string) => void;
  readonly #onSave: () => void;
  #editor: CodeEditor | null = null;
  #loading: Promise<CodeEditor> | null = null;
  #pending: { text: string; lang: LanguageId } = { text: '', lang: 'plain' };

  constructor(onChange: (text: string) => void, onSave: () => void) {
    this.#onChange = onChange;
    this.#onSave = onSave;
    this.dom = document.createElement('div');
    this.dom.className = 'editor-host';
  }

  /** Starts loading CodeMirror (once; again after a failed attempt). */
  preload(): Promise<CodeEditor> {
    if (!this.#loading) {
      this.#loading = import('./editor').then(({ CodeEditor }) => {
        const editor = new CodeEditor(this.#onChange, this.#onSave);
        editor.load(this.#pending.text, this.#pending.lang);
        this.dom.replaceChildren(editor.view.dom);
        this.#editor = editor;
        return editor;
      });
      this.#loading.catch(() => {
        this.#loading = null;
        const p = document.createElement('p');
        p.className = 'inline-error';
        p.setAttribute('role', 'alert');
        p.textContent = 'The editor could not be loaded. Check your connection and reload the page.';
        this.dom.replaceChildren(p);
      });
    }
    return this.#loading;
  }

  /** Shows text as a fresh document in the given language. */
  load(text: string, lang: LanguageId): void {
    if (this.#editor) return this.#editor.load(text, lang);
    this.#pending = { text, lang };
    if (text !== '' || lang !== 'plain') void this.preload().catch(() => {});
  }

  /** Replaces the whole text (Cancel), keeping undo history. */
  replace(text: string): void {
    if (this.#editor) return this.#editor.replace(text);
    this.#pending = { ...this.#pending, text };
  }

  get text(): string {
    return this.#editor ? this.#editor.text : this.#pending.text;
  }

  focus(): void {
    this.#editor?.focus();
  }

  /** Goes to line of the document shown (once the editor has loaded). */
  gotoLine(line: number): void {
    if (this.#editor) return this.#editor.gotoLine(line);
    void this.preload()
      .then((e) => e.gotoLine(line))
      .catch(() => {});
  }
}
