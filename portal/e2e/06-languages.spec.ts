// The editor's languages, each loaded on first use.
// Tests run in order (serial) and build on the state earlier ones (and
// earlier spec files) leave; the stack and page are fixtures.mjs's.
import { test, $, LANGUAGE_FILES, clickMenu, dialog, editorText, ensureSignedIn, eventually, expect, openProject, page, pageErrors, projectRow, requested, row, sa } from './fixtures.mjs';

test.describe.configure({ mode: 'serial' });

test('editor: each language family is loaded on first use and highlights its file; a file delete asks first', async () => {
  await ensureSignedIn();
  // A fresh page load fetches no language chunk until a file needs one.
  requested.length = 0;
  await page.reload();
  await $('[data-testid="agent-select"]').waitFor();
  await projectRow('alpha-only').waitFor();
  expect(!requested.some((p) => /\/assets\/lang-/.test(p)), `no language chunk on page load (${requested.filter((p) => p.startsWith('/assets/')).join(', ')})`);
  const errorsBefore = pageErrors.length;
  await openProject('langs');
  for (const [file, , lang] of LANGUAGE_FILES) {
    await row(file).click();
    await eventually(async () => (await $('[data-testid="file-path"]').textContent()) === file, `${file} opened`);
    await eventually(
      async () => (await $('.cm-editor').getAttribute('data-language')) === lang,
      `${file}: editor language ${lang} (got ${await $('.cm-editor').getAttribute('data-language')})`,
    );
    // Highlighted tokens are spans with CodeMirror's generated (non "cm-") classes.
    await eventually(
      () => page.evaluate(() => [...document.querySelectorAll('.cm-content .cm-line span')].some((s) => s.className && !s.className.startsWith('cm-'))),
      `${file}: highlighted tokens`,
    );
    expect((await editorText()) === LANGUAGE_FILES.find((f) => f[0] === file)[1], `${file}: text shown unchanged`);
    await $('[data-testid="clean"]').waitFor(); // switching the language does not make the file dirty
  }
  for (const chunk of ['lang-javascript', 'lang-json', 'lang-markdown', 'lang-python', 'lang-go', 'lang-yaml', 'lang-html', 'lang-css']) {
    expect(requested.some((p) => p.startsWith(`/assets/${chunk}-`)), `chunk ${chunk} fetched on first use`);
  }
  expect(pageErrors.length === errorsBefore, `no page errors (${pageErrors.slice(errorsBefore).join('; ')})`);
  // Plain text stays plain.
  await row('app.js').click({ button: 'right' });
  await clickMenu('Rename');
  await dialog('rename-dialog').locator('input').fill('app.txt');
  await dialog('rename-dialog').locator('[data-action="confirm"]').click();
  await row('app.txt').waitFor();
  await row('app.txt').click();
  await eventually(async () => (await $('[data-testid="file-path"]').textContent()) === 'app.txt', 'app.txt opened');
  await eventually(async () => (await $('.cm-editor').getAttribute('data-language')) === 'plain', 'plain text for .txt');
  // Deleting a file asks first too; the open file is closed with it.
  await row('app.txt').focus();
  await page.keyboard.press('Delete');
  const dd = dialog('delete-entry-dialog');
  await dd.waitFor();
  const body = await dd.textContent();
  expect(body.includes('permanently deletes the file') && body.includes('cannot be undone'), `file delete text (${body.trim()})`);
  await dd.locator('[data-action="cancel"]').click();
  expect(sa.exists('langs/app.txt'), 'cancel keeps the file');
  await row('app.txt').click({ button: 'right' });
  await clickMenu('Delete');
  await dialog('delete-entry-dialog').locator('[data-action="confirm"]').click();
  await eventually(async () => (await row('app.txt').count()) === 0, 'file gone from the tree');
  expect(!sa.exists('langs/app.txt'), 'file deleted on disk');
  expect((await $('[data-testid="file-path"]').count()) === 0, 'deleted file closed in the editor');
});

test('editor: a language chunk that cannot be fetched leaves the file readable and editable as plain text', async () => {
  await ensureSignedIn();
  const isPython = (url) => /\/assets\/lang-python-[^/]*\.js$/.test(new URL(url).pathname);
  await page.route(isPython, (route) => route.abort('connectionrefused'));
  try {
    await page.reload();
    await $('[data-testid="agent-select"]').waitFor();
    await openProject('langs');
    await row('tool.py').click();
    await eventually(async () => (await $('[data-testid="file-path"]').textContent()) === 'tool.py', 'tool.py opened');
    await eventually(async () => (await $('.cm-editor').getAttribute('data-language')) === 'plain', 'falls back to plain text');
    expect((await editorText()).includes('return 42'), 'text shown');
    await $('.cm-content').click();
    await page.keyboard.press('Control+End');
    await page.keyboard.insertText('# edited\n');
    await $('[data-testid="dirty"]').waitFor();
    await $('[data-testid="cancel"]').click();
    await $('[data-testid="clean"]').waitFor();
  } finally {
    await page.unroute(isPython);
  }
});
