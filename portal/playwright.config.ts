// Browser end-to-end tests of the portal (PRD §15.3) on @playwright/test,
// against the real agent-gateway and two real agent-sidecars on 127.0.0.1
// (e2e/fixtures.mjs, e2e/harness.mjs), driven over the system chromium.
// One spec file per feature, run in the order of their numbers by one
// worker: the tests share one stack and one page, and later ones build on
// what earlier ones leave. Run: npm run e2e (make test-portal); the list
// reporter ends with "N passed" (and "N failed"; the exit status is then 1).
import { defineConfig } from '@playwright/test';
import { CHROMIUM } from './e2e/chromium.mjs';

export default defineConfig({
  testDir: 'e2e',
  testMatch: '*.spec.ts',
  globalSetup: './e2e/global-setup.mjs',
  outputDir: 'e2e/out/results',
  workers: 1,
  fullyParallel: false,
  retries: 0,
  forbidOnly: true,
  // E2E_ONLY=<regexp>: a subset by title (as `-g`).
  ...(process.env.E2E_ONLY ? { grep: new RegExp(process.env.E2E_ONLY) } : {}),
  timeout: 180_000,
  reporter: [['list']],
  use: {
    launchOptions: {
      executablePath: CHROMIUM,
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
    },
  },
});
