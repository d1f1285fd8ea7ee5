// The browser half of the Kubernetes node tier's SSO step
// (deploy/k8s/tier/node_sso_test.go): headless Chromium signs in through
// the gateway pod's oauth2-proxy on the real kubelet, as the user the Go
// test queued at mockoidc, and either edits a file in the portal (--as
// admin) or meets the no-access page and a 403 from the API (--as
// outsider). The Go test checks the volume; this prints one JSON line of
// what it saw and exits 1 with the reason when a step fails.
//
//   node e2e/node-sso.mjs --url http://<service>:4180 --as admin --project sso-demo --file notes.md --text '…'
import { parseArgs } from 'node:util';
import { chromium } from '@playwright/test';
import { CHROMIUM } from './chromium.mjs';

const { values: a } = parseArgs({
  options: {
    url: { type: 'string' },
    as: { type: 'string' },
    agent: { type: 'string', default: 'codex-a' },
    project: { type: 'string', default: '' },
    file: { type: 'string', default: '' },
    text: { type: 'string', default: '' },
  },
});
if (!a.url || !['admin', 'outsider'].includes(a.as)) {
  console.error('usage: node-sso.mjs --url URL --as admin|outsider [--agent A --project P --file F --text T]');
  process.exit(2);
}

const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true });
let step = 'start';
try {
  const p = await browser.newPage();
  p.setDefaultTimeout(20_000);
  const $ = (sel, opts) => p.locator(sel, opts);
  step = 'the proxy sign-in page';
  await p.goto(a.url + '/');
  step = "the proxy's sign-in button";
  await $('button', { hasText: /^Sign in with/ }).click();
  if (a.as === 'outsider') {
    step = 'the no-access page';
    await $('[data-testid="no-access"]').waitFor();
    const text = (await $('[data-testid="no-access"]').textContent()) ?? '';
    const status = await p.evaluate(async () => (await fetch('/api/v1/agent-gateway/agents')).status);
    console.log(JSON.stringify({ as: a.as, noAccess: text.replace(/\s+/g, ' ').trim(), apiStatus: status }));
  } else {
    step = 'the portal after sign-in';
    await $('[data-testid="agent-select"]').waitFor();
    const operator = await $('[data-testid="operator"]').textContent();
    const sso = await $('[data-testid="sso"]').textContent();
    if ((await $('[data-testid="agent-select"]').inputValue()) !== a.agent) await $('[data-testid="agent-select"]').selectOption(a.agent);
    step = `project ${a.project}`;
    await $(`.project-row[data-project="${a.project}"] .project-name`).click();
    step = `file ${a.file}`;
    await $(`.tree-row[data-path="${a.file}"]`).click();
    await p.waitForFunction((f) => document.querySelector('[data-testid="file-path"]')?.textContent === f, a.file);
    step = 'the edit';
    await $('.cm-content').click();
    await p.keyboard.press('Control+A');
    await p.keyboard.press('Delete');
    await p.keyboard.insertText(a.text);
    await p.keyboard.press('Control+S');
    step = 'the save';
    await $('[data-testid="clean"]').waitFor();
    console.log(JSON.stringify({ as: a.as, operator, sso, saved: a.file }));
  }
} catch (err) {
  console.error(`node-sso: ${step}: ${err.message.split('\n')[0]}`);
  process.exitCode = 1;
} finally {
  await browser.close();
}
