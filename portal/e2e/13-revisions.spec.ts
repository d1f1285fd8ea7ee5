// Revert, Reload and revisions after a save (issue #14).
// Tests run in order (serial) and build on the state earlier ones (and
// earlier spec files) leave; the stack and page are fixtures.mjs's.
import { test, $, dialog, editorText, endOfLine, eventually, expect, onAgentA, openFile, openProject, page, row, sa, sleep } from './fixtures.mjs';

test.describe.configure({ mode: 'serial' });

test('revert is undoable; Reload and the tree\'s Refresh show what changed elsewhere', async () => {
  await onAgentA();
  await openProject('keep');
  await openFile('draft.txt');
  const saved = await editorText();
  await endOfLine(0);
  await page.keyboard.insertText(' typed');
  await $('[data-testid="dirty"]').waitFor();
  await $('[data-testid="cancel"]').click();
  await $('[data-testid="clean"]').waitFor();
  expect((await editorText()) === saved, 'reverted to the saved text');
  await $('[data-testid="undo-revert"]').click();
  await $('[data-testid="dirty"]').waitFor();
  expect((await editorText()).includes(' typed'), 'Undo brings the typed text back');
  await $('[data-testid="cancel"]').click();
  await $('[data-testid="clean"]').waitFor();
  // A clean open file changed by the agent: Reload shows it.
  sa.write('keep/draft.txt', 'agent wrote this\n');
  await $('[data-testid="reload-file"]').click();
  await eventually(async () => (await editorText()) === 'agent wrote this\n', 'Reload shows the new version');
  // The tree's Refresh: the open file and the listed folders.
  if ((await row('sub').getAttribute('aria-expanded')) !== 'true') await row('sub').click();
  await row('sub/a.txt').waitFor();
  sa.write('keep/draft.txt', 'and then this\n');
  sa.write('keep/sub/new.txt', 'new\n');
  await $('[data-testid="refresh-files"]').click();
  await eventually(async () => (await editorText()) === 'and then this\n', 'Refresh reloads the open, clean file');
  await row('sub/new.txt').waitFor();
  // A dirty file is never replaced by Refresh.
  await endOfLine(0);
  await page.keyboard.insertText(' mine');
  await $('[data-testid="dirty"]').waitFor();
  sa.write('keep/draft.txt', 'behind the editor\n');
  await $('[data-testid="refresh-files"]').click();
  await sleep(500);
  expect((await editorText()) === 'and then this mine\n', 'unsaved text kept on Refresh');
  await $('[data-testid="reload-file"]').click();
  await dialog('discard-dialog').waitFor();
  await dialog('discard-dialog').locator('[data-action="confirm"]').click();
  await eventually(async () => (await editorText()) === 'behind the editor\n', 'Reload after confirming');
});

test('revisions: rename, move and delete right after a save succeed; a stale error clears once a retry succeeds', async () => {
  await onAgentA();
  await openProject('keep');
  if ((await row('sub').getAttribute('aria-expanded')) !== 'true') await row('sub').click();
  await openFile('sub/a.txt');
  await endOfLine(0);
  await page.keyboard.insertText(' saved');
  await page.keyboard.press('Control+S');
  await $('[data-testid="clean"]').waitFor();
  // Rename the file just saved (its revision changed).
  await row('sub/a.txt').focus();
  await page.keyboard.press('F2');
  await dialog('rename-dialog').locator('input').fill('b.txt');
  await dialog('rename-dialog').locator('[data-action="confirm"]').click();
  await row('sub/b.txt').waitFor();
  expect(sa.exists('keep/sub/b.txt'), 'renamed on disk right after the save');
  // Save inside the folder, then rename the folder (its revision changed with the save).
  await openFile('sub/b.txt');
  await endOfLine(0);
  await page.keyboard.insertText(' again');
  await page.keyboard.press('Control+S');
  await $('[data-testid="clean"]').waitFor();
  await row('sub').focus();
  await page.keyboard.press('F2');
  await dialog('rename-dialog').locator('input').fill('moved');
  await dialog('rename-dialog').locator('[data-action="confirm"]').click();
  await row('moved').waitFor();
  expect(sa.exists('keep/moved/b.txt'), 'folder renamed right after a save inside it');
  expect((await $('[data-testid="notice"]').count()) === 0 || !(await $('[data-testid="notice"]').textContent()).includes('changed elsewhere'), 'no conflict');
  // Save, then delete the file.
  if ((await row('moved').getAttribute('aria-expanded')) !== 'true') await row('moved').click();
  await openFile('moved/b.txt');
  await endOfLine(0);
  await page.keyboard.insertText('!');
  await page.keyboard.press('Control+S');
  await $('[data-testid="clean"]').waitFor();
  await row('moved/b.txt').focus();
  await page.keyboard.press('Delete');
  await dialog('delete-entry-dialog').locator('[data-action="confirm"]').click();
  await eventually(() => !sa.exists('keep/moved/b.txt'), 'deleted on disk right after the save');
  await eventually(async () => (await row('moved/b.txt').count()) === 0, 'gone from the tree');
  await sleep(300); // the folder listings reloaded after the delete have arrived
  // A rename refused because the agent changed the file: the error goes once the retry succeeds.
  if (!(await row('moved/new.txt').count())) await row('moved').click();
  await row('moved/new.txt').waitFor();
  await row('moved/new.txt').focus();
  await page.keyboard.press('F2');
  await dialog('rename-dialog').locator('input').fill('renamed.txt');
  // The agent writes while the dialog is open, just before the click: written
  // earlier, the live feed can bring the new revision to the tree first and
  // the rename rightly succeeds.
  sa.write('keep/moved/new.txt', 'changed by the agent\n');
  await dialog('rename-dialog').locator('[data-action="confirm"]').click();
  await eventually(async () => (await $('[data-testid="notice"]').textContent())?.includes('was not moved'), 'stale rename refused');
  await row('moved/new.txt').focus();
  await page.keyboard.press('F2');
  await dialog('rename-dialog').locator('input').fill('renamed.txt');
  await dialog('rename-dialog').locator('[data-action="confirm"]').click();
  await row('moved/renamed.txt').waitFor();
  await eventually(async () => (await $('[data-testid="notice"][role="alert"]').count()) === 0, 'the stale error is gone after the retry succeeded');
});
