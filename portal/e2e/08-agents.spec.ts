// The agent list and switching agents.
// Tests run in order (serial) and build on the state earlier ones (and
// earlier spec files) leave; the stack and page are fixtures.mjs's.
import { Gateway } from './harness.mjs';
import { test, $, checkNoLeaks, ensureSignedIn, eventually, expect, openProject, page, projectRow, row, selectAgent, shot, sleep } from './fixtures.mjs';

test.describe.configure({ mode: 'serial' });

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
