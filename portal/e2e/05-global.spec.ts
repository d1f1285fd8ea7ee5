// The Global tab: skills and AGENTS.md.
// Tests run in order (serial) and build on the state earlier ones (and
// earlier spec files) leave; the stack and page are fixtures.mjs's.
import { test, $, clickMenu, context, dialog, ensureSignedIn, eventually, expect, page, row, sa, setEditorText, shot } from './fixtures.mjs';

test.describe.configure({ mode: 'serial' });

test('Global tab: skills always shown without delete/move/rename; AGENTS.md created and edited', async () => {
  await ensureSignedIn();
  sa.write('auth.json', '{"token":"secret"}\n', 'global');
  sa.write('config.toml', 'model = "x"\n', 'global');
  await $('[data-testid="tab-global"]').click();
  await row('skills').waitFor();
  expect((await page.locator('.tree-row').count()) === 1, 'Global shows skills only (no auth.json, config.toml)');
  expect((await row('AGENTS.md').count()) === 0, 'no AGENTS.md yet');
  await row('skills').click({ button: 'right' });
  const items = await page.locator('[data-testid="context-menu"] [role="menuitem"]').allTextContents();
  expect(!items.some((i) => /Delete|Rename|Move/.test(i)), `skills menu has no delete/move/rename (${items.join(', ')})`);
  await page.keyboard.press('Escape');
  await row('skills').focus();
  await page.keyboard.press('Delete');
  await eventually(async () => (await $('[data-testid="notice"]').textContent()).includes('cannot be deleted'), 'Delete key refused on skills');
  expect((await dialog('delete-entry-dialog').count()) === 0, 'no delete dialog for skills');
  // A skill inside skills/.
  await row('skills').click({ button: 'right' });
  await clickMenu('New folder');
  await dialog('new-entry-dialog').locator('input').fill('review');
  await dialog('new-entry-dialog').locator('[data-action="confirm"]').click();
  await row('skills/review').waitFor();
  await row('skills/review').click({ button: 'right' });
  await clickMenu('New file');
  await dialog('new-entry-dialog').locator('input').fill('SKILL.md');
  await dialog('new-entry-dialog').locator('[data-action="confirm"]').click();
  await eventually(async () => (await $('[data-testid="file-path"]').textContent()) === 'skills/review/SKILL.md', 'skill opened');
  await setEditorText('---\nname: review\ndescription: Review a change.\n---\n\nCheck tests first.\n');
  await page.keyboard.press('Control+S');
  await $('[data-testid="clean"]').waitFor();
  expect(sa.read('skills/review/SKILL.md', 'global').includes('name: review'), 'skill on disk');
  // AGENTS.md.
  await $('[data-testid="create-agents-md"]').click();
  await row('AGENTS.md').waitFor();
  await eventually(async () => (await $('[data-testid="file-path"]').textContent()) === 'AGENTS.md', 'AGENTS.md opened');
  await setEditorText('# Global instructions\n\nRun the tests before every commit.\n');
  await page.keyboard.press('Control+S');
  await $('[data-testid="clean"]').waitFor();
  expect(sa.read('AGENTS.md', 'global').startsWith('# Global instructions'), 'AGENTS.md on disk');
  expect((await $('[data-testid="create-agents-md"]').count()) === 0, 'create action gone once it exists');
  await row('AGENTS.md').click({ button: 'right' });
  const mdItems = await page.locator('[data-testid="context-menu"] [role="menuitem"]').allTextContents();
  expect(!mdItems.some((i) => /Rename|Move/.test(i)), 'AGENTS.md cannot be renamed or moved');
  await page.keyboard.press('Escape');
  expect((await row('auth.json').count()) === 0 && (await row('config.toml').count()) === 0, 'no other CODEX_HOME files');
  await shot('global.png');
  await $('[data-testid="tab-projects"]').click();
});
