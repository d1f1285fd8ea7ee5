// Recovery and merge (issue 25): Recently deleted, a deep link to a deleted
// project, a refused save resolved in the merge view, a bad skill name
// refused, a file delete undone. Self-contained: it prepares its own data.
import fs from 'node:fs';
import path from 'node:path';
import { test, $, dialog, eventually, expect, gw, onAgentA, openFile, openProject, page, projectRow, row, sa, setEditorText } from './fixtures.mjs';

test.describe.configure({ mode: 'serial' });

async function refreshProjects() {
  await $('[data-testid="refresh-projects"]').click();
}

async function deleteProject(name) {
  await projectRow(name).locator('button', { hasText: 'Delete' }).click();
  const d = dialog('delete-project-dialog');
  await d.locator('input').fill(name);
  await d.locator('[data-action="confirm"]').click();
  await eventually(async () => (await projectRow(name).count()) === 0, `${name} gone from the list`);
  expect(!sa.exists(name), `${name} deleted on disk`);
}

test('Recently deleted: a deleted project is found without its name and restored in one step', async () => {
  sa.write('rd-demo/notes.txt', 'kept notes\n');
  sa.write('rd-demo/src/a.go', 'package a\n');
  await onAgentA();
  await refreshProjects();
  await projectRow('rd-demo').waitFor();
  await deleteProject('rd-demo');
  await $('[data-testid="recently-deleted"]').click();
  const d = dialog('recently-deleted-dialog');
  const item = d.locator('[data-testid="deleted-project"]', { hasText: 'rd-demo' });
  await item.waitFor();
  const line = await item.textContent();
  expect(line.includes('deleted') && line.includes('2 files'), `the row says when and how much (${line})`);
  await item.locator('[data-action="choose"]').click();
  await eventually(() => sa.exists('rd-demo/src/a.go'), 'rd-demo back on disk');
  expect(sa.read('rd-demo/notes.txt') === 'kept notes\n', 'content restored');
  await eventually(async () => (await $('.sidebar-section.files h2').textContent())?.includes('rd-demo'), 'restored project opened');
  // Listed no more: it exists again.
  await $('[data-testid="recently-deleted"]').click();
  const d2 = dialog('recently-deleted-dialog');
  await d2.waitFor();
  expect((await d2.locator('[data-testid="deleted-project"]', { hasText: 'rd-demo' }).count()) === 0, 'a restored project is not listed');
  await d2.locator('[data-action="cancel"]').click();
});

test('a deep link to a deleted project says so and offers Restore; an unknown agent is named', async () => {
  sa.write('rd-link/x.txt', 'linked\n');
  await onAgentA();
  await refreshProjects();
  await projectRow('rd-link').waitFor();
  await deleteProject('rd-link');
  await page.goto(gw.url + '/agents/codex-a/projects/rd-link/files/x.txt');
  const notice = $('[data-testid="notice"]');
  await eventually(async () => (await notice.textContent())?.includes('rd-link was deleted'), 'the notice says the project was deleted');
  await $('[data-testid="restore-linked-project"]').click();
  await eventually(() => sa.exists('rd-link/x.txt'), 'restored from the link');
  await page.goto(gw.url + '/agents/no-such-agent');
  await eventually(async () => (await $('[data-testid="notice"]').textContent())?.includes('no-such-agent'), 'an unknown agent is named');
});

test('a refused save opens the merge view; hunks from both sides are saved against the disk revision', async () => {
  sa.write('rd-merge/m.txt', 'one\ntwo\nthree\n');
  await onAgentA();
  await refreshProjects();
  await openProject('rd-merge');
  // At 1280 px "Files in rd-merge" is whole, not cut.
  const cut = await page.evaluate(() => {
    const h = document.querySelector('.sidebar-section.files h2');
    return h ? h.scrollWidth > h.clientWidth : true;
  });
  expect(!cut, '"Files in rd-merge" is not cut');
  expect((await $('header h1').textContent()) === 'Agent Workspace Files', 'the header names the product');
  await openFile('m.txt');
  await setEditorText('ONE\ntwo\nthree\n');
  // Someone else changes another line on disk meanwhile.
  sa.write('rd-merge/m.txt', 'one\ntwo\nTHREE\n');
  await page.keyboard.press('Control+s');
  const d = dialog('merge-dialog');
  await d.waitFor();
  expect((await page.locator('dialog[open]').count()) === 1, 'one dialog');
  expect((await $('[data-testid="disk-changed-bar"]').count()) === 0, 'no second banner about the same change');
  // Take the disk's "THREE" into mine (the revert control of that hunk).
  const reverts = d.locator('.cm-merge-revert button');
  await eventually(async () => (await reverts.count()) >= 2, 'one revert control per hunk');
  await reverts.nth(1).click();
  await d.locator('[data-action="save-merged"]').click();
  await eventually(() => sa.read('rd-merge/m.txt') === 'ONE\ntwo\nTHREE\n', `merged text saved (${JSON.stringify(sa.read('rd-merge/m.txt'))})`);
  await $('[data-testid="clean"]').waitFor();
});

test('a deleted open file can be saved again as a new file', async () => {
  await onAgentA();
  await openProject('rd-merge');
  await openFile('m.txt');
  await setEditorText('saved again\n');
  fsRemove('rd-merge/m.txt');
  await page.keyboard.press('Control+s');
  const d = dialog('save-as-new-dialog');
  await d.waitFor();
  await d.locator('[data-action="confirm"]').click();
  await eventually(() => sa.exists('rd-merge/m.txt') && sa.read('rd-merge/m.txt') === 'saved again\n', 'saved as a new file');
});

test('New skill refuses a name Codex would skip', async () => {
  await onAgentA();
  await $('[data-testid="tab-global"]').click();
  await $('[data-testid="new-skill"]').click();
  const d = dialog('new-skill-dialog');
  await d.locator('input').fill('Review PRs');
  const problem = await d.locator('.field-problem').textContent();
  expect(problem.includes('lowercase'), `says why (${problem})`);
  expect(await d.locator('[data-action="confirm"]').isDisabled(), 'Create is disabled');
  await d.locator('input').fill('review--prs');
  expect(await d.locator('[data-action="confirm"]').isDisabled(), 'a double hyphen is refused');
  await d.locator('[data-action="cancel"]').click();
  expect(!sa.exists('skills/Review PRs', 'global'), 'nothing created');
  await $('[data-testid="tab-projects"]').click();
});

test('saving a SKILL.md says first what Codex would skip', async () => {
  sa.write('skills/bad/SKILL.md', '---\nname: bad\ndescription: fine\n---\n', 'global');
  await onAgentA();
  await page.goto(gw.url + '/agents/codex-a/global/files/skills/bad/SKILL.md');
  await eventually(async () => (await $('[data-testid="file-path"]').textContent()) === 'skills/bad/SKILL.md', 'SKILL.md opened');
  await eventually(async () => (await $('.cm-content').count()) === 1, 'editor shown');
  await setEditorText('---\nname: Bad Name\ndescription: fine\n---\n');
  await page.keyboard.press('Control+s');
  const d = dialog('skill-check-dialog');
  await d.waitFor();
  const t = await d.textContent();
  expect(t.includes('Bad Name') && t.includes('Codex would skip'), `says what Codex would skip (${t})`);
  await d.locator('[data-action="cancel"]').click();
  expect(sa.read('skills/bad/SKILL.md', 'global').includes('name: bad\n'), 'not saved');
  await setEditorText('---\nname: bad\ndescription: better\n---\n');
  await page.keyboard.press('Control+s');
  await $('[data-testid="clean"]').waitFor();
  expect(sa.read('skills/bad/SKILL.md', 'global').includes('better'), 'a valid one saves without asking');
  await $('[data-testid="tab-projects"]').click();
});

test('a file delete is undone from its message', async () => {
  sa.write('rd-undo/gone.txt', 'bring me back\n');
  await onAgentA();
  await refreshProjects();
  await openProject('rd-undo');
  await row('gone.txt').focus();
  await page.keyboard.press('Delete');
  await dialog('delete-entry-dialog').locator('[data-action="confirm"]').click();
  await eventually(() => !sa.exists('rd-undo/gone.txt'), 'deleted on disk');
  await $('[data-testid="undo-delete"]').click();
  await eventually(() => sa.exists('rd-undo/gone.txt'), 'back on disk');
  expect(sa.read('rd-undo/gone.txt') === 'bring me back\n', 'the same bytes');
  await row('gone.txt').waitFor();
});

/** Deletes a file on the volume, as the agent would. */
function fsRemove(rel) {
  fs.rmSync(path.join(sa.projects, rel));
}
