import { describe, expect, it } from 'vitest';
import type { Entry } from '../api/types';
import { GLOBAL, project } from './appState';
import { edit, openFile } from './editorState';
import { allowedActions, fileAfterMove, holdsOpenFile, moveCandidates, moveProblem, refreshedDirs, skillTemplate } from './entryActions';
import { dirState, newTree } from './tree';

const dir = (path: string): Entry => ({ path, name: path.split('/').pop(), type: 'ENTRY_TYPE_DIRECTORY' });
const file = (path: string, revision = 'r1'): Entry => ({ path, name: path.split('/').pop(), type: 'ENTRY_TYPE_FILE', editable: true, revision });

function projectTree() {
  const t = newTree(project('demo'));
  dirState(t, '').listing = { items: [dir('src'), dir('docs'), file('README.md')], nextCursor: '', loaded: true };
  const src = dirState(t, 'src');
  src.expanded = true;
  src.listing = { items: [dir('src/lib'), file('src/a.ts')], nextCursor: '', loaded: true };
  return t;
}

describe('allowed actions', () => {
  it('keeps Global\u2019s skills root and AGENTS.md in place', () => {
    const g = newTree(GLOBAL);
    expect(allowedActions(g, dir('skills'))).toEqual({ create: true, rename: false, move: false, delete: false });
    expect(allowedActions(g, file('AGENTS.md'))).toEqual({ create: false, rename: false, move: false, delete: true });
    expect(allowedActions(g, dir('skills/review'))).toEqual({ create: true, rename: true, move: true, delete: true });
    expect(allowedActions(projectTree(), dir('skills'))).toEqual({ create: true, rename: true, move: true, delete: true });
  });
});

describe('move', () => {
  it('offers the listed folders except where it is and (for a folder) itself and below', () => {
    const t = projectTree();
    expect(moveCandidates(t, file('src/a.ts'), 'src')).toEqual(['', 'docs', 'src/lib']);
    expect(moveCandidates(t, dir('src'), '')).toEqual(['docs']);
  });

  it('in Global offers and accepts only folders inside skills', () => {
    const g = newTree(GLOBAL);
    dirState(g, '').listing = { items: [dir('skills'), file('AGENTS.md')], nextCursor: '', loaded: true };
    dirState(g, 'skills').listing = { items: [dir('skills/a'), dir('skills/b')], nextCursor: '', loaded: true };
    const e = file('skills/a/x.md');
    expect(moveCandidates(g, e, 'skills/a')).toEqual(['skills', 'skills/b']);
    expect(moveProblem('', g, e, 'skills/a')).toBe('In Global, choose a folder inside skills.');
    expect(moveProblem('other', g, e, 'skills/a')).toBe('In Global, choose a folder inside skills.');
    expect(moveProblem('skills/b', g, e, 'skills/a')).toBeNull();
  });

  it('refuses unclean paths, the same folder and a folder into itself', () => {
    const t = projectTree();
    expect(moveProblem('../x', t, file('src/a.ts'), 'src')).toMatch(/without "\." or "\.\." segments/);
    expect(moveProblem('/src/', t, file('src/a.ts'), 'src')).toBe('That is where it already is.');
    expect(moveProblem('src/lib', t, dir('src'), '')).toBe('A folder cannot be moved into itself.');
    expect(moveProblem('', t, file('src/a.ts'), 'src')).toBeNull();
  });

  it('keeps the open file\u2019s unsaved text under its new path, and takes the moved file\u2019s new revision', () => {
    const t = projectTree();
    const f = edit(openFile('PROJECT:demo', 'src/a.ts', { entry: file('src/a.ts', 'r1'), content: 'x' }), 'mine');
    const moved = fileAfterMove(f, t, file('src/a.ts'), 'src/a.ts', 'docs/a.ts', file('docs/a.ts', 'r2'))!;
    expect(moved).toMatchObject({ path: 'docs/a.ts', text: 'mine', revision: 'r2', entry: { path: 'docs/a.ts', name: 'a.ts', revision: 'r2' } });
    // A folder above it moved: new path, the file's own revision is unchanged.
    const below = fileAfterMove(f, t, dir('src'), 'src', 'code', dir('code'))!;
    expect(below).toMatchObject({ path: 'code/a.ts', text: 'mine', revision: 'r1', entry: { name: 'a.ts' } });
    // Another file, or another workspace: untouched.
    expect(fileAfterMove(f, t, file('README.md'), 'README.md', 'docs/README.md', file('docs/README.md'))).toBe(f);
    expect(fileAfterMove(f, newTree(GLOBAL), dir('src'), 'src', 'code', dir('code'))).toBe(f);
    expect(fileAfterMove(null, t, dir('src'), 'src', 'code', dir('code'))).toBeNull();
  });

  it('knows which deletions take the open file with them', () => {
    const t = projectTree();
    const f = openFile('PROJECT:demo', 'src/lib/x.ts', { entry: file('src/lib/x.ts'), content: '' });
    expect(holdsOpenFile(f, t, 'src')).toBe(true);
    expect(holdsOpenFile(f, t, 'src/lib/x.ts')).toBe(true);
    expect(holdsOpenFile(f, t, 'src/li')).toBe(false);
    expect(holdsOpenFile(f, newTree(GLOBAL), 'src')).toBe(false);
  });
});

describe('Refresh', () => {
  it('lists the root and every expanded, loaded folder again', () => {
    const t = projectTree();
    dirState(t, 'docs'); // known, collapsed
    const lib = dirState(t, 'src/lib');
    lib.expanded = true; // expanded, never listed
    expect(refreshedDirs(t)).toEqual(['', 'src']);
  });
});

describe('skillTemplate', () => {
  it('has the front matter Codex reads', () => {
    expect(skillTemplate('review')).toMatch(/^---\nname: review\ndescription: .+\n---\n\n# review\n/);
  });
});
