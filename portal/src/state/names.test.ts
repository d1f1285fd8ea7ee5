import { describe, expect, it } from 'vitest';
import { entryNameProblem, isWithin, joinPath, normaliseFolderPath, parentOf, projectNameProblem, PROJECT_NAME_RE } from './names';

describe('projectNameProblem', () => {
  it.each([
    ['demo', null],
    ['A', null],
    ['9lives', null],
    ['my.project_v2-final', null],
    ['a'.repeat(128), null],
  ])('accepts %s', (name, want) => {
    expect(projectNameProblem(name)).toBe(want);
    expect(PROJECT_NAME_RE.test(name)).toBe(true);
  });

  it.each([
    ['', 'Enter a project name.'],
    ['.', 'A project cannot be named "." or "..".'],
    ['..', 'A project cannot be named "." or "..".'],
    ['.hidden', 'Start with a letter or a digit.'],
    ['-x', 'Start with a letter or a digit.'],
    ['_x', 'Start with a letter or a digit.'],
    ['a b', 'Use only letters, digits, ".", "_" and "-".'],
    ['a/b', 'Use only letters, digits, ".", "_" and "-".'],
    ['ünïcode', 'Start with a letter or a digit.'],
    ['a'.repeat(129), 'Use at most 128 characters.'],
  ])('rejects %j', (name, want) => {
    expect(projectNameProblem(name)).toBe(want);
  });
});

describe('entryNameProblem', () => {
  it('accepts ordinary names, including dotfiles and spaces inside', () => {
    for (const n of ['README.md', '.env', 'my file.txt', 'ünï.md']) expect(entryNameProblem(n)).toBeNull();
  });
  it('rejects empty, dot names, slashes, NUL and edge spaces', () => {
    for (const n of ['', '.', '..', 'a/b', 'a\0b', ' x', 'x ']) expect(entryNameProblem(n)).not.toBeNull();
  });
});

describe('paths', () => {
  it('normalises folder paths typed by the user', () => {
    expect(normaliseFolderPath('')).toBe('');
    expect(normaliseFolderPath('/')).toBe('');
    expect(normaliseFolderPath('/src/lib/')).toBe('src/lib');
    expect(normaliseFolderPath('src//lib')).toBeNull();
    expect(normaliseFolderPath('src/../x')).toBeNull();
  });
  it('joins, splits and tests containment', () => {
    expect(joinPath('', 'a')).toBe('a');
    expect(joinPath('a', 'b')).toBe('a/b');
    expect(parentOf('a/b/c')).toBe('a/b');
    expect(parentOf('a')).toBe('');
    expect(isWithin('a/b', 'a')).toBe(true);
    expect(isWithin('ab', 'a')).toBe(false);
    expect(isWithin('a', 'a')).toBe(true);
  });
});
