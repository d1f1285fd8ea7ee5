import { describe, expect, it, vi } from 'vitest';
import type { LanguageSupport } from '@codemirror/language';
import { languageForPath, type LanguageId } from '../state/language';
import { LANGUAGE_LOADERS, LanguageCache } from './languages';

// From a file name to the CodeMirror language the editor ends up with: the
// extension mapping (language.ts) and the lazy loader behind each id.
describe('language loaders', () => {
  it.each([
    ['src/app.js', 'javascript'],
    ['x.jsx', 'javascript'],
    ['a/b/c.ts', 'typescript'],
    ['C.TSX', 'typescript'],
    ['package.json', 'json'],
    ['AGENTS.md', 'yaml-frontmatter'], // Markdown inside, with YAML front matter
    ['main.py', 'python'],
    ['main.go', 'go'],
    ['ci.yml', 'yaml'],
    ['index.html', 'html'],
    ['site.css', 'css'],
  ])('%s loads the %s language', async (path, want) => {
    const support = await new LanguageCache().load(languageForPath(path));
    expect(support?.language.name).toBe(want);
  });

  it('JSX and TSX get the JSX dialects of JavaScript and TypeScript', async () => {
    const js = await import('@codemirror/lang-javascript');
    const cache = new LanguageCache();
    expect((await cache.load(languageForPath('x.jsx')))?.language).toBe(js.jsxLanguage);
    expect((await cache.load(languageForPath('x.tsx')))?.language).toBe(js.tsxLanguage);
    expect((await cache.load(languageForPath('x.ts')))?.language).toBe(js.typescriptLanguage);
    expect((await cache.load(languageForPath('x.js')))?.language).toBe(js.javascriptLanguage);
  });

  it('plain text has no loader and loads nothing', () => {
    expect(new LanguageCache().load(languageForPath('Makefile'))).toBeNull();
    expect(Object.keys(LANGUAGE_LOADERS)).not.toContain('plain');
  });

  it('every language id but plain has a loader', () => {
    const ids: LanguageId[] = ['javascript', 'jsx', 'typescript', 'tsx', 'json', 'markdown', 'python', 'go', 'yaml', 'html', 'css'];
    expect(Object.keys(LANGUAGE_LOADERS).sort()).toEqual([...ids].sort());
  });

  it('loads each language once and retries after a failed load', async () => {
    const support = { language: { name: 'go' } } as unknown as LanguageSupport;
    const go = vi.fn<() => Promise<LanguageSupport>>().mockRejectedValueOnce(new Error('chunk failed')).mockResolvedValue(support);
    const cache = new LanguageCache({ go });
    await expect(cache.load('go')).rejects.toThrow('chunk failed');
    expect(await cache.load('go')).toBe(support);
    expect(await cache.load('go')).toBe(support);
    expect(go).toHaveBeenCalledTimes(2);
  });
});
