// Name rules checked as the user types. They mirror the server's rules so the
// user learns about a bad name before sending it; the server still decides.

/** The server's project name rule (PRD §7.3). */
export const PROJECT_NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** Returns why name is not a valid project name, or null when it is. */
export function projectNameProblem(name: string): string | null {
  if (name === '') return 'Enter a project name.';
  if (name === '.' || name === '..') return 'A project cannot be named "." or "..".';
  if (name.length > 128) return 'Use at most 128 characters.';
  if (!/^[A-Za-z0-9]/.test(name)) return 'Start with a letter or a digit.';
  if (!PROJECT_NAME_RE.test(name)) return 'Use only letters, digits, ".", "_" and "-".';
  return null;
}

/** Returns why name cannot name a file or folder, or null when it can. */
export function entryNameProblem(name: string): string | null {
  if (name === '') return 'Enter a name.';
  if (name === '.' || name === '..') return 'A name cannot be "." or "..".';
  if (name.includes('/')) return 'A name cannot contain "/". Use Move to change the folder.';
  if (name.includes('\0')) return 'A name cannot contain NUL characters.';
  if (name.trim() !== name) return 'A name cannot start or end with spaces.';
  if (new TextEncoder().encode(name).length > 255) return 'The name is too long.';
  return null;
}

/**
 * Normalises a folder path typed by the user ("", "/", "a/b/", "/a/b") to the
 * API form ("" for the root, "a/b" otherwise). Returns null when it is not a
 * clean relative path.
 */
export function normaliseFolderPath(input: string): string | null {
  const trimmed = input.trim().replace(/^\/+/, '').replace(/\/+$/, '');
  if (trimmed === '') return '';
  const parts = trimmed.split('/');
  for (const p of parts) {
    if (p === '' || p === '.' || p === '..' || p.includes('\0')) return null;
  }
  return parts.join('/');
}

export function joinPath(dir: string, name: string): string {
  return dir === '' ? name : `${dir}/${name}`;
}

export function parentOf(path: string): string {
  const i = path.lastIndexOf('/');
  return i < 0 ? '' : path.slice(0, i);
}

export function baseName(path: string): string {
  const i = path.lastIndexOf('/');
  return i < 0 ? path : path.slice(i + 1);
}

/** True when path is ancestor itself or lies below it. */
export function isWithin(path: string, ancestor: string): boolean {
  if (ancestor === '') return true;
  return path === ancestor || path.startsWith(ancestor + '/');
}
