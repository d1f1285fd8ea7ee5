// CodeMirror language support, loaded lazily: each language package is a
// dynamic import, so Vite puts it in a chunk of its own that the browser
// fetches the first time a file of that language is opened. Loaded languages
// are cached for the page's lifetime.
import type { LanguageSupport } from '@codemirror/language';
import type { LanguageId } from '../state/language';

export type LanguageLoader = () => Promise<LanguageSupport>;

/** One loader per language; 'plain' has none (no language support at all). */
export const LANGUAGE_LOADERS: Record<Exclude<LanguageId, 'plain'>, LanguageLoader> = {
  javascript: async () => (await import('@codemirror/lang-javascript')).javascript(),
  jsx: async () => (await import('@codemirror/lang-javascript')).javascript({ jsx: true }),
  typescript: async () => (await import('@codemirror/lang-javascript')).javascript({ typescript: true }),
  tsx: async () => (await import('@codemirror/lang-javascript')).javascript({ typescript: true, jsx: true }),
  json: async () => (await import('@codemirror/lang-json')).json(),
  // Markdown with an optional YAML front matter (--- … --- at the top, as in SKILL.md) highlighted as YAML.
  markdown: async () => {
    const [{ markdown }, { yamlFrontmatter }] = await Promise.all([import('@codemirror/lang-markdown'), import('@codemirror/lang-yaml')]);
    return yamlFrontmatter({ content: markdown() });
  },
  python: async () => (await import('@codemirror/lang-python')).python(),
  go: async () => (await import('@codemirror/lang-go')).go(),
  yaml: async () => (await import('@codemirror/lang-yaml')).yaml(),
  html: async () => (await import('@codemirror/lang-html')).html(),
  css: async () => (await import('@codemirror/lang-css')).css(),
};

/** A cache of loaded languages; a failed load is forgotten so the next open retries it. */
export class LanguageCache {
  readonly #loaded = new Map<LanguageId, Promise<LanguageSupport>>();
  readonly #loaders: Partial<Record<LanguageId, LanguageLoader>>;

  constructor(loaders: Partial<Record<LanguageId, LanguageLoader>> = LANGUAGE_LOADERS) {
    this.#loaders = loaders;
  }

  /** The language support for id, or null for plain text (or a language without a loader). */
  load(id: LanguageId): Promise<LanguageSupport> | null {
    const loader = this.#loaders[id];
    if (!loader) return null;
    let p = this.#loaded.get(id);
    if (!p) {
      p = loader();
      this.#loaded.set(id, p);
      p.catch(() => this.#loaded.delete(id));
    }
    return p;
  }
}
