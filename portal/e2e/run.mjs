// Browser end-to-end tests of the portal (PRD §15.3) against the real
// agent-gateway and two real agent-sidecars on 127.0.0.1, driven by
// playwright-core over Debian's chromium. Run: npm run e2e (make test-portal).
// Prints one line per test and a closing "N passed, N failed"; exits 1 on any
// failure. Screenshots of the main views go to docs/screenshots/.
import fs from 'node:fs';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { binaries, certs, Gateway, REPO, Sidecar, tempBase } from './harness.mjs';
import { registerCheckpointTests } from './checkpoints.mjs';
import { registerFeatureTests } from './features.mjs';
import { registerLiveTests } from './live.mjs';

const CHROMIUM = process.env.CHROMIUM_BIN || '/usr/bin/chromium';
const SHOTS = process.env.E2E_SCREENSHOTS || path.join(REPO, 'docs/screenshots');
const OUT = path.join(REPO, 'portal/e2e/out');
const only = process.env.E2E_ONLY ? new RegExp(process.env.E2E_ONLY) : null;
const log = (...a) => console.log('[e2e]', ...a);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

if (!fs.existsSync(CHROMIUM)) {
  console.error(`e2e: ${CHROMIUM} not found. Install it with \`make setup\` (or apt-get install -y chromium).`);
  console.log('0 passed, 1 failed');
  process.exit(1);
}

const tests = [];
const test = (name, fn) => tests.push({ name, fn });

class Check extends Error {}
function expect(cond, msg) {
  if (!cond) throw new Check(msg);
}
async function eventually(fn, msg, timeout = 10_000) {
  const end = Date.now() + timeout;
  let last;
  for (;;) {
    try {
      const v = await fn();
      if (v !== false && v !== undefined && v !== null) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > end) throw new Check(`${msg}${last ? ` (${last.message})` : ''}`);
    await sleep(100);
  }
}

// ---------------------------------------------------------------------------
// stack

const MANY_PROJECTS = 120;
// [file, text, CodeMirror language the editor must switch to]
const LANGUAGE_FILES = [
  ['app.js', 'export function add(a, b) {\n  return a + b; // sum\n}\n', 'javascript'],
  ['view.tsx', 'export const View = (p: { n: number }) => <b>{p.n}</b>;\n', 'tsx'],
  ['data.json', '{ "name": "langs", "count": 3, "ok": true }\n', 'json'],
  ['notes.md', '# Title\n\nSome *emphasis* and `code`.\n', 'markdown'],
  ['tool.py', 'def main() -> int:\n    return 42  # answer\n', 'python'],
  ['main.go', 'package main\n\nfunc main() { println("hi") }\n', 'go'],
  ['ci.yaml', 'name: ci\non: [push]\njobs: {}\n', 'yaml'],
  ['index.html', '<!doctype html>\n<p class="x">Hello</p>\n', 'html'],
  ['site.css', 'body { color: #333; margin: 0 }\n', 'css'],
];

// [file, bytes on disk, how the test edits it, bytes expected after saving]
const BYTE_FILES = [
  ['crlf.txt', 'one\r\ntwo\r\nthree\r\n'],
  ['mixed.txt', 'a\r\nb\nc\r\nd'],
  ['bom.txt', '\ufeff\tx = 1\r\n\ty = 2'],
];

const base = tempBase();
let gw, sa, sb, browser, context, page;
const leaks = [];
const recent = []; // last HTTP errors the page saw (printed with a failure)
const pageErrors = []; // uncaught errors in the page
const requested = []; // paths of every request the page made

async function setUp() {
  const bins = binaries(base, log);
  certs(base, bins.gateway, ['codex-a', 'codex-b']);
  sa = new Sidecar('codex-a', base, bins.sidecar, { checkpointsPerWorkspace: 40 });
  // codex-b's checkpoint store is tiny, so always full: the delete override test (checkpoints.mjs).
  sb = new Sidecar('codex-b', base, bins.sidecar, { checkpointBytes: 1024 });
  // Data the tests rely on, prepared on the volumes before start.
  sa.mkdir('alpha-only');
  sa.write('alpha-only/README.md', '# Alpha\n\nOnly agent codex-a has this project.\n');
  sb.mkdir('beta-only');
  sb.write('beta-only/notes.txt', 'Only agent codex-b has this project.\n');
  sa.mkdir('paging');
  // One file per language family the editor highlights (loaded lazily, one chunk per language).
  for (const [file, text] of LANGUAGE_FILES) sa.write(`langs/${file}`, text);
  // More than one page of projects (page size 100) on codex-b: "beta-only" plus these.
  for (let i = 0; i < MANY_PROJECTS; i++) fs.mkdirSync(path.join(sb.projects, `many-${String(i).padStart(3, '0')}`), { mode: 0o755 });
  sb.mkdir('many-000'); // chowns the volume to the sidecar's user
  for (let i = 0; i < 130; i++) sa.write(`paging/big/f${String(i).padStart(3, '0')}.txt`, `file ${i}\n`);
  // Files whose bytes the editor must keep exactly (#14).
  for (const [file, text] of BYTE_FILES) sa.write(`bytes/${file}`, text);
  sa.write('keep/draft.txt', 'first line\n');
  sa.write('keep/sub/a.txt', 'in a folder\n');
  await Promise.all([sa.start(), sb.start()]);
  gw = new Gateway(base, bins.gateway, [sa, sb]);
  await gw.start();
  log(`gateway ${gw.url}, sidecars ${sa.ports.rpc} ${sb.ports.rpc}`);

  const userDataDir = path.join(base, 'chromium-profile');
  fs.mkdirSync(userDataDir);
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1280, height: 800 },
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: gw.url });
  page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(10_000);
  page.on('pageerror', (err) => {
    pageErrors.push(err.message);
    log('page error:', err.message);
  });
  page.on('request', (r) => requested.push(new URL(r.url()).pathname));
  page.on('response', (r) => {
    if (r.status() >= 400) {
      recent.push(`${new Date().toISOString().slice(11, 23)} ${r.request().method()} ${new URL(r.url()).pathname} -> ${r.status()}`);
      if (recent.length > 12) recent.shift();
    }
  });
}

async function tearDown() {
  await context?.close().catch(() => {});
  await browser?.close().catch(() => {});
  await gw?.stop().catch(() => {});
  await Promise.all([sa?.stop(), sb?.stop()].map((p) => p?.catch(() => {})));
  if (!process.env.E2E_KEEP) fs.rmSync(base, { recursive: true, force: true });
}

// ---------------------------------------------------------------------------
// page helpers

const $ = (sel) => page.locator(sel);
const dialog = (testid) => page.locator(`dialog[open][data-testid="${testid}"]`);
const row = (p) => page.locator(`.tree-row[data-path="${p}"]`);
const projectRow = (name) => page.locator(`.project-row[data-project="${name}"]`);

async function signIn(token = gw.adminToken) {
  await page.goto(gw.url + '/');
  await $('[data-testid="login-form"] input[name="token"]').fill(token);
  await $('[data-testid="login-form"] button[type="submit"]').click();
}

async function ensureSignedIn() {
  if (await $('[data-testid="agent-select"]').count()) return;
  await signIn();
  await $('[data-testid="agent-select"]').waitFor();
}

async function selectAgent(id) {
  await $('[data-testid="agent-select"]').selectOption(id);
}

async function openProject(name) {
  if ((await $('[data-testid="tab-projects"]').getAttribute('aria-selected')) !== 'true') await $('[data-testid="tab-projects"]').click();
  await projectRow(name).locator('.project-name').click();
  await eventually(async () => (await $('.sidebar-section.files h2').textContent())?.includes(name), `project ${name} opened`);
}

async function editorText() {
  return page.evaluate(() => {
    const lines = [...document.querySelectorAll('.cm-content .cm-line')].map((l) => l.textContent);
    return lines.join('\n');
  });
}

async function setEditorText(text) {
  await $('.cm-content').click();
  await page.keyboard.press('Control+A');
  await page.keyboard.press('Delete');
  await page.keyboard.insertText(text);
}

async function shot(name) {
  fs.mkdirSync(SHOTS, { recursive: true });
  // Transient toasts from earlier steps would only clutter the picture.
  const toasts = (v) => page.evaluate((v) => document.querySelectorAll('.notice-slot').forEach((n) => (n.style.visibility = v)), v);
  await toasts('hidden');
  await page.screenshot({ path: path.join(SHOTS, name) });
  await toasts('');
}

/** No endpoint, loopback address or host path may ever be shown. */
async function checkNoLeaks(where) {
  const text = await page.evaluate(() => document.body.innerText + ' ' + [...document.querySelectorAll('dialog')].map((d) => d.innerText).join(' '));
  for (const bad of ['127.0.0.1', 'localhost', base, '/tmp/', ':9091', sa.ports.rpc, sb.ports.rpc]) {
    if (bad && text.includes(bad)) leaks.push(`${where}: page shows "${bad}"`);
  }
}

async function clickMenu(label) {
  const item = page.locator('[data-testid="context-menu"] [role="menuitem"]', { hasText: label });
  await item.click();
}

// ---------------------------------------------------------------------------
// tests (in order; later ones build on earlier state)

test('login: a wrong token is refused, an admin token opens the Agents page', async () => {
  await signIn('not-a-valid-token');
  await eventually(async () => (await $('[data-testid="login-form"] [role="alert"]').textContent())?.includes('not accepted'), 'refusal message');
  await shot('login.png');
  const editorChunks = () => requested.filter((p) => /^\/assets\/(codemirror|editor)-/.test(p));
  expect(editorChunks().length === 0, `the sign-in page loads no CodeMirror (${editorChunks().join(', ')})`);
  await signIn();
  await $('[data-testid="agent-select"]').waitFor();
  await eventually(() => editorChunks().length === 2, 'CodeMirror preloaded once an admin is signed in');
  expect((await $('[data-testid="operator"]').textContent()) === 'alice', 'operator name shown');
});

test('agents: static list, default agent selected first, agent without sidecar marked', async () => {
  await ensureSignedIn();
  const options = await $('[data-testid="agent-select"] option').allTextContents();
  expect(options.length === 3, `three agents listed, got ${options.length}`);
  expect(options[0].includes('codex-a') && options[0].includes('(default)'), 'codex-a is marked default');
  expect(options.some((o) => o.includes('codex-plain') && o.includes('no project management')), 'codex-plain has no project management');
  expect((await $('[data-testid="agent-select"]').inputValue()) === 'codex-a', 'default agent selected');
  await projectRow('alpha-only').waitFor();
  expect((await projectRow('alpha-only').textContent()).includes('No Git'), 'existing non-Git directory shows No Git');
  await selectAgent('codex-plain');
  await $('[data-testid="no-project-management"]').waitFor();
  await selectAgent('codex-a');
  await projectRow('alpha-only').waitFor();
});

test('logout signs out; a non-admin sees the no-access page', async () => {
  await ensureSignedIn();
  await $('[data-testid="logout"]').click();
  await $('[data-testid="login-form"]').waitFor();
  const r = await page.evaluate(async () => (await fetch('/api/v1/agent-gateway/agents')).status);
  expect(r === 401, `API refuses after logout (got ${r})`);
  await signIn();
  await $('[data-testid="agent-select"]').waitFor();
  await projectRow('alpha-only').waitFor(); // nothing in flight when the cookie goes
  await context.clearCookies();
  await $('[data-testid="tab-global"]').click();
  await eventually(async () => (await $('[data-testid="login-form"] [role="alert"]').textContent())?.includes('session has ended'), 'expired session returns to login');
  await signIn(gw.userToken);
  await $('[data-testid="no-access"]').waitFor();
  expect((await $('[data-testid="no-access"]').textContent()).includes('only for workspace admins'), 'no-access text');
  expect((await $('[data-testid="agent-select"]').count()) === 0, 'no agent selector for non-admins');
  await signIn();
  await $('[data-testid="agent-select"]').waitFor();
});

test('trusted proxy: an admin group member just works (no login, no sign-out), others get no access', async () => {
  const proxied = await context.newPage();
  try {
    await proxied.setExtraHTTPHeaders({ 'X-Forwarded-User': 'carol', 'X-Forwarded-Groups': 'staff, workspace-admins' });
    await proxied.goto(gw.url + '/');
    await proxied.locator('[data-testid="agent-select"]').waitFor();
    expect((await proxied.locator('[data-testid="operator"]').textContent()) === 'carol', 'operator from the proxy');
    expect((await proxied.locator('[data-testid="logout"]').count()) === 0, 'no sign-out under a proxy');
    await proxied.locator('.project-row[data-project="alpha-only"]').waitFor();
    await proxied.setExtraHTTPHeaders({ 'X-Forwarded-User': 'dave', 'X-Forwarded-Groups': 'staff' });
    await proxied.goto(gw.url + '/');
    await proxied.locator('[data-testid="no-access"]').waitFor();
  } finally {
    await proxied.close();
  }
});

test('create project: name validated as you type, Git initialised on disk', async () => {
  await ensureSignedIn();
  await $('[data-testid="new-project"]').click();
  const d = dialog('create-project-dialog');
  await d.waitFor();
  const input = d.locator('input');
  const confirm = d.locator('[data-action="confirm"]');
  for (const [bad, msg] of [
    ['.hidden', 'Start with a letter or a digit'],
    ['..', 'cannot be named'],
    ['has space', 'Use only letters'],
    ['a'.repeat(129), 'at most 128'],
  ]) {
    await input.fill(bad);
    await eventually(async () => (await d.locator('.field-problem').textContent()).includes(msg), `problem for ${bad}`);
    expect(await confirm.isDisabled(), `confirm disabled for ${bad}`);
  }
  await input.fill('demo');
  expect(!(await confirm.isDisabled()), 'confirm enabled for a valid name');
  await confirm.click();
  await projectRow('demo').waitFor();
  expect((await projectRow('demo').textContent()).includes('Git'), 'Git badge');
  expect(sa.exists('demo/.git/HEAD'), 'demo/.git exists on disk');
  // Refresh shows projects made behind the portal's back, and drops removed ones.
  sa.mkdir('made-by-agent');
  await $('[data-testid="refresh-projects"]').click();
  await projectRow('made-by-agent').waitFor();
  fs.rmdirSync(path.join(sa.projects, 'made-by-agent'));
  await $('[data-testid="refresh-projects"]').click();
  await eventually(async () => (await projectRow('made-by-agent').count()) === 0, 'removed project gone after Refresh');
  expect((await projectRow('demo').count()) === 1, 'demo still listed');
  // Esc closes a dialog without doing anything.
  await $('[data-testid="new-project"]').click();
  await dialog('create-project-dialog').waitFor();
  await page.keyboard.press('Escape');
  await eventually(async () => (await dialog('create-project-dialog').count()) === 0, 'Esc closes the dialog');
});

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
  const cd = dialog('conflict-dialog');
  await cd.waitFor();
  const t = await cd.textContent();
  expect(t.includes('The file was changed elsewhere'), 'conflict message');
  expect((await cd.locator('button', { hasText: /force|overwrite/i }).count()) === 0, 'no force save');
  await checkNoLeaks('conflict dialog');
  await shot('conflict-dialog.png');
  await cd.locator('[data-action="copy"]').click();
  await eventually(async () => (await cd.locator('[role="status"]').textContent()).includes('clipboard'), 'copy confirmed');
  const clip = await page.evaluate(() => navigator.clipboard.readText());
  expect(clip === mine, 'clipboard holds my version');
  await cd.locator('[data-action="keep"]').click();
  expect((await editorText()).includes('My local edit'), 'local text kept in the editor');
  await $('[data-testid="conflict-banner"]').waitFor();
  expect(await $('[data-testid="save"]').isDisabled(), 'Save disabled while in conflict');
  expect(sa.read('demo/docs/README.md') === theirs, 'disk keeps the other writer');
  await $('[data-testid="conflict-banner"] button', { hasText: 'Reload server version' }).last().click();
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

test('non-editable: a binary file shows metadata and the reason, with no save or download', async () => {
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
  expect((await page.locator('a[download], button', { hasText: /download/i }).count()) === 0, 'no download');
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

test('Global tab: skills always shown without delete/move/rename; AGENTS.md created and edited', async () => {
  await ensureSignedIn();
  sa.write('auth.json', '{"token":"secret"}\n', 'global');
  sa.write('config.toml', 'model = "x"\n', 'global');
  await $('[data-testid="tab-global"]').click();
  await row('skills').waitFor();
  expect((await page.locator('.tree-row').count()) === 1, 'Global shows skills only (no auth.json, config.toml)');
  expect((await row('AGENTS.md').count()) === 0, 'no AGENTS.md yet');
  await row('skills').click({ button: 'right' });
  const items = await page.locator('[data-testid="context-menu"] [role="menuitem"]').allTextContents();
  expect(!items.some((i) => /Delete|Rename|Move/.test(i)), `skills menu has no delete/move/rename (${items.join(', ')})`);
  await page.keyboard.press('Escape');
  await row('skills').focus();
  await page.keyboard.press('Delete');
  await eventually(async () => (await $('[data-testid="notice"]').textContent()).includes('cannot be deleted'), 'Delete key refused on skills');
  expect((await dialog('delete-entry-dialog').count()) === 0, 'no delete dialog for skills');
  // A skill inside skills/.
  await row('skills').click({ button: 'right' });
  await clickMenu('New folder');
  await dialog('new-entry-dialog').locator('input').fill('review');
  await dialog('new-entry-dialog').locator('[data-action="confirm"]').click();
  await row('skills/review').waitFor();
  await row('skills/review').click({ button: 'right' });
  await clickMenu('New file');
  await dialog('new-entry-dialog').locator('input').fill('SKILL.md');
  await dialog('new-entry-dialog').locator('[data-action="confirm"]').click();
  await eventually(async () => (await $('[data-testid="file-path"]').textContent()) === 'skills/review/SKILL.md', 'skill opened');
  await setEditorText('---\nname: review\ndescription: Review a change.\n---\n\nCheck tests first.\n');
  await page.keyboard.press('Control+S');
  await $('[data-testid="clean"]').waitFor();
  expect(sa.read('skills/review/SKILL.md', 'global').includes('name: review'), 'skill on disk');
  // AGENTS.md.
  await $('[data-testid="create-agents-md"]').click();
  await row('AGENTS.md').waitFor();
  await eventually(async () => (await $('[data-testid="file-path"]').textContent()) === 'AGENTS.md', 'AGENTS.md opened');
  await setEditorText('# Global instructions\n\nRun the tests before every commit.\n');
  await page.keyboard.press('Control+S');
  await $('[data-testid="clean"]').waitFor();
  expect(sa.read('AGENTS.md', 'global').startsWith('# Global instructions'), 'AGENTS.md on disk');
  expect((await $('[data-testid="create-agents-md"]').count()) === 0, 'create action gone once it exists');
  await row('AGENTS.md').click({ button: 'right' });
  const mdItems = await page.locator('[data-testid="context-menu"] [role="menuitem"]').allTextContents();
  expect(!mdItems.some((i) => /Rename|Move/.test(i)), 'AGENTS.md cannot be renamed or moved');
  await page.keyboard.press('Escape');
  expect((await row('auth.json').count()) === 0 && (await row('config.toml').count()) === 0, 'no other CODEX_HOME files');
  await shot('global.png');
  await $('[data-testid="tab-projects"]').click();
});

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

test('projects: more than one page lists 100, then "Load more projects" at the end of the list appends the rest', async () => {
  await ensureSignedIn();
  await selectAgent('codex-b');
  await projectRow('beta-only').waitFor();
  const rows = () => page.locator('.project-row').count();
  expect((await rows()) === 100, `first page holds 100 projects (got ${await rows()})`);
  const more = $('[data-testid="load-more-projects"]');
  await more.waitFor();
  const last = await page.evaluate(() => document.querySelector('[data-testid="project-list"]')?.lastElementChild?.querySelector('[data-testid="load-more-projects"]') !== null);
  expect(last, '"Load more projects" is the last item of the list');
  await more.scrollIntoViewIfNeeded();
  await shot('projects-load-more.png');
  await more.focus();
  await page.keyboard.press('Enter'); // keyboard-usable
  await eventually(async () => (await rows()) === MANY_PROJECTS + 1, `second page appended (got ${await rows()})`);
  expect((await more.count()) === 0, 'no more pages');
  await eventually(
    () => page.evaluate(() => document.activeElement?.closest('.project-row')?.getAttribute('data-project') === 'many-099'),
    'focus moved to the first project of the new page',
  );
  const names = await page.locator('.project-row').evaluateAll((els) => els.map((e) => e.getAttribute('data-project')));
  expect(new Set(names).size === names.length, 'no project listed twice');
  expect(names[0] === 'beta-only' && names.at(-1) === `many-${String(MANY_PROJECTS - 1).padStart(3, '0')}`, 'sorted by name across pages');
  // A project from the second page opens like any other.
  await openProject('many-119');
  await $('[data-testid="root-new-file"]').waitFor();
  await selectAgent('codex-a');
  await projectRow('alpha-only').waitFor();
});

test('agent list: a failed load shows an actionable error; Retry loads it', async () => {
  await ensureSignedIn();
  const isAgents = (url) => new URL(url).pathname === '/api/v1/agent-gateway/agents';
  const failures = ['bad-gateway', 'unreachable'];
  await page.route(isAgents, async (route) => {
    const f = failures.shift();
    if (f === 'bad-gateway') return route.fulfill({ status: 502, contentType: 'text/html', body: '<html>502 Bad Gateway from 10.1.2.3:8080</html>' });
    if (f === 'unreachable') return route.abort('connectionrefused');
    return route.continue();
  });
  try {
    await page.reload();
    const err = $('[data-testid="agents-error"]');
    await err.waitFor();
    let text = await err.textContent();
    expect(text.includes('could not be loaded') && text.includes('gateway is not answering') && text.includes('Retry'), `actionable 5xx text (${text.trim()})`);
    expect(!text.includes('10.1.2.3'), 'no endpoint from the error body');
    await checkNoLeaks('agent list error');
    await shot('agents-error.png');
    await $('[data-testid="agents-retry"]').click();
    await eventually(async () => (await err.textContent()).includes('could not be reached'), 'unreachable gateway explained');
    await $('[data-testid="agents-retry"]').click();
    await projectRow('alpha-only').waitFor();
    expect((await err.count()) === 0, 'error gone after Retry');
    expect((await $('[data-testid="agent-select"] option').count()) === 3, 'agents listed after Retry');
    expect(failures.length === 0, 'both failures were served');
  } finally {
    await page.unroute(isAgents);
  }
});

test('agent switch: never shows the previous agent\'s projects or files, even from a late response', async () => {
  await ensureSignedIn();
  await openProject('alpha-only');
  await row('README.md').click();
  await eventually(async () => (await $('[data-testid="file-path"]').textContent()) === 'README.md', 'file of codex-a open');
  await selectAgent('codex-b');
  await projectRow('beta-only').waitFor();
  expect((await projectRow('alpha-only').count()) === 0, 'codex-a projects gone');
  expect((await $('[data-testid="file-path"]').count()) === 0, 'codex-a file closed');
  expect((await $('.tree').count()) === 0, 'no tree of codex-a');
  // A slow response for codex-a that lands after switching to codex-b is dropped.
  await page.route('**/api/v1/agent-gateway/agents/codex-a/projects**', async (route) => {
    await sleep(1500);
    await route.continue().catch(() => {});
  });
  await selectAgent('codex-a');
  await sleep(100);
  await selectAgent('codex-b');
  await projectRow('beta-only').waitFor();
  await sleep(2000);
  expect((await projectRow('alpha-only').count()) === 0, 'late codex-a response not shown under codex-b');
  expect((await projectRow('beta-only').count()) === 1, 'codex-b list intact');
  await page.unroute('**/api/v1/agent-gateway/agents/codex-a/projects**');
  await selectAgent('codex-a');
  await projectRow('alpha-only').waitFor();
  expect((await projectRow('beta-only').count()) === 0, 'codex-b projects not under codex-a');
});

test('delete project: the full name is required, the text says permanent; editor cleared', async () => {
  await ensureSignedIn();
  await openProject('demo');
  if ((await row('docs').getAttribute('aria-expanded')) !== 'true') await row('docs').click();
  await row('docs/other.txt').click();
  await $('[data-testid="file-path"]').waitFor();
  await projectRow('demo').locator('button', { hasText: 'Delete' }).click();
  const d = dialog('delete-project-dialog');
  await d.waitFor();
  const t = await d.textContent();
  expect(t.includes('permanent') && t.includes('checkpoint'), 'says permanent, and the automatic checkpoint');
  const confirm = d.locator('[data-action="confirm"]');
  expect(await confirm.isDisabled(), 'disabled before typing');
  await d.locator('input').fill('dem');
  expect(await confirm.isDisabled(), 'disabled for a partial name');
  await d.locator('input').fill('demo');
  expect(!(await confirm.isDisabled()), 'enabled for the full name');
  await confirm.click();
  await eventually(async () => (await projectRow('demo').count()) === 0, 'project gone from the list');
  expect(!sa.exists('demo'), 'project deleted on disk');
  expect((await $('[data-testid="file-path"]').count()) === 0, 'editor cleared');
});

test('unavailable sidecar: agent stays selectable, both tabs say so, Retry works after restart, no endpoint shown', async () => {
  await ensureSignedIn();
  await selectAgent('codex-a');
  await projectRow('alpha-only').waitFor();
  await sb.kill();
  await selectAgent('codex-b');
  await $('[data-testid="unavailable"]').waitFor({ timeout: 20_000 });
  const text = await $('[data-testid="unavailable"]').textContent();
  expect(text.includes('codex-b') && text.includes('cannot be reached'), 'unavailable message names the agent');
  expect(!(await $('[data-testid="agent-select"]').isDisabled()), 'agent selector still usable');
  await checkNoLeaks('unavailable state');
  await shot('unavailable.png');
  // The Global tab says the same, and coming back to Projects tries again.
  await $('[data-testid="tab-global"]').click();
  await eventually(async () => (await $('[data-testid="unavailable"]').textContent())?.includes('Global files'), 'Global tab shows the unavailable state');
  await checkNoLeaks('unavailable Global tab');
  await $('[data-testid="tab-projects"]').click();
  await eventually(async () => (await $('[data-testid="unavailable"]').textContent())?.includes('its projects'), 'Projects tab unavailable again');
  await $('[data-testid="retry"]').click();
  await $('[data-testid="unavailable"]').waitFor(); // still down
  await sb.start();
  // The gateway reconnects with back-off, so a user may need to press Retry more than once.
  await eventually(
    async () => {
      if (await projectRow('beta-only').count()) return true;
      if (await $('[data-testid="retry"]').count()) await $('[data-testid="retry"]').click();
      await sleep(1000);
      return (await projectRow('beta-only').count()) > 0;
    },
    'projects listed after Retry',
    30_000,
  );
  expect((await $('[data-testid="unavailable"]').count()) === 0, 'unavailable state cleared');
});

// ---- #14: nothing typed is ever lost or altered -----------------------------

async function openFile(p) {
  await row(p).click();
  await eventually(async () => (await $('[data-testid="file-path"]').textContent()) === p, `${p} opened`);
  await eventually(async () => (await $('.cm-content').count()) === 1, 'editor shown');
}

/** Clicks line n (0-based) of the editor and puts the cursor at its end. */
async function endOfLine(n) {
  await page.locator('.cm-content .cm-line').nth(n).click();
  await page.keyboard.press('End');
}

const hex = (b) => Buffer.from(b).toString('hex');

/** codex-a selected with its projects listed (earlier tests may leave another agent selected). */
async function onAgentA() {
  await ensureSignedIn();
  if ((await $('[data-testid="agent-select"]').inputValue()) !== 'codex-a') await selectAgent('codex-a');
  if ((await $('[data-testid="tab-projects"]').getAttribute('aria-selected')) !== 'true') await $('[data-testid="tab-projects"]').click();
  await projectRow('alpha-only').waitFor();
}

test('bytes: CRLF, mixed endings, a BOM, tabs and a missing final newline are saved byte for byte; an undone edit saves nothing', async () => {
  await onAgentA();
  await $('[data-testid="refresh-projects"]').click();
  await openProject('bytes');
  const cases = [
    // file, edit, expected bytes
    ['crlf.txt', async () => {
      await endOfLine(1);
      await page.keyboard.press('Enter');
      await page.keyboard.insertText('new line');
    }, 'one\r\ntwo\r\nnew line\r\nthree\r\n'],
    ['mixed.txt', async () => {
      await endOfLine(1);
      await page.keyboard.insertText('B');
    }, 'a\r\nbB\nc\r\nd'],
    ['bom.txt', async () => {
      await $('.cm-content').click();
      await page.keyboard.press('Control+End');
      await page.keyboard.insertText(' ok');
    }, '\ufeff\tx = 1\r\n\ty = 2 ok'],
  ];
  for (const [file, edit, want] of cases) {
    const before = sa.readBytes(`bytes/${file}`);
    await openFile(file);
    // An edit undone is no edit: nothing to save, nothing written.
    await endOfLine(0);
    await page.keyboard.insertText('x');
    await $('[data-testid="dirty"]').waitFor();
    await page.keyboard.press('Backspace');
    await $('[data-testid="clean"]').waitFor({ timeout: 3000 }).catch(() => {
      throw new Check(`${file}: typing and deleting a character leaves the file dirty (line endings changed)`);
    });
    expect(await $('[data-testid="save"]').isDisabled(), `${file}: Save disabled without an edit`);
    await page.keyboard.press('Control+S');
    await sleep(300);
    expect(hex(sa.readBytes(`bytes/${file}`)) === hex(before), `${file}: disk untouched by Ctrl+S without an edit`);
    await edit();
    await $('[data-testid="dirty"]').waitFor();
    await page.keyboard.press('Control+S');
    await $('[data-testid="clean"]').waitFor();
    const got = sa.readBytes(`bytes/${file}`);
    expect(hex(got) === hex(Buffer.from(want)), `${file}: bytes on disk ${JSON.stringify(got.toString())}, want ${JSON.stringify(want)}`);
  }
});

test('session: a gateway restart keeps the session; a save refused for a lost session signs in again in place and is retried', async () => {
  await onAgentA();
  await $('[data-testid="refresh-projects"]').click();
  await openProject('keep');
  await openFile('draft.txt');
  await endOfLine(0);
  await page.keyboard.insertText(' +restart');
  await $('[data-testid="dirty"]').waitFor();
  await gw.restart(); // same session key: the sealed cookie still opens
  await page.keyboard.press('Control+S');
  await $('[data-testid="clean"]').waitFor();
  expect(sa.read('keep/draft.txt') === 'first line +restart\n', `saved across a restart (${JSON.stringify(sa.read('keep/draft.txt'))})`);
  expect((await dialog('signin-dialog').count()) === 0, 'no sign-in needed after a restart');

  // The session ends (the key it was sealed with is gone): sign in again in place, the save goes through.
  await endOfLine(0);
  await page.keyboard.insertText(' +again');
  await $('[data-testid="dirty"]').waitFor();
  await gw.restart({ newSessionKey: true });
  await page.keyboard.press('Control+S');
  const d = dialog('signin-dialog');
  await d.waitFor();
  expect((await editorText()) === 'first line +restart +again\n', `text kept under the sign-in dialog (${JSON.stringify(await editorText())})`);
  await d.locator('input[name="token"]').fill('wrong-token');
  await d.locator('[data-action="confirm"]').click();
  await eventually(async () => (await d.locator('[role="alert"]').textContent()).includes('not accepted'), 'wrong token refused in the dialog');
  await d.locator('input[name="token"]').fill(gw.adminToken);
  await d.locator('[data-action="confirm"]').click();
  await $('[data-testid="clean"]').waitFor();
  expect(sa.read('keep/draft.txt') === 'first line +restart +again\n', 'the refused save was retried once signed in');

  // Retried with the same expected revision: a change meanwhile takes the conflict path.
  await endOfLine(0);
  await page.keyboard.insertText(' +conflict');
  await $('[data-testid="dirty"]').waitFor();
  await gw.restart({ newSessionKey: true });
  sa.write('keep/draft.txt', 'changed by the agent\n');
  await page.keyboard.press('Control+S');
  await d.waitFor();
  await d.locator('input[name="token"]').fill(gw.adminToken);
  await d.locator('[data-action="confirm"]').click();
  const cd = dialog('conflict-dialog');
  await cd.waitFor();
  expect(sa.read('keep/draft.txt') === 'changed by the agent\n', 'the other writer is kept');
  await cd.locator('[data-action="reload"]').click();
  await eventually(async () => (await editorText()) === 'changed by the agent\n', 'server version loaded');
  await $('[data-testid="clean"]').waitFor();
});

test('drafts: unsaved text survives a page reload and a declined sign-in, and is saved on the revision it was typed on', async () => {
  await onAgentA();
  await openProject('keep');
  await openFile('draft.txt');
  await endOfLine(0);
  await page.keyboard.insertText(' +draft');
  await $('[data-testid="dirty"]').waitFor();
  await sleep(500); // the draft is stored within 300 ms of typing
  const accept = (dl) => dl.accept().catch(() => {});
  page.on('dialog', accept); // "leave the page?" — yes
  try {
    await page.reload();
  } finally {
    page.off('dialog', accept);
  }
  await $('[data-testid="agent-select"]').waitFor();
  await openProject('keep');
  await openFile('draft.txt');
  await eventually(async () => (await editorText()) === 'changed by the agent +draft\n', `draft restored (${JSON.stringify(await editorText())})`);
  await $('[data-testid="dirty"]').waitFor();
  expect((await $('[data-testid="notice"]').textContent()).includes('restored'), 'says the changes were restored');
  // The session ends and the user declines to sign in: the login page, and the draft is still kept.
  await endOfLine(0);
  await page.keyboard.insertText(' +more');
  await context.clearCookies();
  await page.keyboard.press('Control+S');
  await dialog('signin-dialog').waitFor();
  await dialog('signin-dialog').locator('[data-action="cancel"]').click();
  await $('[data-testid="login-form"]').waitFor();
  await signIn();
  await $('[data-testid="agent-select"]').waitFor();
  await openProject('keep');
  await openFile('draft.txt');
  await eventually(async () => (await editorText()) === 'changed by the agent +draft +more\n', 'draft restored after signing in again');
  await page.keyboard.press('Control+S');
  await $('[data-testid="clean"]').waitFor();
  expect(sa.read('keep/draft.txt') === 'changed by the agent +draft +more\n', 'draft saved');
  // Saved: nothing is restored any more.
  await page.reload();
  await $('[data-testid="agent-select"]').waitFor();
  await openProject('keep');
  await openFile('draft.txt');
  await $('[data-testid="clean"]').waitFor();
});

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
  sa.write('keep/moved/new.txt', 'changed by the agent\n');
  await row('moved/new.txt').focus();
  await page.keyboard.press('F2');
  await dialog('rename-dialog').locator('input').fill('renamed.txt');
  await dialog('rename-dialog').locator('[data-action="confirm"]').click();
  await eventually(async () => (await $('[data-testid="notice"]').textContent())?.includes('was not moved'), 'stale rename refused');
  await row('moved/new.txt').focus();
  await page.keyboard.press('F2');
  await dialog('rename-dialog').locator('input').fill('renamed.txt');
  await dialog('rename-dialog').locator('[data-action="confirm"]').click();
  await row('moved/renamed.txt').waitFor();
  await eventually(async () => (await $('[data-testid="notice"][role="alert"]').count()) === 0, 'the stale error is gone after the retry succeeded');
});

// ---- #14: the portal as a place to work --------------------------------------

const pathNow = () => new URL(page.url()).pathname;

test('deep links: the URL names agent, tab, project and file; reload, Back and Forward restore them', async () => {
  await onAgentA();
  sa.write('skills/deep/SKILL.md', '---\nname: deep\n---\n\nDeep link.\n', 'global');
  await page.goto(gw.url + '/agents/codex-a/projects/bytes/files/crlf.txt');
  await eventually(async () => (await $('[data-testid="file-path"]').textContent()) === 'crlf.txt', 'deep link opens the file');
  expect((await $('.sidebar-section.files h2').textContent()).includes('bytes'), 'project from the URL selected');
  await openFile('mixed.txt');
  await eventually(() => pathNow() === '/agents/codex-a/projects/bytes/files/mixed.txt', `URL names the open file (${pathNow()})`);
  await page.reload();
  await eventually(async () => (await $('[data-testid="file-path"]').textContent()) === 'mixed.txt', 'reload restores the open file');
  await page.goBack();
  await eventually(async () => (await $('[data-testid="file-path"]').textContent()) === 'crlf.txt', 'Back goes to the previous file');
  await page.goForward();
  await eventually(async () => (await $('[data-testid="file-path"]').textContent()) === 'mixed.txt', 'Forward comes back');
  await selectAgent('codex-b');
  await projectRow('beta-only').waitFor();
  await eventually(() => pathNow() === '/agents/codex-b', `URL names the agent (${pathNow()})`);
  await page.goBack();
  await eventually(async () => (await $('[data-testid="agent-select"]').inputValue()) === 'codex-a', 'Back restores the agent');
  await eventually(async () => (await $('[data-testid="file-path"]').textContent()) === 'mixed.txt', 'and its open file');
  // Global, nested, and through the sign-in page.
  await context.clearCookies();
  await page.goto(gw.url + '/agents/codex-a/global/files/skills/deep/SKILL.md');
  await $('[data-testid="login-form"] input[name="token"]').fill(gw.adminToken);
  await $('[data-testid="login-form"] button[type="submit"]').click();
  await eventually(async () => (await $('[data-testid="file-path"]').textContent()) === 'skills/deep/SKILL.md', 'deep link kept through sign-in');
  expect((await $('[data-testid="tab-global"]').getAttribute('aria-selected')) === 'true', 'Global tab from the URL');
  await row('skills/deep/SKILL.md').waitFor();
  await $('[data-testid="tab-projects"]').click();
  await eventually(() => pathNow().startsWith('/agents/codex-a'), 'tab in the URL');
});

test('Global: "New skill" makes skills/<name>/SKILL.md from a template; its YAML front matter is highlighted as YAML', async () => {
  await onAgentA();
  await $('[data-testid="tab-global"]').click();
  await $('[data-testid="new-skill"]').click();
  const d = dialog('new-skill-dialog');
  await d.locator('input').fill('lint');
  await d.locator('[data-action="confirm"]').click();
  await eventually(async () => (await $('[data-testid="file-path"]').textContent()) === 'skills/lint/SKILL.md', 'SKILL.md opened');
  expect(sa.exists('skills/lint/SKILL.md', 'global'), 'on disk');
  const text = sa.read('skills/lint/SKILL.md', 'global');
  expect(text.startsWith('---\nname: lint\ndescription: ') && text.includes('\n---\n'), `template front matter (${JSON.stringify(text)})`);
  await row('skills/lint/SKILL.md').waitFor();
  await $('[data-testid="clean"]').waitFor();
  // The front matter is parsed as YAML: "name" is a property name there, so it is highlighted unlike the Markdown body.
  await eventually(async () => (await $('.cm-editor').getAttribute('data-language')) === 'markdown', 'markdown language');
  const cls = await eventually(
    () =>
      page.evaluate(() => {
        const line = [...document.querySelectorAll('.cm-content .cm-line')].find((l) => l.textContent.startsWith('name:'));
        const span = line?.querySelector('span');
        // As YAML the key is a token of its own; as Markdown the whole line would be one (setext heading) span.
        return span && span.textContent === 'name' && span.className ? span.className : null;
      }),
    'the front matter key is highlighted',
  );
  expect(!!cls, `front matter token class ${cls}`);
  await $('[data-testid="tab-projects"]').click();
});

test('dark mode follows prefers-color-scheme, the editor included; at 768 px the editor and Save are on screen', async () => {
  await onAgentA();
  await openProject('bytes');
  await openFile('crlf.txt');
  const colors = () =>
    page.evaluate(() => ({
      body: getComputedStyle(document.documentElement).backgroundColor,
      editor: getComputedStyle(document.querySelector('.cm-editor')).backgroundColor,
      theme: document.querySelector('.cm-editor').dataset.theme,
    }));
  const lum = (rgb) => {
    const [r, g, b] = rgb.match(/\d+/g).map(Number);
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  await page.emulateMedia({ colorScheme: 'dark' });
  try {
    const dark = await eventually(async () => {
      const c = await colors();
      return c.theme === 'dark' && c;
    }, 'editor switched to its dark theme');
    expect(lum(dark.body) < 60 && lum(dark.editor) < 60, `dark page and editor (${JSON.stringify(dark)})`);
    await shot('dark.png');
  } finally {
    await page.emulateMedia({ colorScheme: 'light' });
  }
  const light = await eventually(async () => {
    const c = await colors();
    return c.theme === 'light' && c;
  }, 'back to light');
  expect(lum(light.body) > 200, `light page (${JSON.stringify(light)})`);
  for (const [w, h] of [
    [768, 1024],
    [1024, 768],
    [1366, 768],
  ]) {
    await page.setViewportSize({ width: w, height: h });
    await sleep(200);
    const box = await page.evaluate(() => {
      const r = (sel) => document.querySelector(sel)?.getBoundingClientRect();
      return { save: r('[data-testid="save"]'), editor: r('.cm-editor'), vw: innerWidth, vh: innerHeight, sy: scrollY };
    });
    expect(box.save && box.save.bottom <= box.vh && box.save.right <= box.vw, `${w}x${h}: Save visible without scrolling (${JSON.stringify(box)})`);
    expect(box.editor && box.editor.top < box.vh && box.editor.height >= 150, `${w}x${h}: editor visible (${JSON.stringify(box.editor)})`);
  }
  await page.setViewportSize({ width: 1280, height: 800 });
});

test('assets: served precompressed with Content-Encoding and Vary; hashed assets immutable, index.html no-cache', async () => {
  const index = await fetch(gw.url + '/', { headers: { 'Accept-Encoding': 'gzip' } });
  const html = await index.text();
  expect(index.headers.get('cache-control') === 'no-cache', `index Cache-Control ${index.headers.get('cache-control')}`);
  const js = /\/assets\/index-[^"]+\.js/.exec(html)?.[0];
  expect(js, 'index.html names its script');
  // Node's fetch decodes gzip itself and drops nothing else: check the headers and the decoded bytes.
  const enc = await fetch(gw.url + js, { headers: { 'Accept-Encoding': 'gzip' } });
  const plain = await fetch(gw.url + js, { headers: { 'Accept-Encoding': 'identity' } });
  expect(enc.headers.get('content-encoding') === 'gzip', `Content-Encoding ${enc.headers.get('content-encoding')}`);
  expect(enc.headers.get('vary') === 'Accept-Encoding' && plain.headers.get('vary') === 'Accept-Encoding', 'Vary: Accept-Encoding');
  expect(plain.headers.get('content-encoding') === null, 'identity gets the plain file');
  expect(enc.headers.get('cache-control') === 'public, max-age=31536000, immutable', `asset Cache-Control ${enc.headers.get('cache-control')}`);
  expect((await enc.text()) === (await plain.text()), 'same script either way');
  expect(/javascript/.test(enc.headers.get('content-type')), `Content-Type ${enc.headers.get('content-type')}`);
});

test('OpenAPI: served without credentials, and a client generator reads it from the URL (npx openapi-typescript URL)', async () => {
  const url = gw.url + '/api/v1/agent-gateway/openapi.json';
  const r = await fetch(url); // no cookie, no token
  expect(r.status === 200, `GET openapi.json without credentials: ${r.status}`);
  const doc = await r.json();
  expect(doc.openapi || doc.swagger, 'an OpenAPI document');
  expect(doc.info?.title === 'Agent Workspace Files API' && /^\d+\.\d+\.\d+$/.test(doc.info?.version ?? ''), `a real title and version (${JSON.stringify(doc.info)})`);
  const schemes = doc.components?.securitySchemes ?? {};
  expect(schemes.bearer?.scheme === 'bearer' && schemes.basic?.scheme === 'basic' && schemes.session?.in === 'cookie', `bearer, basic and session cookie schemes (${JSON.stringify(schemes)})`);
  const ops = Object.entries(doc.paths).flatMap(([p, o]) => Object.entries(o).map(([m, op]) => ({ id: `${m} ${p}`, op })));
  for (const { id, op } of ops) {
    expect(op.security?.length === 3, `${id}: security on the operation`);
    expect(op.summary, `${id}: a summary`);
  }
  const put = doc.paths['/api/v1/agent-gateway/agents/{agent_id}/projects/files'].put;
  const body = put.requestBody.content['application/json'].schema;
  const bodySchema = body.$ref ? doc.components.schemas[body.$ref.split('/').pop()] : body;
  expect(['workspace', 'path', 'content', 'expected_revision'].every((f) => bodySchema.required?.includes(f)), `UpdateProjectFile body required fields (${bodySchema.required})`);
  const err = doc.components.schemas.rpcStatus;
  expect(err?.properties?.details?.items?.$ref === '#/components/schemas/ErrorInfo' && doc.components.schemas.ErrorInfo?.properties?.reason, 'typed error details carrying the reason');
  const post = await fetch(url, { method: 'POST' });
  expect(post.status === 401 || post.status === 405 || post.status === 404, `only reading is public (POST: ${post.status})`);
  const agents = await fetch(gw.url + '/api/v1/agent-gateway/agents');
  expect(agents.status === 401, `the API itself still needs credentials (${agents.status})`);
  const bin = path.join(REPO, 'contracts/node_modules/.bin/openapi-typescript');
  expect(fs.existsSync(bin), `${path.relative(REPO, bin)} missing: run npm ci in contracts/ (make setup)`);
  const out = path.join(base, 'client.d.ts');
  const { execFileSync } = await import('node:child_process');
  try {
    execFileSync(bin, [url, '-o', out], { stdio: 'pipe', timeout: 60_000 });
  } catch (err) {
    throw new Check(`openapi-typescript ${url} failed: ${String(err.stderr ?? err.message).slice(0, 400)}`);
  }
  const ts = fs.readFileSync(out, 'utf8');
  expect(ts.includes('"/api/v1/agent-gateway/agents"'), 'generated client has the agents path');
  expect(ts.includes('ErrorInfo') && /reason: string/.test(ts), 'generated client types the error reason');
});

test('make run: refuses a taken port at once; every port and the state dir settable beside another stack; WEBDAV_WRITABLE=1; Ctrl-C says "stopped"', async () => {
  const { spawn, spawnSync } = await import('node:child_process');
  const net = await import('node:net');
  // The ports are chosen here and bound later by run.sh's processes. A port
  // the kernel handed out (listen on 0) is free again once closed, and any
  // process on the host listening on 0 or connecting out may get it before
  // run.sh binds it: run.sh then refuses it, rightly, as taken. So the ports
  // come from outside the kernel's ephemeral range, which it never assigns
  // by itself, and above run.sh's defaults (another make run); each is
  // checked free by binding it, and all are held until all are chosen.
  const [low, high] = fs.readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
  const ranges = [[20000, Math.min(low, 65536)], [Math.max(high + 1, 20000), 65536]].filter(([a, b]) => b - a >= 1000);
  expect(ranges.length, `room for ports outside the ephemeral range ${low}-${high}`);
  const bindPort = (port) =>
    new Promise((resolve) => {
      const srv = net.createServer();
      srv.once('error', () => resolve(null));
      srv.listen(port, '127.0.0.1', () => resolve(srv));
    });
  const names = ['GATEWAY_PORT', 'CODEX_A_RPC_PORT', 'CODEX_A_DAV_PORT', 'CODEX_A_METRICS_PORT', 'CODEX_B_RPC_PORT', 'CODEX_B_DAV_PORT', 'CODEX_B_METRICS_PORT'];
  const ports = {};
  const held = [];
  for (let tries = 0; held.length < names.length; tries++) {
    expect(tries < 1000, `no free ports outside the ephemeral range ${low}-${high}`);
    const [a, b] = ranges[Math.floor(Math.random() * ranges.length)];
    const srv = await bindPort(a + Math.floor(Math.random() * (b - a)));
    if (srv) ports[names[held.push(srv) - 1]] = String(srv.address().port);
  }
  await Promise.all(held.map((srv) => new Promise((r) => srv.close(r))));
  const stateDir = path.join(base, 'run-sh-state');
  const env = { PATH: process.env.PATH, HOME: base, STATE_DIR: stateDir, ...ports };
  const script = path.join(REPO, 'deploy/local/run.sh');
  // A taken port: refused at once, naming the variable, nothing started or written.
  const taken = net.createServer();
  await new Promise((r) => taken.listen(Number(ports.CODEX_B_DAV_PORT), '127.0.0.1', r));
  try {
    const t0 = Date.now();
    const r = spawnSync(script, ['--check-ports'], { env, encoding: 'utf8', timeout: 10_000 });
    expect(r.status === 1 && r.stderr.includes(`127.0.0.1:${ports.CODEX_B_DAV_PORT}`) && r.stderr.includes('CODEX_B_DAV_PORT'), `--check-ports refuses (${r.status}: ${r.stderr})`);
    const full = spawnSync(script, [], { env, encoding: 'utf8', timeout: 10_000 });
    expect(full.status === 1 && full.stderr.includes('in use'), `run.sh refuses (${full.status}: ${full.stderr})`);
    expect(Date.now() - t0 < 5000, 'at once');
    expect(!fs.existsSync(stateDir), 'nothing written before the check');
  } finally {
    await new Promise((r) => taken.close(r));
  }
  // A whole second stack (the e2e stack is the first) on the chosen ports, writable WebDAV.
  const child = spawn(script, [], { env: { ...env, WEBDAV_WRITABLE: '1' }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  // 'exit' can come before the last output is read: how it ended is judged
  // on the output once both pipes closed (or 5 s after the exit).
  const drained = Promise.all([child.stdout, child.stderr].map((s) => new Promise((r) => s.once('close', r))));
  let ended = null;
  const exited = new Promise((r) => child.once('exit', (code, sig) => r((ended = { code, sig })))).then(async (e) => {
    await Promise.race([drained, sleep(5000)]);
    return e;
  });
  // Ctrl-C: the terminal sends SIGINT to the foreground process group. A
  // stack that already ended is no error here (ESRCH).
  const kill = (sig) => {
    try {
      process.kill(-child.pid, sig);
    } catch (e) {
      if (e.code !== 'ESRCH') throw e;
    }
  };
  const stop = async () => {
    kill('SIGINT');
    const end = await Promise.race([exited, sleep(20_000).then(() => null)]);
    if (!end) kill('SIGKILL');
    return end;
  };
  try {
    // A stack that ended is not waited for: how it ended, with its output, is the failure.
    await eventually(() => ended || out.includes('is running'), `stack started (${out.slice(-500)})`, 60_000);
    if (ended) await exited;
    expect(!ended, `stack started, not ended (${JSON.stringify(ended)}): ${out.slice(-1500)}`);
    const url = `http://127.0.0.1:${ports.GATEWAY_PORT}`;
    const token = /Admin token\s+(\S+)/.exec(out)?.[1];
    expect(token, 'token printed');
    expect(out.includes(`curl -H "Authorization: Bearer ${token}" ${url}/api/v1/agent-gateway/agents`), `quotes kept in the printed commands (${out})`);
    expect(out.includes('writable view'), 'says the WebDAV view is writable');
    expect(out.includes(`export T=${token} G=${url}/api/v1/agent-gateway`), 'prints the export line the README REST walk-through starts from');
    const opt = await fetch(url + '/dav/codex-a/projects/', { method: 'OPTIONS', headers: { Authorization: `Bearer ${token}` } });
    expect((opt.headers.get('allow') ?? '').includes('DELETE'), `writable WebDAV view (Allow: ${opt.headers.get('allow')})`);
    const agents = await fetch(url + '/api/v1/agent-gateway/agents', { headers: { Authorization: `Bearer ${token}` } });
    expect(agents.status === 200, `REST answers on the chosen port (${agents.status})`);
  } catch (err) {
    // The first failure is the one reported; the stack is stopped either way.
    await stop();
    throw err;
  }
  const end = await stop();
  expect(end && end.code === 0, `exit status 0 after Ctrl-C (${JSON.stringify(end)}; output: ${out.slice(-1500)})`);
  expect(out.trimEnd().endsWith('run: stopped') && !out.includes('a process exited'), `ends with "stopped" (${out.slice(-300)})`);
  for (const p of [ports.GATEWAY_PORT, ports.CODEX_A_RPC_PORT]) {
    const r = spawnSync('bash', ['-c', `! (exec 3<>/dev/tcp/127.0.0.1/${p}) 2>/dev/null`]);
    expect(r.status === 0, `port ${p} free again after Ctrl-C`);
  }
});

test('REST: the README walk-through works pasted as written (create project, create file, read, update, stale update refused)', async () => {
  const readme = fs.readFileSync(path.join(REPO, 'README.md'), 'utf8');
  const rest = readme.slice(readme.indexOf('### REST'));
  const block = /```sh\n([\s\S]*?)```/.exec(rest)?.[1];
  expect(block && block.includes('expected_revision'), 'README has the REST block');
  const { spawnSync } = await import('node:child_process');
  // What `make run` prints for it: export T=<token> G=<url>/api/v1/agent-gateway
  const env = { PATH: process.env.PATH, HOME: base, T: gw.adminToken, G: `${gw.url}/api/v1/agent-gateway` };
  const r = spawnSync('bash', ['-c', block], { env, encoding: 'utf8', timeout: 60_000 });
  const out = r.stdout + r.stderr;
  expect(r.status === 0, `the block ran (${r.status}): ${out.slice(-600)}`);
  expect(sa.read('demo/notes.md') === 'hello\n', `the update with the read revision is on disk (${JSON.stringify(sa.exists('demo/notes.md') && sa.read('demo/notes.md'))})`);
  expect(/REVISION_MISMATCH/.test(out) && /HTTP 409\s*$/.test(out), `the stale update is refused with 409 REVISION_MISMATCH: ${out.slice(-400)}`);
  expect(!out.includes('"code":16') && !/\b401\b/.test(out.split('\n').slice(-2).join('\n')), 'authenticated throughout');
  // Leave no "demo" behind for later tests.
  await fetch(`${gw.url}/api/v1/agent-gateway/agents/codex-a/projects/demo?confirm_name=demo`, { method: 'DELETE', headers: { Authorization: `Bearer ${gw.adminToken}` } });
});

test('layout: readable on a narrow window', async () => {
  await ensureSignedIn();
  await selectAgent('codex-a');
  await openProject('alpha-only');
  await row('README.md').click();
  await $('[data-testid="file-path"]').waitFor();
  await page.setViewportSize({ width: 420, height: 860 });
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  expect(overflow <= 1, `no horizontal scrolling at 420px (overflow ${overflow}px)`);
  await shot('narrow.png');
  await page.setViewportSize({ width: 1280, height: 800 });
});

registerCheckpointTests({ test, expect, eventually, $, dialog, row, projectRow, ensureSignedIn, selectAgent, openProject, clickMenu, shot, sa: () => sa, sb: () => sb, gw: () => gw });
registerLiveTests(
  { test, expect, eventually },
  { get page() { return page; }, get gw() { return gw; }, get sa() { return sa; }, get sb() { return sb; }, base },
  { $, dialog, row, projectRow, openProject, ensureSignedIn, selectAgent, editorText, setEditorText, shot },
);
registerFeatureTests({ test, expect, eventually, $, dialog, row, projectRow, ensureSignedIn, selectAgent, openProject, sb: () => sb });

// ---------------------------------------------------------------------------

let passed = 0;
let failed = 0;
try {
  await setUp();
  for (const t of tests) {
    if (only && !only.test(t.name)) continue;
    const started = Date.now();
    recent.length = 0;
    try {
      await t.fn();
      await checkNoLeaks(t.name);
      passed++;
      console.log(`ok   ${t.name} (${Date.now() - started} ms)`);
    } catch (err) {
      failed++;
      console.log(`FAIL ${t.name}\n     ${err instanceof Check ? err.message : err.stack}`);
      if (recent.length) console.log(`     recent HTTP errors:\n       ${recent.join('\n       ')}`);
      fs.mkdirSync(OUT, { recursive: true });
      const file = path.join(OUT, t.name.replace(/[^a-z0-9]+/gi, '-').slice(0, 60) + '.png');
      await page?.screenshot({ path: file }).catch(() => {});
      // Leave no dialog or menu open for the next test.
      for (let i = 0; i < 3; i++) await page?.keyboard.press('Escape').catch(() => {});
    }
  }
  if (leaks.length) {
    failed++;
    console.log(`FAIL no endpoint or host path shown\n     ${leaks.join('\n     ')}`);
  } else {
    passed++;
    console.log('ok   no endpoint or host path shown on any page');
  }
} catch (err) {
  failed++;
  console.log(`FAIL setting up the stack\n     ${err.stack ?? err}`);
} finally {
  if (failed && gw) {
    fs.mkdirSync(OUT, { recursive: true });
    fs.writeFileSync(path.join(OUT, 'gateway.log'), gw.logs.join('\n'));
    if (sa) fs.writeFileSync(path.join(OUT, 'sidecar-a.log'), sa.logs.join('\n'));
    if (sb) fs.writeFileSync(path.join(OUT, 'sidecar-b.log'), sb.logs.join('\n'));
    console.log(`logs and failure screenshots: ${path.relative(REPO, OUT)}/`);
  }
  await tearDown();
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
