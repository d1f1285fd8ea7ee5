// Sign-in, the agent list, sign-out and the trusted proxy.
// Tests run in order (serial) and build on the state earlier ones (and
// earlier spec files) leave; the stack and page are fixtures.mjs's.
import { test, $, context, ensureSignedIn, eventually, expect, gw, page, projectRow, requested, row, selectAgent, shot, signIn } from './fixtures.mjs';

test.describe.configure({ mode: 'serial' });

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

test('trusted proxy: an admin group member just works (no login; shown as SSO, with the proxy\'s sign-out), others get no access', async () => {
  const proxied = await context.newPage();
  try {
    await proxied.setExtraHTTPHeaders({ 'X-Forwarded-User': 'carol', 'X-Forwarded-Groups': 'staff, workspace-admins' });
    await proxied.goto(gw.url + '/');
    await proxied.locator('[data-testid="agent-select"]').waitFor();
    expect((await proxied.locator('[data-testid="operator"]').textContent()) === 'carol', 'operator from the proxy');
    expect((await proxied.locator('[data-testid="sso"]').textContent()) === 'via SSO', 'signed in via SSO shown');
    expect((await proxied.locator('[data-testid="logout"]').count()) === 1, 'the proxy\'s sign-out offered');
    expect((await proxied.locator('[data-testid="login-form"]').count()) === 0, 'no token login under a proxy');
    await proxied.locator('.project-row[data-project="alpha-only"]').waitFor();
    await proxied.setExtraHTTPHeaders({ 'X-Forwarded-User': 'dave', 'X-Forwarded-Groups': 'staff' });
    await proxied.goto(gw.url + '/');
    await proxied.locator('[data-testid="no-access"]').waitFor();
  } finally {
    await proxied.close();
  }
});
