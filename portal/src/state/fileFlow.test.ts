import { describe, expect, it } from 'vitest';
import { GLOBAL, project } from './appState';
import type { Draft } from './drafts';
import { cancel, edit, openFile, saveSucceeded } from './editorState';
import {
  closesWhenGone,
  draftStep,
  listingsAfterSave,
  openWithDraft,
  refreshReplaces,
  stillOpen,
  undoRevertApplies,
  workspaceOf,
} from './fileFlow';
import { dirState, listingsToReload, newTree, patchEntry, workspaceKey } from './tree';

const fileEntry = (path: string, rev: string, editable = true) => ({
  path,
  name: path.split('/').pop(),
  type: 'ENTRY_TYPE_FILE' as const,
  editable,
  revision: rev,
});
const open = (path = 'src/a.txt', text = 'one\r\n', rev = 'r1', editable = true) =>
  openFile('PROJECT:demo', path, { entry: fileEntry(path, rev, editable), content: text });
const draft = (text: string, baseRevision: string): Draft => ({
  agentId: 'codex-a',
  workspaceKey: 'PROJECT:demo',
  path: 'src/a.txt',
  baseRevision,
  text,
  savedAt: 1,
});

describe('workspaceOf', () => {
  it('is the inverse of workspaceKey, also for names with a colon', () => {
    for (const ws of [GLOBAL, project('demo'), project('a:b')]) expect(workspaceOf(workspaceKey(ws))).toEqual(ws);
  });
});

describe('drafts of the open file', () => {
  it('stores unsaved text, forgets a clean file, and keeps none for a read-only one', () => {
    expect(draftStep(null)).toBe('none');
    expect(draftStep(open())).toBe('remove');
    expect(draftStep(edit(open(), 'two\r\n'))).toBe('put');
    expect(draftStep(open('b.bin', '', 'r1', false))).toBe('none');
  });

  it('restores a draft onto the revision it was typed on, saying whether the file changed since', () => {
    const same = openWithDraft(open(), draft('mine\r\n', 'r1'));
    expect(same).toMatchObject({ restored: true, dropDraft: false, file: { text: 'mine\r\n', revision: 'r1', loadedText: 'one\r\n' } });
    expect(same.notice).toBe('Your unsaved changes to src/a.txt were restored.');
    const moved = openWithDraft(open('src/a.txt', 'one\r\n', 'r2'), draft('mine\r\n', 'r1'));
    // The save then goes out with r1 and takes the conflict path.
    expect(moved.file.revision).toBe('r1');
    expect(moved.notice).toContain('changed elsewhere since');
  });

  it('drops a draft that holds the server text, and ignores drafts of read-only files', () => {
    expect(openWithDraft(open(), draft('one\r\n', 'r0'))).toMatchObject({ restored: false, dropDraft: true, notice: '', file: { revision: 'r1' } });
    expect(openWithDraft(open(), null)).toMatchObject({ restored: false, dropDraft: false });
    const ro = open('src/a.txt', '', 'r1', false);
    expect(openWithDraft(ro, draft('mine', 'r1'))).toMatchObject({ restored: false, dropDraft: false, file: ro });
  });
});

describe('after a save', () => {
  it('reloads the listing that holds the saved file\u2019s folder, so the tree holds both new revisions', () => {
    expect(listingsAfterSave('README.md')).toEqual([]);
    expect(listingsAfterSave('src/a.txt')).toEqual(['']);
    expect(listingsAfterSave('src/lib/a.txt')).toEqual(['src']);

    const t = newTree(project('demo'));
    dirState(t, '').listing = { items: [{ path: 'src', name: 'src', type: 'ENTRY_TYPE_DIRECTORY', revision: 'd1' }], nextCursor: '', loaded: true };
    dirState(t, 'src').listing = { items: [fileEntry('src/a.txt', 'r1')], nextCursor: '', loaded: true };
    const f = edit(open(), 'two\r\n');
    const saved = saveSucceeded(f, fileEntry('src/a.txt', 'r2'), 'two\r\n');
    // The file's own entry comes from the save's answer; a rename right after uses r2, not r1.
    expect(patchEntry(t, saved.entry)).toBe(true);
    expect(dirState(t, 'src').listing.items[0]!.revision).toBe('r2');
    expect(saved.revision).toBe('r2');
    expect(listingsToReload(t, listingsAfterSave(saved.path))).toEqual(['']);
  });

  it('applies an answer only while the same file is open', () => {
    const f = open();
    expect(stillOpen(edit(f, 'x'), f)).toBe(true);
    expect(stillOpen(open('src/b.txt'), f)).toBe(false);
    expect(stillOpen(null, f)).toBe(false);
    // The same path in another project (the user switched project meanwhile).
    const other = openFile('PROJECT:other', 'src/a.txt', { entry: fileEntry('src/a.txt', 'r1'), content: 'one\r\n' });
    expect(stillOpen(other, f)).toBe(false);
    expect(closesWhenGone(other, f)).toBe(false);
    expect(closesWhenGone(open(), f)).toBe(true);
  });
});

describe('a dirty editor on refresh, reload and revert', () => {
  const server = (rev: string) => ({ entry: fileEntry('src/a.txt', rev), content: 'theirs\r\n' });

  it('Refresh shows a newer version only in a clean editor', () => {
    const f = open();
    expect(refreshReplaces(f, f, server('r2'))).toBe(true);
    expect(refreshReplaces(f, f, server('r1'))).toBe(false);
    expect(refreshReplaces(edit(f, 'mine'), f, server('r2'))).toBe(false);
    expect(refreshReplaces(open('src/b.txt'), f, server('r2'))).toBe(false);
    expect(refreshReplaces({ ...f, workspaceKey: 'GLOBAL:' }, f, server('r2'))).toBe(false);
  });

  it('a file gone on the server closes only when nothing unsaved is in it', () => {
    const f = open();
    expect(closesWhenGone(f, f)).toBe(true);
    expect(closesWhenGone(edit(f, 'mine'), f)).toBe(false);
    expect(closesWhenGone(null, f)).toBe(false);
  });

  it('Undo of a Revert applies to the same file while nothing was typed since', () => {
    const reverted = cancel(edit(open(), 'mine'));
    expect(undoRevertApplies(reverted, 'src/a.txt')).toBe(true);
    expect(undoRevertApplies(edit(reverted, 'typed again'), 'src/a.txt')).toBe(false);
    expect(undoRevertApplies(open('src/b.txt'), 'src/a.txt')).toBe(false);
  });
});
