// Creating a project.
// Tests run in order (serial) and build on the state earlier ones (and
// earlier spec files) leave; the stack and page are fixtures.mjs's.
import fs from 'node:fs';
import path from 'node:path';
import { test, $, dialog, ensureSignedIn, eventually, expect, page, projectRow, sa } from './fixtures.mjs';

test.describe.configure({ mode: 'serial' });

test('create project: name validated as you type, Git initialised on disk', async () => {
  await ensureSignedIn();
  await $('[data-testid="new-project"]').click();
  const d = dialog('create-project-dialog');
  await d.waitFor();
  const input = d.locator('input');
  const confirm = d.locator('[data-action="confirm"]');
  for (const [bad, msg] of [
    ['.hidden', 'Start with a letter or a digit'],
    ['..', 'cannot be named'],
    ['has space', 'Use only letters'],
    ['a'.repeat(129), 'at most 128'],
  ]) {
    await input.fill(bad);
    await eventually(async () => (await d.locator('.field-problem').textContent()).includes(msg), `problem for ${bad}`);
    expect(await confirm.isDisabled(), `confirm disabled for ${bad}`);
  }
  await input.fill('demo');
  expect(!(await confirm.isDisabled()), 'confirm enabled for a valid name');
  await confirm.click();
  await projectRow('demo').waitFor();
  expect((await projectRow('demo').textContent()).includes('Git'), 'Git badge');
  expect(sa.exists('demo/.git/HEAD'), 'demo/.git exists on disk');
  // Refresh shows projects made behind the portal's back, and drops removed ones.
  sa.mkdir('made-by-agent');
  await $('[data-testid="refresh-projects"]').click();
  await projectRow('made-by-agent').waitFor();
  fs.rmdirSync(path.join(sa.projects, 'made-by-agent'));
  await $('[data-testid="refresh-projects"]').click();
  await eventually(async () => (await projectRow('made-by-agent').count()) === 0, 'removed project gone after Refresh');
  expect((await projectRow('demo').count()) === 1, 'demo still listed');
  // Esc closes a dialog without doing anything.
  await $('[data-testid="new-project"]').click();
  await dialog('create-project-dialog').waitFor();
  await page.keyboard.press('Escape');
  await eventually(async () => (await dialog('create-project-dialog').count()) === 0, 'Esc closes the dialog');
});
