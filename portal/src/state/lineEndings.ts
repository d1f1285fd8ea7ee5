// CodeMirror splits a document on CRLF, CR and LF and gives its text back
// joined with LF. A file saved from it would lose its CRLF (or mixed) line
// endings on every line. restoreLineEndings puts them back: lines that are
// unchanged keep the separator they had, lines the user typed get the
// separator of the line they replace (else the file's most common one), so
// an edit changes only the bytes that were edited, and undoing every edit
// gives back the original text exactly. A BOM, tabs and a missing final
// newline are plain characters to CodeMirror and need nothing.

const SEP = /\r\n|\r|\n/g;

export interface Split {
  lines: string[];
  /** seps[i] ends lines[i]; one fewer than lines. */
  seps: string[];
}

export function splitLines(text: string): Split {
  const lines: string[] = [];
  const seps: string[] = [];
  let last = 0;
  for (const m of text.matchAll(SEP)) {
    lines.push(text.slice(last, m.index));
    seps.push(m[0]);
    last = m.index! + m[0].length;
  }
  lines.push(text.slice(last));
  return { lines, seps };
}

/** The separator used most in text ("\n" when it has none). */
export function dominantSeparator(seps: string[]): string {
  const n: Record<string, number> = {};
  let best = '\n';
  let bestN = 0;
  for (const s of seps) {
    n[s] = (n[s] ?? 0) + 1;
    if (n[s]! > bestN) {
      best = s;
      bestN = n[s]!;
    }
  }
  return best;
}

/** Largest middle (lines × lines) matched line by line; beyond it changed regions take the positional separator. */
const MAX_CELLS = 4_000_000;

/** For each line of b, the index of the line of a it is kept from, or -1 (a longest common subsequence). */
function matchLines(a: string[], b: string[]): Int32Array {
  const match = new Int32Array(b.length).fill(-1);
  let p = 0;
  while (p < a.length && p < b.length && a[p] === b[p]) {
    match[p] = p;
    p++;
  }
  let s = 0;
  while (s < a.length - p && s < b.length - p && a[a.length - 1 - s] === b[b.length - 1 - s]) {
    match[b.length - 1 - s] = a.length - 1 - s;
    s++;
  }
  const n = a.length - p - s;
  const m = b.length - p - s;
  if (n === 0 || m === 0 || (n + 1) * (m + 1) > MAX_CELLS) return match;
  // LCS table over the middle, from the end so the walk goes forwards.
  const w = m + 1;
  const t = new Uint32Array((n + 1) * w);
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      t[i * w + j] = a[p + i] === b[p + j] ? t[(i + 1) * w + j + 1]! + 1 : Math.max(t[(i + 1) * w + j]!, t[i * w + j + 1]!);
    }
  }
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (a[p + i] === b[p + j]) {
      match[p + j] = p + i;
      i++;
      j++;
    } else if (t[(i + 1) * w + j]! >= t[i * w + j + 1]!) i++;
    else j++;
  }
  return match;
}

/**
 * edited is the editor's text (any separators); original the file as loaded.
 * Returns edited with original's line separators restored.
 */
export function restoreLineEndings(original: string, edited: string): string {
  const o = splitLines(original);
  if (o.seps.every((s) => s === '\n')) {
    // An LF file: only separators the editor would not have produced need care.
    return edited.includes('\r') ? edited.replace(/\r\n?/g, '\n') : edited;
  }
  const e = splitLines(edited);
  const dominant = dominantSeparator(o.seps);
  const match = matchLines(o.lines, e.lines);
  let out = '';
  // Lines of b between two kept lines replace the lines of a between them:
  // the k-th new line takes the k-th old line's separator.
  let prevA = -1; // index in a of the last kept line
  let gap = 0; // new lines since it
  for (let j = 0; j < e.lines.length; j++) {
    out += e.lines[j];
    if (j === e.lines.length - 1) break;
    let sep: string | undefined;
    const k = match[j]!;
    if (k >= 0) {
      prevA = k;
      gap = 0;
      sep = o.seps[k];
    } else {
      const at = prevA + 1 + gap;
      // Only lines of a that were not kept can lend a separator.
      const nextKept = nextMatched(match, j);
      if (at < o.seps.length && (nextKept < 0 || at < nextKept)) sep = o.seps[at];
      gap++;
    }
    out += sep ?? dominant;
  }
  return out;
}

function nextMatched(match: Int32Array, j: number): number {
  for (let i = j + 1; i < match.length; i++) if (match[i]! >= 0) return match[i]!;
  return -1;
}
