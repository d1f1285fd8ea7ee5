// The editor's colours follow the system's light or dark mode
// (prefers-color-scheme), like the rest of the page (styles.css). The dark
// theme takes its surface colours from the page's CSS variables and brings a
// highlight style readable on a dark background; light mode keeps
// CodeMirror's defaults.
import { HighlightStyle, syntaxHighlighting } from '@codemirror/language';
import type { Extension } from '@codemirror/state';
import { EditorView } from '@codemirror/view';
import { tags as t } from '@lezer/highlight';

const darkHighlight = HighlightStyle.define([
  { tag: [t.keyword, t.operatorKeyword, t.modifier, t.controlKeyword], color: '#c792ea' },
  { tag: [t.string, t.special(t.string), t.regexp], color: '#c3e88d' },
  { tag: [t.number, t.bool, t.null, t.atom], color: '#f78c6c' },
  { tag: [t.comment, t.lineComment, t.blockComment], color: '#8a94a6', fontStyle: 'italic' },
  { tag: [t.function(t.variableName), t.function(t.propertyName)], color: '#82aaff' },
  { tag: [t.propertyName, t.attributeName], color: '#ffcb6b' },
  { tag: [t.typeName, t.className, t.namespace, t.tagName], color: '#89ddff' },
  { tag: [t.definition(t.variableName), t.variableName], color: '#e6e9ef' },
  { tag: [t.heading], color: '#82aaff', fontWeight: 'bold' },
  { tag: [t.emphasis], fontStyle: 'italic' },
  { tag: [t.strong], fontWeight: 'bold' },
  { tag: [t.link, t.url], color: '#89ddff', textDecoration: 'underline' },
  { tag: [t.meta, t.processingInstruction, t.punctuation, t.separator], color: '#a6accd' },
  { tag: t.invalid, color: '#ff6b6b' },
]);

const dark: Extension = [
  EditorView.theme(
    {
      '&': { color: 'var(--text)', backgroundColor: 'var(--panel)' },
      '.cm-content': { caretColor: '#e6e9ef' },
      '.cm-cursor, .cm-dropCursor': { borderLeftColor: '#e6e9ef' },
      '&.cm-focused .cm-selectionBackground, .cm-selectionBackground, .cm-content ::selection': { backgroundColor: '#2f4a7a' },
      '.cm-gutters': { backgroundColor: 'var(--bg)', color: 'var(--muted)', borderRight: '1px solid var(--border)' },
      '.cm-activeLine': { backgroundColor: '#ffffff0a' },
      '.cm-activeLineGutter': { backgroundColor: '#ffffff10' },
      '.cm-panels': { backgroundColor: 'var(--bg)', color: 'var(--text)' },
      '.cm-tooltip': { backgroundColor: 'var(--panel)', border: '1px solid var(--border)' },
      '.cm-matchingBracket': { backgroundColor: '#ffffff22', outline: 'none' },
    },
    { dark: true },
  ),
  syntaxHighlighting(darkHighlight),
];

const query = () => (typeof window !== 'undefined' && window.matchMedia ? window.matchMedia('(prefers-color-scheme: dark)') : null);

export function isDark(): boolean {
  return !!query()?.matches;
}

/** The theme for the current mode. */
export function themeFor(darkMode: boolean): Extension {
  return darkMode ? dark : [];
}

/** Calls onChange(dark) whenever the system switches between light and dark. */
export function watchColorScheme(onChange: (dark: boolean) => void): void {
  query()?.addEventListener('change', (e) => onChange(e.matches));
}
