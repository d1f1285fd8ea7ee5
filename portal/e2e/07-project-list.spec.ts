// The project list: paging past 100 projects.
// Tests run in order (serial) and build on the state earlier ones (and
// earlier spec files) leave; the stack and page are fixtures.mjs's.
import { test, $, MANY_PROJECTS, ensureSignedIn, eventually, expect, openProject, page, projectRow, row, selectAgent, shot } from './fixtures.mjs';

test.describe.configure({ mode: 'serial' });

test('projects: more than one page lists 100, then "Load more projects" at the end of the list appends the rest', async () => {
  await ensureSignedIn();
  await selectAgent('codex-b');
  await projectRow('beta-only').waitFor();
  const rows = () => page.locator('.project-row').count();
  expect((await rows()) === 100, `first page holds 100 projects (got ${await rows()})`);
  const more = $('[data-testid="load-more-projects"]');
  await more.waitFor();
  const last = await page.evaluate(() => document.querySelector('[data-testid="project-list"]')?.lastElementChild?.querySelector('[data-testid="load-more-projects"]') !== null);
  expect(last, '"Load more projects" is the last item of the list');
  await more.scrollIntoViewIfNeeded();
  await shot('projects-load-more.png');
  await more.focus();
  await page.keyboard.press('Enter'); // keyboard-usable
  await eventually(async () => (await rows()) === MANY_PROJECTS + 1, `second page appended (got ${await rows()})`);
  expect((await more.count()) === 0, 'no more pages');
  await eventually(
    () => page.evaluate(() => document.activeElement?.closest('.project-row')?.getAttribute('data-project') === 'many-099'),
    'focus moved to the first project of the new page',
  );
  const names = await page.locator('.project-row').evaluateAll((els) => els.map((e) => e.getAttribute('data-project')));
  expect(new Set(names).size === names.length, 'no project listed twice');
  expect(names[0] === 'beta-only' && names.at(-1) === `many-${String(MANY_PROJECTS - 1).padStart(3, '0')}`, 'sorted by name across pages');
  // A project from the second page opens like any other.
  await openProject('many-119');
  await $('[data-testid="root-new-file"]').waitFor();
  await selectAgent('codex-a');
  await projectRow('alpha-only').waitFor();
});
