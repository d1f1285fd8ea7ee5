// Single sign-on (docs/sso.md): the built oauth2-proxy in front of the
// real gateway against a real OIDC provider (mockoidc, the mock-oidc
// command). An admin-group user signs in through the proxy, edits a file,
// sees who is signed in (via SSO) and signs out through the proxy; a user
// outside the admin group gets the no-access page. Its own browser: no
// cookie of the other tests' page comes along.
import { chromium } from '@playwright/test';
import { test, eventually, expect, gw, sa } from './fixtures.mjs';
import { OAuth2Proxy, Oidc } from './harness.mjs';

test.describe.configure({ mode: 'serial' });

const ada = { name: 'ada', email: 'ada@example.com', groups: ['devs', 'workspace-admins'] };
const otto = { name: 'otto', email: 'otto@example.com', groups: ['devs'] };

test('SSO: sign in through oauth2-proxy as an admin-group user, edit a file, sign out; an outsider gets no access', async ({ launchOptions }) => {
  sa.write('sso-demo/notes.md', 'before sign-in\n');
  const oidc = new Oidc(process.env.MOCK_OIDC_BIN);
  const proxy = new OAuth2Proxy(process.env.OAUTH2_PROXY_BIN);
  const browser = await chromium.launch({ ...launchOptions, headless: true });
  try {
    await oidc.start();
    await proxy.start(oidc, gw.url);
    const p = await browser.newPage();
    p.setDefaultTimeout(15_000);
    const $ = (sel) => p.locator(sel);
    const signInButton = $('button', { hasText: 'Sign in with Test OIDC' });

    await oidc.queue(ada);
    await p.goto(proxy.url + '/');
    await signInButton.click();
    await $('[data-testid="agent-select"]').waitFor();
    expect((await $('[data-testid="operator"]').textContent()) === 'ada', 'the signed-in user is shown');
    expect((await $('[data-testid="sso"]').textContent()) === 'via SSO', 'signed in via SSO shown');
    expect((await $('[data-testid="login-form"]').count()) === 0, 'no token login');

    if ((await $('[data-testid="agent-select"]').inputValue()) !== 'codex-a') await $('[data-testid="agent-select"]').selectOption('codex-a');
    await $('.project-row[data-project="sso-demo"] .project-name').click();
    await $('.tree-row[data-path="notes.md"]').click();
    await eventually(async () => (await $('[data-testid="file-path"]').textContent()) === 'notes.md', 'file opened');
    await $('.cm-content').click();
    await p.keyboard.press('Control+A');
    await p.keyboard.press('Delete');
    await p.keyboard.insertText('edited by ada through SSO\n');
    await p.keyboard.press('Control+S');
    await eventually(() => sa.read('sso-demo/notes.md') === 'edited by ada through SSO\n', 'the edit reached the volume');

    await $('[data-testid="logout"]').click();
    await signInButton.waitFor();
    const after = await p.evaluate(async () => (await fetch('/api/v1/agent-gateway/session', { redirect: 'manual' })).status);
    expect(after !== 200, `the gateway is out of reach after signing out (got ${after})`);

    await oidc.queue(otto);
    await signInButton.click();
    await $('[data-testid="no-access"]').waitFor();
    const text = await $('[data-testid="no-access"]').textContent();
    expect(text.includes('otto') && text.includes('single sign-on'), `no-access names the SSO user: ${text}`);
    const r = await p.evaluate(async () => (await fetch('/api/v1/agent-gateway/agents')).status);
    expect(r === 403, `an outsider gets 403 from the API (got ${r})`);
    await $('[data-testid="no-access"] button').click();
    await signInButton.waitFor();
  } catch (err) {
    console.log(`oauth2-proxy logs:\n${proxy.logs.slice(-30).join('\n')}`);
    throw err;
  } finally {
    await browser.close();
    proxy.stop();
    oidc.stop();
  }
});
