// Files and the tree: create, edit, save; lazy expansion and paging; rename, move, delete.
// Tests run in order (serial) and build on the state earlier ones (and
// earlier spec files) leave; the stack and page are fixtures.mjs's.
import { test, $, clickMenu, context, dialog, editorText, ensureSignedIn, eventually, expect, openProject, page, row, sa, setEditorText, shot } from './fixtures.mjs';

test.describe.configure({ mode: 'serial' });

test('files: create, edit and save a file; the bytes are on disk; Cancel restores', async () => {
  await ensureSignedIn();
  await openProject('demo');
  await $('[data-testid="root-new-file"]').click();
  const d = dialog('new-entry-dialog');
  await d.locator('input').fill('README.md');
  await d.locator('[data-action="confirm"]').click();
  await row('README.md').waitFor();
  await eventually(async () => (await $('[data-testid="file-path"]').textContent()) === 'README.md', 'new file opened');
  expect(sa.read('demo/README.md') === '', 'new file is empty on disk');
  const text = '# Demo project\n\nEdited in the **Agents** portal.\n\n- list item one\n- list item two\n';
  await setEditorText(text);
  await $('[data-testid="dirty"]').waitFor();
  await page.keyboard.press('Control+S');
  await $('[data-testid="clean"]').waitFor();
  expect(sa.read('demo/README.md') === text, 'saved text is on disk');
  // Cancel restores what was loaded.
  await $('.cm-content').click();
  await page.keyboard.press('Control+End');
  await page.keyboard.insertText('unsaved line');
  await $('[data-testid="dirty"]').waitFor();
  await $('[data-testid="cancel"]').click();
  await $('[data-testid="clean"]').waitFor();
  expect((await editorText()) === text, 'Cancel restored the loaded text');
  expect(!(await editorText()).includes('unsaved line'), 'Cancel dropped the unsaved line');
  expect(sa.read('demo/README.md') === text, 'disk unchanged by Cancel');
  // A second file with a language of its own, saved with the Save button.
  await $('[data-testid="root-new-folder"]').click();
  await dialog('new-entry-dialog').locator('input').fill('src');
  await dialog('new-entry-dialog').locator('[data-action="confirm"]').click();
  await row('src').waitFor();
  await row('src').click({ button: 'right' });
  await clickMenu('New file');
  await dialog('new-entry-dialog').locator('input').fill('main.go');
  await dialog('new-entry-dialog').locator('[data-action="confirm"]').click();
  await eventually(async () => (await $('[data-testid="file-path"]').textContent()) === 'src/main.go', 'main.go opened');
  const code = 'package main\n\nimport "fmt"\n\nfunc main() {\n\tfmt.Println("hello from the portal")\n}\n';
  await setEditorText(code);
  await $('[data-testid="save"]').click();
  await $('[data-testid="clean"]').waitFor();
  expect(sa.read('demo/src/main.go') === code, 'main.go on disk');
  expect((await $('.file-meta').textContent()).includes('Go'), 'Go language chosen by extension');
  await row('README.md').click();
  await eventually(async () => (await $('[data-testid="file-path"]').textContent()) === 'README.md', 'README opened');
  await shot('projects-editor.png');
});

test('tree: lazy expansion, "load more" paging and stale-cursor recovery', async () => {
  await ensureSignedIn();
  // Without live changes (issue #16), which would reload the folder before its cursor goes stale.
  await page.route('**/watch?**', (r) => r.abort());
  await openProject('paging');
  await row('big').waitFor();
  expect((await row('big').getAttribute('aria-expanded')) === 'false', 'directories start collapsed');
  await row('big').click();
  await row('big/f000.txt').waitFor();
  const count = () => page.locator('.tree-row[data-path^="big/"]').count();
  expect((await count()) === 100, `first page holds 100 entries (got ${await count()})`);
  await $('[data-testid="load-more"]').click();
  await eventually(async () => (await count()) === 130, 'second page appended');
  expect((await $('[data-testid="load-more"]').count()) === 0, 'no more pages');
  // Collapse/expand again, then change the directory between pages.
  await row('big').click();
  await sa.write('paging/big/a-new-file.txt', 'new\n');
  await row('big').click(); // expanded listing is kept; refresh from the menu
  await row('big').click({ button: 'right' });
  await clickMenu('Refresh');
  await eventually(async () => (await count()) === 100, 'refreshed to the first page');
  sa.write('paging/big/b-another.txt', 'changed while paging\n');
  // The directory changed after the first page: the server refuses the old cursor (Aborted/CURSOR_STALE)
  // and the portal reloads the directory from its first page.
  const stale = page.waitForResponse((r) => r.url().includes('/projects/entries?') && r.url().includes('cursor='));
  await $('[data-testid="load-more"]').click();
  const status = (await stale).status();
  expect(status === 409, `stale cursor answered 409 (got ${status})`);
  await eventually(async () => (await $('[data-testid="notice"]').textContent())?.includes('reloaded from the start'), 'reload notice');
  await row('paging/big/b-another.txt'.slice('paging/'.length)).waitFor();
  await eventually(async () => (await count()) === 100, 'first page again after the stale cursor');
  await $('[data-testid="load-more"]').click();
  await eventually(async () => (await count()) === 132, 'all 132 entries listed once');
  const paths = await page.locator('.tree-row[data-path^="big/"]').evaluateAll((els) => els.map((e) => e.dataset.path));
  expect(new Set(paths).size === paths.length, 'no duplicates');
  // Keyboard: arrows move, Left collapses, Enter opens.
  await row('big').focus();
  await page.keyboard.press('ArrowLeft');
  await eventually(async () => (await row('big').getAttribute('aria-expanded')) === 'false', 'ArrowLeft collapses');
  await page.keyboard.press('ArrowRight');
  await eventually(async () => (await row('big').getAttribute('aria-expanded')) === 'true', 'ArrowRight expands');
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('Enter');
  await eventually(async () => /^big\/.+\.txt$/.test((await $('[data-testid="file-path"]').textContent()) ?? ''), 'Enter opens a file');
  await page.unroute('**/watch?**');
});

test('entry actions: rename (F2), move (menu), delete with confirmation (Delete key, Shift+F10)', async () => {
  await ensureSignedIn();
  await openProject('demo');
  // New folder "docs" from the keyboard menu on "src".
  await row('src').focus();
  await page.keyboard.press('Shift+F10');
  await $('[data-testid="context-menu"]').waitFor();
  await page.keyboard.press('Escape');
  await eventually(async () => (await $('[data-testid="context-menu"]').count()) === 0, 'Esc closes the menu');
  await $('[data-testid="root-new-folder"]').click();
  await dialog('new-entry-dialog').locator('input').fill('docs');
  await dialog('new-entry-dialog').locator('[data-action="confirm"]').click();
  await row('docs').waitFor();
  // Server refusals come back as actionable messages (denylisted name, existing name).
  await $('[data-testid="root-new-folder"]').click();
  await dialog('new-entry-dialog').locator('input').fill('node_modules');
  await dialog('new-entry-dialog').locator('[data-action="confirm"]').click();
  await eventually(async () => (await $('[data-testid="notice"]').textContent())?.includes('protected list'), 'denylist message');
  await $('[data-testid="root-new-folder"]').click();
  await dialog('new-entry-dialog').locator('input').fill('docs');
  await dialog('new-entry-dialog').locator('[data-action="confirm"]').click();
  await eventually(async () => (await $('[data-testid="notice"]').textContent())?.includes('already exists'), 'already-exists message');
  // Dialogs trap focus: Tab from the last button wraps to the input.
  await $('[data-testid="root-new-file"]').click();
  const nd = dialog('new-entry-dialog');
  await nd.locator('input').fill('x.txt');
  await nd.locator('[data-action="confirm"]').focus();
  await page.keyboard.press('Tab');
  expect(await nd.locator('input').evaluate((el) => el === document.activeElement), 'Tab wraps inside the dialog');
  await page.keyboard.press('Shift+Tab');
  expect(await nd.locator('[data-action="confirm"]').evaluate((el) => el === document.activeElement), 'Shift+Tab wraps back');
  await page.keyboard.press('Escape');
  await eventually(async () => (await nd.count()) === 0, 'Esc closes');
  expect(await $('[data-testid="root-new-file"]').evaluate((el) => el === document.activeElement), 'focus returns to the opener');
  // Rename src/main.go -> src/app.go with F2.
  if ((await row('src').getAttribute('aria-expanded')) !== 'true') await row('src').click();
  await row('src/main.go').focus();
  await page.keyboard.press('F2');
  const rd = dialog('rename-dialog');
  await rd.waitFor();
  await rd.locator('input').fill('app.go');
  await rd.locator('[data-action="confirm"]').click();
  await row('src/app.go').waitFor();
  expect(sa.exists('demo/src/app.go') && !sa.exists('demo/src/main.go'), 'renamed on disk');
  // Move README.md into docs/ from the context menu.
  await row('README.md').click({ button: 'right' });
  await clickMenu('Move');
  const md = dialog('move-dialog');
  await md.locator('input').fill('docs');
  await md.locator('[data-action="confirm"]').click();
  await eventually(() => sa.exists('demo/docs/README.md') && !sa.exists('demo/README.md'), 'moved on disk');
  // Delete a non-empty folder: the confirmation says recursive and permanent.
  await row('src').focus();
  await page.keyboard.press('Delete');
  const dd = dialog('delete-entry-dialog');
  await dd.waitFor();
  const body = await dd.textContent();
  expect(/recursively and\s+permanently/.test(body) && body.includes('checkpoint'), 'delete text says recursive, permanent, and the automatic checkpoint');
  await dd.locator('[data-action="cancel"]').click();
  expect(sa.exists('demo/src/app.go'), 'cancel keeps the folder');
  await row('src').click({ button: 'right' });
  await clickMenu('Delete');
  await dialog('delete-entry-dialog').locator('[data-action="confirm"]').click();
  await eventually(async () => (await row('src').count()) === 0, 'folder gone from the tree');
  expect(!sa.exists('demo/src'), 'folder deleted on disk');
});
