// Deleting a project.
// Tests run in order (serial) and build on the state earlier ones (and
// earlier spec files) leave; the stack and page are fixtures.mjs's.
import { test, $, dialog, ensureSignedIn, eventually, expect, openProject, projectRow, row, sa } from './fixtures.mjs';

test.describe.configure({ mode: 'serial' });

test('delete project: the full name is required, the text says permanent; editor cleared', async () => {
  await ensureSignedIn();
  await openProject('demo');
  if ((await row('docs').getAttribute('aria-expanded')) !== 'true') await row('docs').click();
  await row('docs/other.txt').click();
  await $('[data-testid="file-path"]').waitFor();
  await projectRow('demo').locator('button', { hasText: 'Delete' }).click();
  const d = dialog('delete-project-dialog');
  await d.waitFor();
  const t = await d.textContent();
  expect(t.includes('permanent') && t.includes('checkpoint'), 'says permanent, and the automatic checkpoint');
  const confirm = d.locator('[data-action="confirm"]');
  expect(await confirm.isDisabled(), 'disabled before typing');
  await d.locator('input').fill('dem');
  expect(await confirm.isDisabled(), 'disabled for a partial name');
  await d.locator('input').fill('demo');
  expect(!(await confirm.isDisabled()), 'enabled for the full name');
  await confirm.click();
  await eventually(async () => (await projectRow('demo').count()) === 0, 'project gone from the list');
  expect(!sa.exists('demo'), 'project deleted on disk');
  expect((await $('[data-testid="file-path"]').count()) === 0, 'editor cleared');
});
