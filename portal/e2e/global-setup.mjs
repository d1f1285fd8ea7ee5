// Once before the browser tests (playwright.config.ts): the system chromium
// must be there (no browser is downloaded), and the binaries under test are
// chosen or built once (harness.mjs binaries(): bin/ from `make build` when
// newer than the portal sources, else a fresh build) and handed to the
// worker through the environment, with a run directory for what the whole
// run collects; so are oauth2-proxy (deploy/scripts/k8s-tools.sh, cached)
// and mock-oidc for the single sign-on test (harness.mjs ssoBinaries()).
// The stack itself starts in the worker (fixtures.mjs): the tests stop and
// restart its processes.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { binaries, ssoBinaries } from './harness.mjs';
import { CHROMIUM } from './chromium.mjs';

export default async function globalSetup() {
  if (!fs.existsSync(CHROMIUM)) {
    throw new Error(`e2e: ${CHROMIUM} not found. Install it with \`make setup\` (or apt-get install -y chromium).`);
  }
  const run = fs.mkdtempSync(path.join(os.tmpdir(), 'portal-e2e-run-'));
  const bins = binaries(run, (...a) => console.log('[e2e]', ...a));
  process.env.AGENT_SIDECAR_BIN = bins.sidecar;
  process.env.AGENT_GATEWAY_BIN = bins.gateway;
  const sso = ssoBinaries(run, (...a) => console.log('[e2e]', ...a));
  process.env.OAUTH2_PROXY_BIN = sso.proxy;
  process.env.MOCK_OIDC_BIN = sso.oidc;
  process.env.E2E_RUN_DIR = run;
  return async () => {
    if (!process.env.E2E_KEEP) fs.rmSync(run, { recursive: true, force: true });
  };
}
