// The open file: conflicts, dirty guards, non-editable files.
// Tests run in order (serial) and build on the state earlier ones (and
// earlier spec files) leave; the stack and page are fixtures.mjs's.
import fs from 'node:fs';
import path from 'node:path';
import { test, $, checkNoLeaks, clickMenu, dialog, editorText, ensureSignedIn, eventually, expect, openProject, page, projectRow, row, sa, selectAgent, setEditorText, shot } from './fixtures.mjs';

test.describe.configure({ mode: 'serial' });

test('conflict: a file changed behind the editor keeps the local text; reload and copy offered', async () => {
  await ensureSignedIn();
  await openProject('demo');
  if ((await row('docs').getAttribute('aria-expanded')) !== 'true') await row('docs').click();
  await row('docs/README.md').click();
  await eventually(async () => (await $('[data-testid="file-path"]').textContent()) === 'docs/README.md', 'file opened');
  const mine = '# Demo project\n\nMy local edit that must survive a conflict.\n';
  await setEditorText(mine);
  const theirs = '# Demo project\n\nWritten by the agent meanwhile.\n';
  sa.write('demo/docs/README.md', theirs);
  await page.keyboard.press('Control+S');
  // One notice: the merge view (yours against the disk), no force save.
  const cd = dialog('merge-dialog');
  await cd.waitFor();
  const t = await cd.textContent();
  expect(t.includes('changed on disk'), 'conflict message');
  expect((await cd.locator('button', { hasText: /force|overwrite/i }).count()) === 0, 'no force save');
  expect((await page.locator('dialog[open]').count()) === 1, 'one dialog');
  await checkNoLeaks('conflict dialog');
  await shot('conflict-dialog.png');
  await cd.locator('[data-action="cancel"]').click();
  expect((await editorText()).includes('My local edit'), 'local text kept in the editor');
  await $('[data-testid="conflict-banner"]').waitFor();
  expect(await $('[data-testid="save"]').isDisabled(), 'Save disabled while in conflict');
  await page.locator('[data-testid="conflict-banner"] button', { hasText: 'Copy my version' }).click();
  await eventually(async () => (await page.evaluate(() => navigator.clipboard.readText())) === mine, 'clipboard holds my version');
  expect(sa.read('demo/docs/README.md') === theirs, 'disk keeps the other writer');
  await page.locator('[data-testid="conflict-banner"] button', { hasText: 'Reload server version' }).click();
  await eventually(async () => (await editorText()).includes('Written by the agent'), 'server version reloaded');
  await $('[data-testid="clean"]').waitFor();
});

test('dirty guards: switching file, project, tab and agent asks first; leaving the page too', async () => {
  await ensureSignedIn();
  await openProject('demo');
  if ((await row('docs').getAttribute('aria-expanded')) !== 'true') await row('docs').click();
  await row('docs/README.md').click();
  await eventually(async () => (await $('[data-testid="file-path"]').textContent()) === 'docs/README.md', 'file opened');
  await $('.cm-content').click();
  await page.keyboard.press('Control+End');
  await page.keyboard.insertText('dirty text');
  await $('[data-testid="dirty"]').waitFor();
  const guard = dialog('discard-dialog');
  const keep = async (what) => {
    await guard.waitFor({ timeout: 5000 }).catch(() => {
      throw new Check(`no unsaved-changes dialog when ${what}`);
    });
    await guard.locator('[data-action="cancel"]').click();
    await eventually(async () => (await guard.count()) === 0, 'dialog closed');
    expect((await editorText()).includes('dirty text'), `text kept after declining (${what})`);
  };
  await projectRow('alpha-only').locator('.project-name').click(); // the guard blocks the switch
  await keep('switching project');
  expect((await $('.sidebar-section.files h2').textContent()).includes('demo'), 'still in project demo');
  await $('[data-testid="tab-global"]').click();
  await keep('switching tab');
  expect((await $('[data-testid="tab-projects"]').getAttribute('aria-selected')) === 'true', 'still on Projects');
  await selectAgent('codex-b');
  await keep('switching agent');
  expect((await $('[data-testid="agent-select"]').inputValue()) === 'codex-a', 'agent selector reset');
  // Leaving the page: beforeunload.
  let seen = '';
  const onDialog = async (d) => {
    seen = d.type();
    await d.dismiss();
  };
  page.on('dialog', onDialog);
  await page.evaluate(() => {
    location.href = '/?leave';
  });
  await eventually(() => seen === 'beforeunload', 'beforeunload prompt shown');
  page.off('dialog', onDialog);
  expect((await editorText()).includes('dirty text'), 'still on the page after cancelling the unload');
  // Switching file and confirming discards.
  await row('docs').click({ button: 'right' });
  await clickMenu('New file');
  await dialog('new-entry-dialog').locator('input').fill('other.txt');
  await dialog('new-entry-dialog').locator('[data-action="confirm"]').click();
  await guard.waitFor();
  await guard.locator('[data-action="confirm"]').click();
  await eventually(async () => (await $('[data-testid="file-path"]').textContent()) === 'docs/other.txt', 'switched after discarding');
  expect(!sa.read('demo/docs/README.md').includes('dirty text'), 'discarded text never saved');
});

test('non-editable: a binary file shows metadata and the reason, with no save; a download is offered', async () => {
  await ensureSignedIn();
  sa.write('demo/logo.bin', Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x00, 0x01, 0xff, 0x00, 0x10]));
  sa.write('demo/latin1.txt', Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0a]));
  await openProject('alpha-only');
  await openProject('demo');
  await row('logo.bin').click();
  await $('[data-testid="non-editable"]').waitFor();
  expect((await $('[data-testid="non-editable-reason"]').textContent()).includes('binary'), 'reason: binary');
  expect((await $('[data-testid="non-editable"]').textContent()).includes('10 B'), 'size shown');
  expect((await $('[data-testid="save"]').count()) === 0, 'no Save');
  expect((await $('.cm-editor').count()) === 0, 'no editor');
  // Issue #25: a file the editor cannot show is offered for download instead.
  expect((await page.locator('a[download], button', { hasText: /download/i }).count()) >= 1, 'a download is offered');
  await row('latin1.txt').click();
  await eventually(async () => (await $('[data-testid="non-editable-reason"]').textContent()).includes('UTF-8'), 'reason: not UTF-8');
  sa.write('demo/huge.log', 'x'.repeat(1024 * 1024 + 10));
  // A second hard link to a canary file inside this test's own volume.
  const canary = sa.write('demo/linked-a.txt', 'canary\n');
  fs.linkSync(canary, path.join(path.dirname(canary), 'linked-b.txt'));
  await row('latin1.txt').click({ button: 'right' });
  await page.keyboard.press('Escape');
  await $('.sidebar-section.files h2').click();
  await projectRow('alpha-only').locator('.project-name').click();
  await openProject('demo');
  await row('huge.log').click();
  await eventually(async () => (await $('[data-testid="non-editable-reason"]').textContent()).includes('larger than 1 MiB'), 'reason: too large');
  expect((await $('[data-testid="non-editable"]').textContent()).includes('1.0 MiB'), 'size of the large file shown');
  expect((await $('[data-testid="save"]').count()) === 0, 'no Save for the large file');
  await row('linked-b.txt').click();
  await eventually(async () => (await $('[data-testid="non-editable-reason"]').textContent()).includes('more than one hard link'), 'reason: hard links');
  await row('latin1.txt').click();
  await eventually(async () => (await $('[data-testid="file-path"]').textContent()) === 'latin1.txt', 'latin1 shown for the screenshot');
  await shot('non-editable.png');
});
