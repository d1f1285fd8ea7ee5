import { describe, expect, it } from 'vitest';
import { ApiError } from '../api/errors';
import { canSave, cancel, edit, isDirty, openFile, reloaded, saveFailed, saveStarted, saveSucceeded } from './editorState';

const errorInfo = (reason: string) => ({
  code: 10,
  message: 'revision mismatch',
  details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason, domain: 'workspace.agentworkspace.dev' }],
});

function loaded(text = 'hello\n', rev = 'r1') {
  return openFile('PROJECT:demo', 'a.txt', {
    entry: { path: 'a.txt', name: 'a.txt', type: 'ENTRY_TYPE_FILE', editable: true, revision: rev, size: String(text.length) },
    content: text,
  });
}

describe('dirty tracking', () => {
  it('is clean when loaded and after typing back the same text', () => {
    let f = loaded();
    expect(isDirty(f)).toBe(false);
    f = edit(f, 'hello world\n');
    expect(isDirty(f)).toBe(true);
    f = edit(f, 'hello\n');
    expect(isDirty(f)).toBe(false);
  });

  it('Cancel restores the loaded text', () => {
    const f = cancel(edit(loaded(), 'changed'));
    expect(f.text).toBe('hello\n');
    expect(isDirty(f)).toBe(false);
  });

  it('a non-editable file is never dirty and cannot be saved', () => {
    const f = openFile('PROJECT:demo', 'b.bin', {
      entry: { path: 'b.bin', editable: false, non_editable_reason: 'NON_EDITABLE_REASON_BINARY', revision: 'r' },
      content: 'ignored',
    });
    expect(f.text).toBe('');
    expect(isDirty(edit(f, 'x'))).toBe(false);
    expect(canSave(edit(f, 'x'))).toBe(false);
  });

  it('save success makes the saved text the new baseline and keeps later typing dirty', () => {
    let f = saveStarted(edit(loaded(), 'v2'));
    expect(canSave(f)).toBe(false); // no double save while saving
    f = edit(f, 'v3'); // typed while the save was in flight
    f = saveSucceeded(f, { path: 'a.txt', revision: 'r2', editable: true }, 'v2');
    expect(f.revision).toBe('r2');
    expect(f.loadedText).toBe('v2');
    expect(isDirty(f)).toBe(true);
    expect(canSave(f)).toBe(true);
  });
});

describe('conflict handling', () => {
  it('a REVISION_MISMATCH keeps the local text and blocks saving (no force save)', () => {
    const f0 = saveStarted(edit(loaded(), 'my text'));
    const { file, conflict } = saveFailed(f0, ApiError.from(409, errorInfo('REVISION_MISMATCH')));
    expect(conflict).toBe(true);
    expect(file.conflict).toBe(true);
    expect(file.text).toBe('my text');
    expect(file.revision).toBe('r1');
    expect(isDirty(file)).toBe(true);
    expect(canSave(file)).toBe(false);
  });

  it('reloading the server version replaces local text and clears the conflict', () => {
    const { file } = saveFailed(edit(loaded(), 'mine'), ApiError.from(409, errorInfo('REVISION_MISMATCH')));
    const f = reloaded(file, { entry: { path: 'a.txt', editable: true, revision: 'r9' }, content: 'theirs' });
    expect(f.text).toBe('theirs');
    expect(f.loadedText).toBe('theirs');
    expect(f.revision).toBe('r9');
    expect(f.conflict).toBe(false);
    expect(isDirty(f)).toBe(false);
  });

  it('other save errors keep the text but are not conflicts', () => {
    const { file, conflict } = saveFailed(
      saveStarted(edit(loaded(), 'mine')),
      ApiError.from(503, { code: 14, message: 'x', details: [] }),
    );
    expect(conflict).toBe(false);
    expect(file.conflict).toBe(false);
    expect(file.text).toBe('mine');
    expect(canSave(file)).toBe(true);
  });

  it('a CURSOR_STALE (also Aborted/409) is not a save conflict', () => {
    expect(saveFailed(loaded(), ApiError.from(409, errorInfo('CURSOR_STALE'))).conflict).toBe(false);
  });
});

describe('merge of a refused save', async () => {
  const { mergedOnto, openFile: open, isDirty: dirty, savedAsNew } = await import('./editorState');
  it('bases the merged text on the disk revision, dirty until saved', () => {
    const f = { ...open('PROJECT:demo', 'a.txt', { entry: { revision: 'r1', editable: true }, content: 'one\n' }), text: 'mine\n', conflict: true };
    const m = mergedOnto(f, { entry: { revision: 'r2', editable: true }, content: 'disk\n' }, 'merged\n');
    expect(m).toMatchObject({ revision: 'r2', loadedText: 'disk\n', text: 'merged\n', conflict: false });
    expect(dirty(m)).toBe(true);
    expect(dirty(mergedOnto(f, { entry: { revision: 'r2', editable: true }, content: 'disk\n' }, 'disk\n'))).toBe(false);
  });
  it('a file saved again as new is clean at its new revision', () => {
    const f = { ...open('PROJECT:demo', 'a.txt', { entry: { revision: 'r1', editable: true }, content: '' }), text: 'kept\n', conflict: true };
    expect(savedAsNew(f, { revision: 'r9' }, 'kept\n')).toMatchObject({ revision: 'r9', loadedText: 'kept\n', conflict: false });
  });
});
