// Hundreds of agents (#26): a second gateway with 10,000 more static agents
// (no sidecars) beside the usual codex-a, codex-b and codex-plain. The
// Agents page searches, pages and opens one; the picker's search finds an
// agent that is not on its first page. Its own browser, so the shared page's
// session (same host, other port) is left alone.
import { chromium, type Browser, type Page } from '@playwright/test';
import { CHROMIUM } from './chromium.mjs';
import { bulkAgent, Gateway } from './harness.mjs';
import { base, eventually, expect, gw, sa, sb, test } from './fixtures.mjs';

test.describe.configure({ mode: 'serial' });

const EXTRA = 10000;
const TOTAL = (EXTRA + 3).toLocaleString('en');
let many: Gateway;
let browser: Browser;
let p: Page;

test.beforeAll(async () => {
  many = new Gateway(base, gw.bin, [sa, sb], { dir: 'gateway-many', extraAgents: EXTRA });
  await many.start();
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu'] });
  p = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  p.setDefaultTimeout(10_000);
  await p.goto(many.url + '/');
  await p.locator('[data-testid="login-form"] input[name="token"]').fill(many.adminToken);
  await p.locator('[data-testid="login-form"] button[type="submit"]').click();
  await p.locator('[data-testid="agent-select"]').waitFor();
});

test.afterAll(async () => {
  await browser?.close().catch(() => {});
  await many?.stop().catch(() => {});
});

test('many agents: the picker shows its first page, the default, and finds one beyond it by search', async () => {
  const select = p.locator('[data-testid="agent-select"]');
  await eventually(async () => (await select.inputValue()) === 'codex-a', 'default agent selected among all');
  const more = await p.locator('[data-testid="agent-more"]').textContent();
  expect(more?.includes(`${(EXTRA + 3 - 50).toLocaleString('en')} more — refine the search`), `first page and how many more (${more})`);
  const far = bulkAgent(1234);
  expect((await p.locator(`[data-testid="agent-select"] option[value="${far}"]`).count()) === 0, 'far agent not on the first page');
  const t0 = Date.now();
  await p.locator('[data-testid="agent-search"]').fill(far);
  await eventually(async () => (await p.locator(`[data-testid="agent-select"] option[value="${far}"]`).count()) === 1, 'search found the far agent');
  expect(Date.now() - t0 < 5000, 'search answered promptly');
  expect((await p.locator('[data-testid="agent-select"] option[value="codex-a"]').count()) === 1, 'the selected agent stays in the picker');
  await select.selectOption(far);
  await eventually(async () => (await p.locator('[data-testid="no-project-management"]').textContent())?.includes(far), 'far agent opened');
  expect(new URL(p.url()).pathname === `/agents/${far}`, 'URL names the far agent');
});

test('many agents: the Agents page searches, pages with cursors and opens an agent', async () => {
  await p.locator('[data-testid="nav-agents"]').click();
  const range = p.locator('[data-testid="agents-page-range"]');
  await eventually(async () => (await range.textContent())?.trim() === `1–50 of ${TOTAL}`, 'first page of all agents');
  const first = p.locator('.agent-row').first();
  expect((await first.getAttribute('data-agent')) === 'codex-a', 'sorted by ID');
  expect((await first.locator('.agent-state').textContent())?.trim() === 'ready', 'codex-a ready');
  expect((await first.locator('.agent-source').textContent())?.trim() === 'static', 'codex-a static');
  expect((await first.locator('.agent-pm').textContent())?.trim() === 'yes', 'codex-a manages projects');
  await p.locator('[data-testid="agents-page-next"]').click();
  await eventually(async () => (await range.textContent())?.trim() === `51–100 of ${TOTAL}`, 'second page');
  expect((await p.locator('.agent-row').first().getAttribute('data-agent')) === bulkAgent(47), 'second page starts after the first');
  await p.locator('[data-testid="agents-page-next"]').click();
  await eventually(async () => (await range.textContent())?.trim() === `101–150 of ${TOTAL}`, 'third page');
  await p.locator('[data-testid="agents-page-prev"]').click();
  await eventually(async () => (await range.textContent())?.trim() === `51–100 of ${TOTAL}`, 'back to the second page');
  await p.locator('[data-testid="agents-page-search"]').fill('BULK-0199');
  await eventually(async () => (await range.textContent())?.trim() === '1–10 of 10', 'search narrows to ten');
  expect(await p.locator('[data-testid="agents-page-prev"]').isDisabled(), 'a search starts at its first page');
  expect(await p.locator('[data-testid="agents-page-next"]').isDisabled(), 'one page of matches');
  const target = bulkAgent(1995);
  const r = p.locator(`.agent-row[data-agent="${target}"]`);
  expect((await r.locator('.agent-state').textContent())?.trim() === 'no sidecar', 'state of an agent without sidecar');
  expect((await r.locator('.agent-pm').textContent())?.trim() === 'no', 'no project management');
  await r.locator('[data-testid="open-agent"]').click();
  await eventually(async () => (await p.locator('[data-testid="agents-page"]').count()) === 0, 'Agents page closed on open');
  await eventually(async () => (await p.locator('[data-testid="no-project-management"]').textContent())?.includes(target), 'opened from the Agents page');
  expect((await p.locator('[data-testid="agent-select"]').inputValue()) === target, 'picker shows the opened agent');
  // Back to a managed agent through the page as well.
  await p.locator('[data-testid="nav-agents"]').click();
  await p.locator('[data-testid="agents-page-search"]').fill('codex-b');
  await eventually(async () => (await range.textContent())?.trim() === '1–1 of 1', 'codex-b found');
  await p.locator('.agent-row[data-agent="codex-b"] [data-testid="open-agent"]').click();
  await p.locator('.project-row[data-project="beta-only"]').waitFor();
});
