// The layout on a narrow window.
// Tests run in order (serial) and build on the state earlier ones (and
// earlier spec files) leave; the stack and page are fixtures.mjs's.
import { test, $, ensureSignedIn, expect, openProject, page, row, selectAgent, shot } from './fixtures.mjs';

test.describe.configure({ mode: 'serial' });

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
