import { describe, expect, it } from 'vitest';
import { languageForPath } from './language';

describe('languageForPath', () => {
  it.each([
    ['src/app.js', 'javascript'],
    ['x.mjs', 'javascript'],
    ['x.jsx', 'jsx'],
    ['a/b/c.ts', 'typescript'],
    ['C.TSX', 'tsx'],
    ['package.json', 'json'],
    ['AGENTS.md', 'markdown'],
    ['skills/x/SKILL.markdown', 'markdown'],
    ['main.py', 'python'],
    ['main.go', 'go'],
    ['ci.yml', 'yaml'],
    ['k8s.yaml', 'yaml'],
    ['index.html', 'html'],
    ['site.css', 'css'],
    ['Makefile', 'plain'],
    ['.env', 'plain'],
    ['notes.txt', 'plain'],
    ['archive.tar.gz', 'plain'],
    ['dir.d/file', 'plain'],
  ])('%s -> %s', (path, want) => {
    expect(languageForPath(path)).toBe(want);
  });
});
