// Browser tests of live changes (issue #16) on the shared stack: a separate writer process (the agent, as the sidecar's UID when root)
// changes files on a real sidecar's volume, and the portal shows each
// change without a click; traps never show; the stream follows the agent
// and survives a sidecar and a gateway restart, saying when the view may be
// stale.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { SIDECAR_UID } from './harness.mjs';
import * as stack from './fixtures.mjs';
import { test, expect, eventually } from './fixtures.mjs';

/** Runs script with sh in dir as a separate process (the agent writing). */
function writer(dir, script) {
  const opts = { cwd: dir, stdio: 'pipe' };
  if (process.getuid?.() === 0) Object.assign(opts, { uid: SIDECAR_UID, gid: SIDECAR_UID });
  execFileSync('sh', ['-c', script], opts);
}

test.describe.configure({ mode: 'serial' });

// The run's state (read when a test runs) and its page helpers.
const s = {
  get page() {
    return stack.page;
  },
  get gw() {
    return stack.gw;
  },
  get sa() {
    return stack.sa;
  },
  get sb() {
    return stack.sb;
  },
  get base() {
    return stack.base;
  },
};
const h = stack;

const live = () => s.page.locator('[data-testid="live-status"][data-state="live"]');
const gwMetric = async (name) => {
  const r = await fetch(`${s.gw.url}/metrics`, { headers: { Authorization: `Bearer ${s.gw.adminToken}` } });
  const line = (await r.text()).split('\n').find((l) => l.startsWith(name + ' '));
  return line ? Number(line.slice(name.length + 1)) : 0;
};
const notice = async () => (await s.page.locator('[data-testid="notice"]').textContent().catch(() => '')) ?? '';

test('live: a writer process changes an expanded folder and the open file; the tree and editor follow without a click; traps never show', async () => {
  const { page, sa } = s;
  sa.write('live/src/one.txt', 'one\n');
  sa.write('live/open.txt', 'v1\n');
  const canary = path.join(s.base, 'live-outside', 'canary.txt');
  fs.mkdirSync(path.dirname(canary), { recursive: true });
  fs.writeFileSync(canary, 'CANARY');
  await h.ensureSignedIn();
  await h.selectAgent('codex-a');
  await page.locator('[data-testid="refresh-projects"]').click();
  await h.openProject('live');
  await h.row('src').click();
  await h.row('src/one.txt').waitFor();
  await h.row('open.txt').click();
  await eventually(async () => (await h.editorText()) === 'v1\n' || (await h.editorText()) === 'v1', 'open.txt opened');
  await live().waitFor({ timeout: 20_000 });
  const dir = path.join(sa.projects, 'live');

  writer(dir, 'printf "two\\n" > src/two.txt; rm src/one.txt; printf "v2\\n" > open.txt');
  await h.row('src/two.txt').waitFor({ timeout: 20_000 });
  await eventually(async () => (await h.row('src/one.txt').count()) === 0, 'removed file gone from the tree', 20_000);
  await eventually(async () => (await h.editorText()).startsWith('v2'), 'clean open file reloaded itself', 20_000);
  expect((await notice()).includes('changed on disk'), `a brief notice says so (${await notice()})`);
  await page.locator('[data-testid="clean"]').waitFor();

  writer(dir, 'mv src/two.txt src/three.txt');
  await h.row('src/three.txt').waitFor({ timeout: 20_000 });
  await eventually(async () => (await h.row('src/two.txt').count()) === 0, 'renamed entry moved in place', 20_000);

  writer(
    dir,
    `ln -s ${JSON.stringify(canary)} src/link.txt; ln -s ${JSON.stringify(path.dirname(canary))} src/linkdir; mkdir -p src/node_modules/x && echo 1 > src/node_modules/x/i.js; ` +
      'echo t > src/.davfs-tmp-e2e; echo s > src/sentinel.txt',
  );
  await h.row('src/sentinel.txt').waitFor({ timeout: 20_000 });
  for (const p of ['src/link.txt', 'src/linkdir', 'src/node_modules', 'src/.davfs-tmp-e2e']) {
    expect((await h.row(p).count()) === 0, `trap ${p} is not shown`);
  }
  expect(fs.readFileSync(canary, 'utf8') === 'CANARY', 'canary untouched');

  // The revision came with the event: renaming the file the agent just changed is not refused.
  writer(dir, 'printf "changed by the agent\\n" > src/three.txt');
  await eventually(async () => (await h.row('src/three.txt').count()) === 1, 'still listed');
  await page.waitForTimeout(500); // let the modification event land (no click involved)
  await h.row('src/three.txt').focus();
  await page.keyboard.press('F2');
  const rd = h.dialog('rename-dialog');
  await rd.waitFor();
  await rd.locator('input').fill('four.txt');
  await rd.locator('[data-action="confirm"]').click();
  await h.row('src/four.txt').waitFor();
  expect(sa.exists('live/src/four.txt') && !sa.exists('live/src/three.txt'), 'renamed on disk');
  await h.shot('live-tree.png');
});

test('live: a dirty open file shows "changed on disk by someone else" with Compare, Reload (confirm) and Keep mine; a deleted one says so and keeps the text', async () => {
  const { page, sa } = s;
  const dir = path.join(sa.projects, 'live');
  await h.ensureSignedIn();
  await h.openProject('live');
  await h.row('open.txt').click();
  await live().waitFor({ timeout: 20_000 });
  await h.setEditorText('mine\n');
  await page.locator('[data-testid="dirty"]').waitFor();
  writer(dir, 'printf "disk\\n" > open.txt');
  const bar = page.locator('[data-testid="disk-changed-bar"]');
  await bar.waitFor({ timeout: 20_000 });
  expect((await bar.textContent()).includes('changed on disk by someone else'), 'bar text');
  expect((await h.editorText()).startsWith('mine'), 'my text kept');
  await h.shot('live-changed-on-disk.png');

  await page.locator('[data-testid="disk-compare"]').click();
  const cmp = h.dialog('disk-compare-dialog');
  await cmp.waitFor();
  const lines = await cmp.locator('.diff-line').allTextContents();
  // The signs of a checkpoint's Compare: − the stored version (disk), + the text in front of you.
  expect(lines.some((l) => l.startsWith('-') && l.includes('disk')) && lines.some((l) => l.startsWith('+') && l.includes('mine')), `compare shows both (${lines.join(' | ')})`);
  await cmp.locator('[data-action="cancel"]').click();
  expect((await h.editorText()).startsWith('mine'), 'Keep mine in Compare keeps my text');

  await page.locator('[data-testid="disk-keep"]').click();
  await eventually(async () => (await bar.count()) === 0, 'Keep mine hides the bar');
  await page.keyboard.press('Control+S');
  const cd = h.dialog('merge-dialog');
  await cd.waitFor();
  await cd.locator('[data-action="cancel"]').click();
  expect(sa.read('live/open.txt') === 'disk\n', 'the save took the conflict path; disk unchanged');

  // Reload (after a confirm) loads the disk version.
  await page.locator('[data-testid="conflict-banner"] button', { hasText: 'Reload server version' }).click();
  await page.locator('[data-testid="clean"]').waitFor();
  await h.setEditorText('mine again\n');
  writer(dir, 'printf "disk two\\n" > open.txt');
  await bar.waitFor({ timeout: 20_000 });
  await page.locator('[data-testid="disk-reload"]').click();
  const rd = h.dialog('disk-reload-dialog');
  await rd.waitFor();
  await rd.locator('[data-action="confirm"]').click();
  await eventually(async () => (await h.editorText()).startsWith('disk two'), 'disk version loaded');
  await page.locator('[data-testid="clean"]').waitFor();

  // Deleted on disk: said so, the text stays.
  await h.setEditorText('unsaved words\n');
  writer(dir, 'rm open.txt');
  await page.locator('[data-testid="disk-deleted-bar"]').waitFor({ timeout: 20_000 });
  expect((await h.editorText()).startsWith('unsaved words'), 'text kept after the delete');
  await eventually(async () => (await h.row('open.txt').count()) === 0, 'gone from the tree', 20_000);
  // Leave nothing unsaved for the discard guards of later tests.
  await page.locator('[data-testid="cancel"]').click();
  await page.locator('[data-testid="clean"]').waitFor();
  sa.write('live/open.txt', 'v1\n');
  await h.row('open.txt').waitFor({ timeout: 20_000 });
});

test('live: switching agents closes the old stream; a lost stream reconnects with backoff, shows the view may be stale, and catches up', async () => {
  const { page, sa, sb, gw } = s;
  await h.ensureSignedIn();
  await h.openProject('live');
  await live().waitFor({ timeout: 20_000 });
  await eventually(async () => (await gwMetric('agent_gateway_watch_streams{agent_id="codex-a"}')) === 1, 'one stream for codex-a');
  await h.selectAgent('codex-b');
  const discard = h.dialog('discard-dialog');
  if (await discard.count()) await discard.locator('[data-action="confirm"]').click();
  await h.openProject('beta-only');
  await live().waitFor({ timeout: 20_000 });
  await eventually(async () => (await gwMetric('agent_gateway_watch_streams{agent_id="codex-a"}')) === 0, 'the old agent\'s stream closed');
  expect((await gwMetric('agent_gateway_watch_streams{agent_id="codex-b"}')) === 1, 'one stream for codex-b');

  // The sidecar dies: the view says it may be stale; back, it catches up (a resync: new process).
  await sb.kill();
  const stale = page.locator('[data-testid="live-status"][data-state="reconnecting"]');
  await stale.waitFor({ timeout: 20_000 });
  expect((await stale.textContent()).includes('may be stale'), 'staleness shown');
  await h.shot('live-stale.png');
  writer(path.join(sb.projects, 'beta-only'), 'echo x > while-sidecar-down.txt');
  await sb.start();
  await live().waitFor({ timeout: 45_000 });
  await h.row('while-sidecar-down.txt').waitFor({ timeout: 20_000 });

  // The gateway restarts: the stream resumes from its last id; nothing written meanwhile is lost.
  await gw.stop();
  await stale.waitFor({ timeout: 20_000 });
  writer(path.join(sb.projects, 'beta-only'), 'echo x > while-gateway-down.txt');
  await gw.restart();
  await live().waitFor({ timeout: 45_000 });
  await h.row('while-gateway-down.txt').waitFor({ timeout: 20_000 });
  await h.selectAgent('codex-a');
});
