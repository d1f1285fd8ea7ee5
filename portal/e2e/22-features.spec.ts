// Browser end-to-end test of an agent's unavailable feature (issue #23):
// codex-b's checkpoint store replaced by a symlink (to a canary folder in
// the run's temp dir) leaves its files working and shows a banner for that
// agent only; once the store is repaired the banner goes, without a restart.
// Runs after the tests that use codex-b's store; the last check of the run
// is that no page showed an endpoint or host path.
import fs from 'node:fs';
import path from 'node:path';
import * as stack from './fixtures.mjs';
import { test, expect, eventually, $, dialog, row, projectRow, ensureSignedIn, selectAgent, openProject } from './fixtures.mjs';

test.describe.configure({ mode: 'serial' });

const h = { projectRow, sb: () => stack.sb };

test('features: a symlinked checkpoint store shows a banner for that agent, files still work; repaired, it goes by itself', async () => {
  const b = h.sb();
  const store = b.checkpoints; // services.checkpoints.dir
  const aside = path.join(b.dir, 'store-aside');
  const bait = path.join(b.dir, 'bait');
  await b.stop();
  if (fs.existsSync(store)) fs.renameSync(store, aside);
  fs.mkdirSync(bait, { mode: 0o777 });
  fs.chmodSync(bait, 0o777);
  fs.writeFileSync(path.join(bait, 'canary.txt'), 'CANARY\n');
  fs.symlinkSync(bait, store);
  await b.start();
  const banner = () => $('[data-testid="feature-banner-checkpoints"]');
  const panel = dialog('checkpoints-panel');
  const openPanel = async () => {
    await $('[data-testid="open-checkpoints"]').click();
    await panel.waitFor();
  };
  const closePanel = async () => {
    if (await panel.count()) await panel.locator('[data-testid="ckpt-close"]').click();
  };
  try {
    await ensureSignedIn();
    await selectAgent('codex-b');
    // The gateway reconnects to the restarted sidecar with back-off.
    await eventually(
      async () => {
        await $('[data-testid="refresh-projects"]').click().catch(() => {});
        return (await h.projectRow('beta-only').count()) > 0;
      },
      'codex-b lists its projects again',
      30_000,
    );
    await openProject('beta-only');
    await row('notes.txt').waitFor(); // files work
    await openPanel();
    await panel.locator('[data-testid="ckpt-error"]').waitFor();
    await banner().waitFor();
    const text = await banner().textContent();
    expect(text.includes('Checkpoints are unavailable for this agent'), `banner says what is off (${text})`);
    expect(text.includes('symbolic link'), `banner says why (${text})`);
    expect(text.includes('Files can still be read and edited'), `banner says files work (${text})`);
    expect(!text.includes(b.dir), 'banner names no host path');
    await closePanel();
    await row('notes.txt').click();
    await eventually(async () => (await $('[data-testid="file-path"]').textContent()) === 'notes.txt', 'a file opens with the store unusable');
    // Only the affected agent shows it.
    await selectAgent('codex-a');
    await h.projectRow('alpha-only').waitFor();
    expect((await banner().count()) === 0, 'no banner for codex-a');

    // Repaired on disk: the sidecar brings checkpoints back by itself.
    fs.unlinkSync(store);
    if (fs.existsSync(aside)) fs.renameSync(aside, store);
    await selectAgent('codex-b');
    await openProject('beta-only');
    await eventually(
      async () => {
        await closePanel();
        await openPanel();
        await eventually(async () => (await panel.locator('[data-testid="ckpt-error"], [data-testid="ckpt-row"], [data-testid="ckpt-empty"]').count()) > 0, 'the list answered');
        return (await panel.locator('[data-testid="ckpt-error"]').count()) === 0;
      },
      'checkpoints list again after the repair',
      30_000,
    );
    await eventually(async () => (await banner().count()) === 0, 'the banner is gone');
    await closePanel();
    expect(fs.readFileSync(path.join(bait, 'canary.txt'), 'utf8') === 'CANARY\n' && fs.readdirSync(bait).length === 1, 'nothing written through the symlink');
  } finally {
    if (fs.lstatSync(store, { throwIfNoEntry: false })?.isSymbolicLink()) fs.unlinkSync(store);
    if (fs.existsSync(aside) && !fs.existsSync(store)) fs.renameSync(aside, store);
  }
});

// What every test checked after it passed (fixtures.mjs), for the whole run.
test('no endpoint or host path shown on any page', async () => {
  const seen = stack.leaksSeen();
  expect(seen.length === 0, `no endpoint or host path shown:\n     ${seen.join('\n     ')}`);
});
