// The browser tests' shared stack and page (issue #24: the tests split by
// feature on @playwright/test). One worker runs every spec file in order
// (playwright.config.ts: workers 1, files sorted by their number), so the
// stack — the real agent-gateway and two real agent-sidecars on 127.0.0.1
// (harness.mjs) — and one headless chromium page are started once, by the
// worker-scoped fixture below, and later tests build on the state earlier
// ones leave, as in one ordered run. The tests stop and restart those
// processes and read their volumes, so they live in the worker that runs the
// tests; global-setup.mjs checks chromium and builds the binaries first.
// After every test the page is checked for endpoints and host paths; a
// failure leaves a screenshot and the processes' logs in e2e/out/.
import fs from 'node:fs';
import path from 'node:path';
import { chromium, test as base_ } from '@playwright/test';
import { binaries, certs, Gateway, REPO, Sidecar, tempBase } from './harness.mjs';

export { REPO };
export const SHOTS = process.env.E2E_SCREENSHOTS || path.join(REPO, 'docs/screenshots');
const OUT = path.join(REPO, 'portal/e2e/out');
export const log = (...a) => console.log('[e2e]', ...a);
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

class Check extends Error {}
/** A check of the run: fails the test with msg unless cond holds. */
export function expect(cond, msg) {
  if (!cond) throw new Check(msg);
}
/** Polls fn until it returns something other than false/undefined/null. */
export async function eventually(fn, msg, timeout = 10_000) {
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

export const MANY_PROJECTS = 120;
// [file, text, CodeMirror language the editor must switch to]
export const LANGUAGE_FILES = [
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
export const BYTE_FILES = [
  ['crlf.txt', 'one\r\ntwo\r\nthree\r\n'],
  ['mixed.txt', 'a\r\nb\nc\r\nd'],
  ['bom.txt', '\ufeff\tx = 1\r\n\ty = 2'],
];


// The run's state, set by the worker fixture (ES module bindings: the spec
// files see the values once the stack is up).
export let base, gw, sa, sb, context, page;
const leaks = [];
const recent = []; // last HTTP errors the page saw (printed with a failure)
export const pageErrors = []; // uncaught errors in the page
export const requested = []; // paths of every request the page made

async function setUp(launchOptions) {
  base = tempBase();
  const bins = binaries(base, log);
  certs(base, bins.gateway, ['codex-a', 'codex-b']);
  sa = new Sidecar('codex-a', base, bins.sidecar, { checkpointsPerWorkspace: 40 });
  // codex-b's checkpoint store is tiny, so always full: the delete override test (20-checkpoints.spec.ts).
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
    ...launchOptions,
    headless: true,
    viewport: { width: 1280, height: 800 },
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

async function tearDown(failed) {
  if (failed && gw) {
    fs.mkdirSync(OUT, { recursive: true });
    fs.writeFileSync(path.join(OUT, 'gateway.log'), gw.logs.join('\n'));
    if (sa) fs.writeFileSync(path.join(OUT, 'sidecar-a.log'), sa.logs.join('\n'));
    if (sb) fs.writeFileSync(path.join(OUT, 'sidecar-b.log'), sb.logs.join('\n'));
    console.log(`logs and failure screenshots: ${path.relative(REPO, OUT)}/`);
  }
  await context?.close().catch(() => {});
  await gw?.stop().catch(() => {});
  await Promise.all([sa?.stop(), sb?.stop()].map((p) => p?.catch(() => {})));
  if (!process.env.E2E_KEEP && base) fs.rmSync(base, { recursive: true, force: true });
}

// ---------------------------------------------------------------------------
// page helpers

export const $ = (sel) => page.locator(sel);
export const dialog = (testid) => page.locator(`dialog[open][data-testid="${testid}"]`);
export const row = (p) => page.locator(`.tree-row[data-path="${p}"]`);
export const projectRow = (name) => page.locator(`.project-row[data-project="${name}"]`);

export async function signIn(token = gw.adminToken) {
  await page.goto(gw.url + '/');
  await $('[data-testid="login-form"] input[name="token"]').fill(token);
  await $('[data-testid="login-form"] button[type="submit"]').click();
}

export async function ensureSignedIn() {
  if (await $('[data-testid="agent-select"]').count()) return;
  await signIn();
  await $('[data-testid="agent-select"]').waitFor();
}

export async function selectAgent(id) {
  await $('[data-testid="agent-select"]').selectOption(id);
}

export async function openProject(name) {
  if ((await $('[data-testid="tab-projects"]').getAttribute('aria-selected')) !== 'true') await $('[data-testid="tab-projects"]').click();
  await projectRow(name).locator('.project-name').click();
  await eventually(async () => (await $('.sidebar-section.files h2').textContent())?.includes(name), `project ${name} opened`);
}

export async function editorText() {
  return page.evaluate(() => {
    const lines = [...document.querySelectorAll('.cm-content .cm-line')].map((l) => l.textContent);
    return lines.join('\n');
  });
}

export async function setEditorText(text) {
  await $('.cm-content').click();
  await page.keyboard.press('Control+A');
  await page.keyboard.press('Delete');
  await page.keyboard.insertText(text);
}

export async function shot(name) {
  fs.mkdirSync(SHOTS, { recursive: true });
  // Transient toasts from earlier steps would only clutter the picture.
  const toasts = (v) => page.evaluate((v) => document.querySelectorAll('.notice-slot').forEach((n) => (n.style.visibility = v)), v);
  await toasts('hidden');
  await page.screenshot({ path: path.join(SHOTS, name) });
  await toasts('');
}

/** No endpoint, loopback address or host path may ever be shown. */
export async function checkNoLeaks(where) {
  const text = await page.evaluate(() => document.body.innerText + ' ' + [...document.querySelectorAll('dialog')].map((d) => d.innerText).join(' '));
  for (const bad of ['127.0.0.1', 'localhost', base, '/tmp/', ':9091', sa.ports.rpc, sb.ports.rpc]) {
    if (bad && text.includes(bad)) leaks.push(`${where}: page shows "${bad}"`);
  }
}

export async function clickMenu(label) {
  const item = page.locator('[data-testid="context-menu"] [role="menuitem"]', { hasText: label });
  await item.click();
}

export async function openFile(p) {
  await row(p).click();
  await eventually(async () => (await $('[data-testid="file-path"]').textContent()) === p, `${p} opened`);
  await eventually(async () => (await $('.cm-content').count()) === 1, 'editor shown');
}

/** Clicks line n (0-based) of the editor and puts the cursor at its end. */
export async function endOfLine(n) {
  await page.locator('.cm-content .cm-line').nth(n).click();
  await page.keyboard.press('End');
}

export const hex = (b) => Buffer.from(b).toString('hex');

/** codex-a selected with its projects listed (earlier tests may leave another agent selected). */
export async function onAgentA() {
  await ensureSignedIn();
  if ((await $('[data-testid="agent-select"]').inputValue()) !== 'codex-a') await selectAgent('codex-a');
  if ((await $('[data-testid="tab-projects"]').getAttribute('aria-selected')) !== 'true') await $('[data-testid="tab-projects"]').click();
  await projectRow('alpha-only').waitFor();
}

export const pathNow = () => new URL(page.url()).pathname;

// ---------------------------------------------------------------------------
// fixtures

let failures = 0;

// Leaks seen by any worker of the run (a failure restarts the worker).
const leakLog = () => path.join(process.env.E2E_RUN_DIR ?? OUT, 'leaks.txt');
/** Every "page shows …" the run's tests saw. */
export function leaksSeen() {
  return fs.existsSync(leakLog()) ? fs.readFileSync(leakLog(), 'utf8').split('\n').filter(Boolean) : [];
}

/**
 * test: Playwright's, with the stack (worker scope, started once) and the
 * checks after every test (no endpoint or host path shown; on failure a
 * screenshot, the recent HTTP errors, and no dialog left open).
 */
export const test = base_.extend({
  stack: [
    async ({ launchOptions }, use) => {
      await setUp(launchOptions);
      await use({ gw, sa, sb });
      await tearDown(failures > 0);
    },
    { scope: 'worker', auto: true, timeout: 180_000 },
  ],
  checks: [
    async ({}, use, testInfo) => {
      recent.length = 0;
      await use();
      if (testInfo.status === testInfo.expectedStatus) {
        await checkNoLeaks(testInfo.title);
        const shown = leaks.splice(0);
        if (shown.length) {
          fs.appendFileSync(leakLog(), shown.join('\n') + '\n');
          failures++;
          throw new Check(`no endpoint or host path shown:\n     ${shown.join('\n     ')}`);
        }
        return;
      }
      failures++;
      if (recent.length) console.log(`     recent HTTP errors:\n       ${recent.join('\n       ')}`);
      fs.mkdirSync(OUT, { recursive: true });
      const file = path.join(OUT, testInfo.title.replace(/[^a-z0-9]+/gi, '-').slice(0, 60) + '.png');
      await page?.screenshot({ path: file }).catch(() => {});
      // Leave no dialog or menu open for the next test.
      for (let i = 0; i < 3; i++) await page?.keyboard.press('Escape').catch(() => {});
    },
    { auto: true },
  ],
});
