// Picks the CodeMirror language for a file from its extension.

export type LanguageId =
  | 'javascript'
  | 'jsx'
  | 'typescript'
  | 'tsx'
  | 'json'
  | 'markdown'
  | 'python'
  | 'go'
  | 'yaml'
  | 'html'
  | 'css'
  | 'plain';

const BY_EXTENSION: Record<string, LanguageId> = {
  js: 'javascript',
  mjs: 'javascript',
  cjs: 'javascript',
  jsx: 'jsx',
  ts: 'typescript',
  mts: 'typescript',
  cts: 'typescript',
  tsx: 'tsx',
  json: 'json',
  jsonc: 'json',
  md: 'markdown',
  markdown: 'markdown',
  py: 'python',
  pyi: 'python',
  go: 'go',
  yaml: 'yaml',
  yml: 'yaml',
  html: 'html',
  htm: 'html',
  css: 'css',
};

export function languageForPath(path: string): LanguageId {
  const name = path.slice(path.lastIndexOf('/') + 1);
  const dot = name.lastIndexOf('.');
  if (dot <= 0) return 'plain'; // no extension, or a dotfile like ".env"
  return BY_EXTENSION[name.slice(dot + 1).toLowerCase()] ?? 'plain';
}

export const LANGUAGE_LABEL: Record<LanguageId, string> = {
  javascript: 'JavaScript',
  jsx: 'JavaScript (JSX)',
  typescript: 'TypeScript',
  tsx: 'TypeScript (TSX)',
  json: 'JSON',
  markdown: 'Markdown',
  python: 'Python',
  go: 'Go',
  yaml: 'YAML',
  html: 'HTML',
  css: 'CSS',
  plain: 'Plain text',
};
