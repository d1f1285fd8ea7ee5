import { describe, expect, it } from 'vitest';
import { restoreLineEndings, splitLines } from './lineEndings';

// What CodeMirror gives back for a text: lines joined with LF.
const cm = (text: string) => splitLines(text).lines.join('\n');

describe('restoreLineEndings', () => {
  const cases: [string, string][] = [
    ['LF', 'a\nb\nc\n'],
    ['CRLF', 'a\r\nb\r\nc\r\n'],
    ['mixed', 'a\r\nb\nc\r\nd\re'],
    ['BOM, tabs, no final newline', '\ufeff\tx = 1\r\n\ty = 2'],
    ['empty', ''],
    ['blank lines', '\r\n\r\n\r\n'],
  ];
  for (const [name, text] of cases) {
    it(`${name}: unedited text comes back byte for byte`, () => {
      expect(restoreLineEndings(text, cm(text))).toBe(text);
    });
  }

  it('CRLF: an added line changes only the added bytes', () => {
    const o = 'one\r\ntwo\r\nthree\r\n';
    const edited = cm(o).replace('two\n', 'two\nadded\n');
    expect(restoreLineEndings(o, edited)).toBe('one\r\ntwo\r\nadded\r\nthree\r\n');
  });

  it('mixed: an edited line keeps its own separator, the others theirs', () => {
    const o = 'a\r\nb\nc\r\nd\n';
    expect(restoreLineEndings(o, cm(o).replace('b', 'B'))).toBe('a\r\nB\nc\r\nd\n');
    expect(restoreLineEndings(o, cm(o).replace('a', 'A').replace('c', 'C'))).toBe('A\r\nb\nC\r\nd\n');
  });

  it('a deleted line takes its separator with it', () => {
    const o = 'a\r\nb\nc\r\n';
    expect(restoreLineEndings(o, 'a\nc\n')).toBe('a\r\nc\r\n');
  });

  it('a line added at the end of a file without a final newline uses the common separator', () => {
    expect(restoreLineEndings('a\r\nb', 'a\nb\nc')).toBe('a\r\nb\r\nc');
  });

  it('BOM and tabs are kept when a line is added', () => {
    const o = '\ufeff\tx\r\n\ty';
    expect(restoreLineEndings(o, '\ufeff\tx\n\tnew\n\ty')).toBe('\ufeff\tx\r\n\tnew\r\n\ty');
  });

  it('LF files pass through unchanged', () => {
    const edited = 'x\ny\n';
    expect(restoreLineEndings('a\nb\n', edited)).toBe(edited);
  });
});
