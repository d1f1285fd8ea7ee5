// Search (issue #25): quick open (Ctrl+P, fuzzy by name, keyboard) and the
// content search panel, each opening the chosen file (a content result at
// its line in the editor). A denied folder, a binary file and a symlink to a
// canary are in the project and never show.
import fs from 'node:fs';
import path from 'node:path';
import { test, $, checkNoLeaks, dialog, editorText, ensureSignedIn, eventually, expect, openProject, page, sa, shot } from './fixtures.mjs';

test.describe.configure({ mode: 'serial' });

const lines = Array.from({ length: 80 }, (_, i) => `line ${i + 1}`);
lines[59] = 'const needleMarker = 42; // the line to land on';

test.beforeAll(() => {
  sa.write('alpha-only/search/needle_finder.go', lines.join('\n') + '\n');
  sa.write('alpha-only/search/other.txt', 'nothing here\n');
  sa.write('alpha-only/node_modules/needle.js', 'needleMarker denied\n');
  sa.write('alpha-only/search/blob.bin', 'needleMarker\u0000binary');
  const canary = path.join(sa.dir, 'needle-canary.txt');
  fs.writeFileSync(canary, 'needleMarker canary\n');
  fs.symlinkSync(canary, path.join(sa.projects, 'alpha-only/search/needle-link.txt'));
});

test('quick open: Ctrl+P, fuzzy by name, arrow keys and Enter open the file', async () => {
  await ensureSignedIn();
  await openProject('alpha-only');
  await page.keyboard.press('Control+P');
  const qo = dialog('quick-open');
  await qo.waitFor();
  await page.keyboard.type('ndlfinder');
  const results = qo.locator('[data-testid="search-result"]');
  await eventually(async () => (await results.count()) > 0 && (await results.first().getAttribute('data-path')) === 'search/needle_finder.go', 'fuzzy result first');
  const paths = await results.evaluateAll((els) => els.map((e) => e.getAttribute('data-path')));
  expect(!paths.some((p) => p.includes('node_modules') || p.includes('needle-link')), `no denied or symlinked names: ${paths}`);
  await checkNoLeaks('quick open');
  await shot('search-quick-open.png');
  // Typing on replaces the results (the request before is aborted).
  await page.keyboard.press('Backspace');
  await page.keyboard.type('r');
  await eventually(async () => (await results.first().getAttribute('data-path')) === 'search/needle_finder.go', 'results after typing on');
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('ArrowUp');
  await page.keyboard.press('Enter');
  await eventually(async () => (await qo.count()) === 0, 'dialog closed');
  await eventually(async () => (await $('[data-testid="file-path"]').textContent()) === 'search/needle_finder.go', 'file opened');
});

test('content search: a literal match opens the file at its line', async () => {
  await ensureSignedIn();
  await openProject('alpha-only');
  await $('[data-testid="search-button"]').click();
  const cs = dialog('content-search');
  await cs.waitFor();
  await cs.locator('[data-testid="search-case"]').check();
  await cs.locator('[data-testid="search-query"]').fill('needleMarker');
  const results = cs.locator('[data-testid="search-result"]');
  await eventually(async () => (await cs.locator('[data-testid="search-status"]').textContent()).includes('1 result'), 'one result');
  expect((await results.first().getAttribute('data-path')) === 'search/needle_finder.go', 'the text file only');
  expect((await results.first().getAttribute('data-line')) === '60', 'line 60');
  expect((await results.first().locator('mark').textContent()) === 'needleMarker', 'match marked');
  // A bad regular expression says so.
  await cs.locator('[data-testid="search-regex"]').check();
  await cs.locator('[data-testid="search-query"]').fill('needle(');
  await eventually(async () => (await cs.locator('[data-testid="search-status"]').textContent()).toLowerCase().includes('regular expression'), 'bad regex explained');
  await cs.locator('[data-testid="search-query"]').fill('needle\\w+ = \\d+');
  await eventually(async () => (await results.count()) === 1, 'regex result');
  await checkNoLeaks('content search');
  await shot('search-content.png');
  await results.first().click();
  await eventually(async () => (await $('[data-testid="file-path"]').textContent()) === 'search/needle_finder.go', 'file opened');
  await eventually(async () => (await $('[data-testid="code-editor"]').getAttribute('data-line')) === '60', 'editor at line 60');
  await eventually(async () => ((await $('.cm-activeLine').textContent()) ?? '').includes('needleMarker'), 'cursor on the matching line');
  expect((await editorText()).includes('line 80'), 'whole file shown');
});
