// Browser tests of the Checkpoints panel and its diff view (issue #15)
// on the shared stack (fixtures.mjs). Tests run in order (serial); the
// folder-restore and delete-override tests come first, as they always ran.
import fs from 'node:fs';
import path from 'node:path';
import * as stack from './fixtures.mjs';
import { test, expect, eventually, $, dialog, row, projectRow, ensureSignedIn, selectAgent, openProject, clickMenu, shot } from './fixtures.mjs';

test.describe.configure({ mode: 'serial' });

// The run's processes, read when a test runs.
const h = { sa: () => stack.sa, sb: () => stack.sb, gw: () => stack.gw };
const rows = (p) => p.locator('[data-testid="ckpt-row"]');

test('checkpoints: restore one folder from the diff view; files outside it stay', async () => {
  const a = h.sa();
  a.write('ckpt-folder/sub/a.txt', 'a one\n');
  a.write('ckpt-folder/top.txt', 'top one\n');
  await ensureSignedIn();
  await selectAgent('codex-a');
  await $('[data-testid="refresh-projects"]').click();
  await openProject('ckpt-folder');
  await $('[data-testid="open-checkpoints"]').click();
  const p = dialog('checkpoints-panel');
  await p.waitFor();
  await p.locator('[data-testid="ckpt-create"]').click();
  await eventually(async () => (await rows(p).count()) === 1, 'checkpoint listed');
  a.write('ckpt-folder/sub/a.txt', 'a two\n');
  a.write('ckpt-folder/sub/b.txt', 'new in sub\n');
  a.write('ckpt-folder/top.txt', 'top two\n');
  await rows(p).first().locator('[data-testid="ckpt-compare"]').click();
  const cv = p.locator('[data-testid="ckpt-compare-view"]');
  await cv.locator('[data-testid="ckpt-change"][data-path="sub/a.txt"]').click();
  // The agent adds a file after the comparison was shown: the
  // confirmation comes from a fresh comparison of the folder, so it lists
  // that file too (the restore removes exactly what it shows).
  await eventually(async () => (await cv.locator('[data-testid="ckpt-change"]').count()) === 3, 'three changes listed');
  a.write('ckpt-folder/sub/c.txt', 'added after the comparison\n');
  await cv.locator('[data-testid="ckpt-restore-folder"]').click();
  const rd = dialog('restore-checkpoint-dialog');
  await rd.waitFor();
  const effects = await rd.locator('[data-testid="restore-effects"]').textContent();
  expect(
    effects.includes('sub/a.txt') && effects.includes('sub/b.txt') && effects.includes('sub/c.txt') && !effects.includes('top.txt'),
    `only the folder's changes, as of now (${effects})`,
  );
  const total = await rd.locator('[data-testid="restore-total"]').getAttribute('data-total');
  expect(total === '3', `the confirmation counts every change of the folder (${total})`);
  await rd.locator('[data-action="confirm"]').click();
  await eventually(
    () => a.read('ckpt-folder/sub/a.txt') === 'a one\n' && !a.exists('ckpt-folder/sub/b.txt') && !a.exists('ckpt-folder/sub/c.txt'),
    'folder restored',
  );
  expect(a.read('ckpt-folder/top.txt') === 'top two\n', 'a file outside the folder is untouched');
  await p.locator('[data-testid="ckpt-close"]').click();
});

// codex-b's store is full (fixtures.mjs gives it a 1 KiB limit): a delete whose
// automatic checkpoint does not fit is refused, and the portal offers to
// delete without one behind a second confirmation.
test('checkpoints: with the store full, a delete offers "Delete without a checkpoint" behind a second confirmation', async () => {
  const b = h.sb();
  // Made here, not before the run: codex-b's project count is checked earlier.
  b.write('full-store/sub/big.bin', 'x'.repeat(8192));
  b.write('full-store/top.txt', 'stays\n');
  b.write('full-doomed/big.bin', 'y'.repeat(8192));
  await ensureSignedIn();
  await selectAgent('codex-b');
  await $('[data-testid="refresh-projects"]').click();
  await openProject('full-store');
  const deleteSub = async () => {
    await row('sub').click({ button: 'right' });
    await clickMenu('Delete…');
    await dialog('delete-entry-dialog').locator('[data-action="confirm"]').click();
    const o = dialog('delete-override-dialog');
    await o.waitFor();
    expect((await o.textContent()).includes('does not fit'), 'the offer says why');
    await o.locator('[data-action="confirm"]').click();
    const c = dialog('delete-override-confirm-dialog');
    await c.waitFor();
    expect((await c.textContent()).includes('cannot be undone'), 'the second confirmation says it cannot be undone');
    return c;
  };
  // Declining the second confirmation deletes nothing.
  await (await deleteSub()).locator('[data-action="cancel"]').click();
  await eventually(async () => (await $('[data-testid="notice"]').textContent())?.includes('was not deleted'), 'the refusal is reported');
  expect(b.exists('full-store/sub/big.bin'), 'nothing deleted after declining');
  // Confirming deletes without a checkpoint.
  await (await deleteSub()).locator('[data-action="confirm"]').click();
  await eventually(() => !b.exists('full-store/sub'), 'folder deleted on disk');
  expect(b.read('full-store/top.txt') === 'stays\n', 'the rest of the project stays');

  await projectRow('full-doomed').locator('button', { hasText: 'Delete' }).click();
  const d = dialog('delete-project-dialog');
  await d.locator('input').fill('full-doomed');
  await d.locator('[data-action="confirm"]').click();
  await dialog('delete-override-dialog').locator('[data-action="confirm"]').click();
  await dialog('delete-override-confirm-dialog').locator('[data-action="confirm"]').click();
  await eventually(() => !b.exists('full-doomed'), 'project deleted on disk');

  // The files are gone before the gateway has answered and audited the
  // delete: the records are waited for, then must be exactly these.
  const want = { delete_entry: 'error/CHECKPOINT_LIMIT/false error/CHECKPOINT_LIMIT/false ok//true', delete_project: 'error/CHECKPOINT_LIMIT/false ok//true' };
  const audited = (action) =>
    fs.readFileSync(path.join(h.gw().dir, 'audit.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l))
      .filter((r) => r.action === action && r.agent_id === 'codex-b')
      .map((r) => `${r.result}/${r.reason ?? ''}/${r.skip_checkpoint ?? false}`).join(' ');
  for (const [action, w] of Object.entries(want)) {
    await eventually(() => audited(action).split(' ').length >= w.split(' ').length, `${action} audited (${audited(action)})`);
    expect(audited(action) === w, `${action} audit: ${audited(action)}, want ${w}`);
  }
});


test('checkpoints: create with a label; the agent edits; compare shows each file and its diff; restore all brings the bytes back', async () => {
  const a = h.sa();
  a.write('ckpt-demo/notes.txt', 'one\ntwo\nthree\n');
  a.write('ckpt-demo/keep.txt', 'keep\n');
  a.write('ckpt-demo/gone.txt', 'to be deleted by the agent\n');
  await ensureSignedIn();
  await selectAgent('codex-a');
  await $('[data-testid="refresh-projects"]').click();
  await openProject('ckpt-demo');
  await $('[data-testid="open-checkpoints"]').click();
  const p = dialog('checkpoints-panel');
  await p.waitFor();
  await eventually(async () => (await p.locator('[data-testid="ckpt-empty"]').count()) === 1, 'empty list first');
  await p.locator('[data-testid="ckpt-label"]').fill('known good');
  await p.locator('[data-testid="ckpt-create"]').click();
  await eventually(async () => (await rows(p).count()) === 1, 'the checkpoint is listed');
  const first = await rows(p).first().textContent();
  expect(first.includes('known good') && first.includes('46 B'), `label and size shown (${first.trim()})`);

  // The agent edits, adds and deletes.
  a.write('ckpt-demo/notes.txt', 'one\nTWO\nthree\n');
  a.write('ckpt-demo/extra.txt', 'added by the agent\n');
  fs.unlinkSync(path.join(a.projects, 'ckpt-demo/gone.txt'));

  await rows(p).first().locator('[data-testid="ckpt-compare"]').click();
  const cv = p.locator('[data-testid="ckpt-compare-view"]');
  await cv.waitFor();
  const changes = cv.locator('[data-testid="ckpt-change"]');
  await eventually(async () => (await changes.count()) === 3, 'three changes listed');
  const kinds = await changes.evaluateAll((els) => els.map((e) => `${e.dataset.kind} ${e.dataset.path}`).sort().join(', '));
  expect(kinds === 'added extra.txt, changed notes.txt, removed gone.txt', `changes (${kinds})`);
  await cv.locator('[data-testid="ckpt-change"][data-path="notes.txt"]').click();
  const diff = await cv.locator('[data-testid="ckpt-diff"]').textContent();
  expect(diff.includes('-two') && diff.includes('+TWO') && diff.includes(' one'), `unified diff (${diff})`);
  expect((await cv.locator('[data-testid="ckpt-diff"] .d-add').count()) === 1, 'the added line is highlighted');
  await shot('checkpoints.png');

  await cv.locator('[data-testid="ckpt-restore-all"]').click();
  const rd = dialog('restore-checkpoint-dialog');
  await rd.waitFor();
  const effects = await rd.locator('[data-testid="restore-effects"]').textContent();
  expect(/extra\.txt\s*is removed/.test(effects) && /gone\.txt\s*is recreated/.test(effects) && /notes\.txt\s*is put back/.test(effects), `confirmation lists the changes (${effects})`);
  expect((await rd.textContent()).includes('can be undone'), 'says the restore can be undone');
  const total = await rd.locator('[data-testid="restore-total"]').getAttribute('data-total');
  expect(total === '3', `the confirmation counts every change (${total})`);
  await rd.locator('[data-action="confirm"]').click();
  await eventually(
    () => a.read('ckpt-demo/notes.txt') === 'one\ntwo\nthree\n' && !a.exists('ckpt-demo/extra.txt') && a.read('ckpt-demo/gone.txt') === 'to be deleted by the agent\n',
    'restored on disk',
  );
  await eventually(async () => (await rows(p).count()) === 2, 'the undo checkpoint is listed');
  expect((await rows(p).first().textContent()).includes('before a restore'), 'its reason is shown');

  // Delete the undo checkpoint.
  await rows(p).first().locator('[data-testid="ckpt-delete"]').click();
  await dialog('delete-checkpoint-dialog').locator('[data-action="confirm"]').click();
  await eventually(async () => (await rows(p).count()) === 1, 'checkpoint deleted');
  await p.locator('[data-testid="ckpt-close"]').click();
  await eventually(async () => (await dialog('checkpoints-panel').count()) === 0, 'panel closed');
});

test('checkpoints: "Compare with checkpoint" on a file shows its diff; restoring that file leaves the others', async () => {
  const a = h.sa();
  a.write('ckpt-demo/notes.txt', 'changed again\n');
  a.write('ckpt-demo/keep.txt', 'keep, changed\n');
  await $('[data-testid="refresh-files"]').click();
  await row('notes.txt').click({ button: 'right' });
  await clickMenu('Compare with checkpoint');
  const p = dialog('checkpoints-panel');
  await p.waitFor();
  const cv = p.locator('[data-testid="ckpt-compare-view"]');
  await eventually(async () => (await cv.locator('[data-testid="ckpt-diff"]').textContent())?.includes('+changed again'), 'the file diff is shown');
  expect((await cv.locator('[data-testid="ckpt-change"]').count()) === 1, 'only that file compared');
  expect((await p.locator('[data-testid="ckpt-older-note"]').count()) === 0, 'every checkpoint was searched: no note');
  await cv.locator('[data-testid="ckpt-restore-path"]').click();
  const rd = dialog('restore-checkpoint-dialog');
  await rd.waitFor();
  const total = await rd.locator('[data-testid="restore-total"]').getAttribute('data-total');
  expect(total === '1', `one change: that file (${total})`);
  await rd.locator('[data-action="confirm"]').click();
  await eventually(() => a.read('ckpt-demo/notes.txt') === 'one\ntwo\nthree\n', 'file restored');
  expect(a.read('ckpt-demo/keep.txt') === 'keep, changed\n', 'another file untouched');
  await p.locator('[data-testid="ckpt-close"]').click();
});

test('checkpoints: a file\'s checkpoints note when older checkpoints were not searched', async () => {
  // More full checkpoints than the server decodes for one listing by path
  // (MaxHoldingDecodes, 20): the newest are listed, the rest not searched.
  const g = h.gw();
  for (let i = 0; i < 21; i++) {
    const r = await fetch(`${g.url}/api/v1/agent-gateway/agents/codex-a/checkpoints`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${g.adminToken}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ workspace: { scope: 'PROJECT', project_name: 'ckpt-demo' } }),
    });
    expect(r.ok, `checkpoint ${i} created (${r.status})`);
  }
  await row('notes.txt').click({ button: 'right' });
  await clickMenu('Compare with checkpoint');
  const p = dialog('checkpoints-panel');
  await p.waitFor();
  await eventually(
    async () => (await p.locator('[data-testid="ckpt-older-note"]').count()) === 1,
    'the note that older checkpoints were not searched',
  );
  const note = await p.locator('[data-testid="ckpt-older-note"]').textContent();
  expect(note === 'Older checkpoints were not searched.', `note text (${note})`);
  expect((await rows(p).count()) === 20, `the 20 newest listed (${await rows(p).count()})`);
  await p.locator('[data-testid="ckpt-close"]').click();
  await eventually(async () => (await dialog('checkpoints-panel').count()) === 0, 'panel closed');
});

test('checkpoints: a deleted project comes back from its automatic checkpoint', async () => {
  const a = h.sa();
  await projectRow('ckpt-demo').locator('button', { hasText: 'Delete' }).click();
  const d = dialog('delete-project-dialog');
  await d.waitFor();
  expect((await d.textContent()).includes('checkpoint'), 'the confirmation mentions the automatic checkpoint');
  await d.locator('input').fill('ckpt-demo');
  await d.locator('[data-action="confirm"]').click();
  await eventually(() => !a.exists('ckpt-demo'), 'project deleted on disk');
  await $('[data-testid="deleted-project-checkpoints"]').click();
  const p = dialog('checkpoints-panel');
  await p.waitFor();
  await eventually(async () => (await rows(p).first().textContent())?.includes('before the project was deleted'), 'automatic checkpoint listed');
  await rows(p).first().locator('[data-testid="ckpt-restore"]').click();
  const rd = dialog('restore-checkpoint-dialog');
  await rd.waitFor();
  await rd.locator('[data-action="confirm"]').click();
  await eventually(() => a.exists('ckpt-demo/notes.txt') && a.read('ckpt-demo/keep.txt') === 'keep, changed\n', 'project back on disk');
  await p.locator('[data-testid="ckpt-close"]').click();
  await eventually(async () => (await projectRow('ckpt-demo').count()) === 1, 'project listed again');
});

test('checkpoints: the Global panel checkpoints skills/ and AGENTS.md', async () => {
  const a = h.sa();
  a.write('skills/ckpt-skill/SKILL.md', '---\nname: ckpt-skill\n---\n', 'global');
  await $('[data-testid="tab-global"]').click();
  await $('[data-testid="open-checkpoints"]').click();
  const p = dialog('checkpoints-panel');
  await p.waitFor();
  expect((await p.locator('#ckpt-title').textContent()).includes('Global'), 'Global title');
  const before = await rows(p).count();
  await p.locator('[data-testid="ckpt-create"]').click();
  await eventually(async () => (await rows(p).count()) === before + 1, 'Global checkpoint listed');
  a.write('skills/ckpt-skill/SKILL.md', '---\nname: ckpt-skill\n---\nbroken by the agent\n', 'global');
  await rows(p).first().locator('[data-testid="ckpt-compare"]').click();
  const cv = p.locator('[data-testid="ckpt-compare-view"]');
  await eventually(async () => (await cv.locator('[data-testid="ckpt-diff"]').textContent())?.includes('+broken by the agent'), 'Global diff');
  await p.locator('[data-testid="ckpt-close"]').click();
  await $('[data-testid="tab-projects"]').click();
});
