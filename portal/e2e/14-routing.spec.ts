// Deep links.
// Tests run in order (serial) and build on the state earlier ones (and
// earlier spec files) leave; the stack and page are fixtures.mjs's.
import { test, $, context, eventually, expect, gw, onAgentA, openFile, page, pathNow, projectRow, row, sa, selectAgent } from './fixtures.mjs';

test.describe.configure({ mode: 'serial' });

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
