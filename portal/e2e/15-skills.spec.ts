// New skill in the Global tab.
// Tests run in order (serial) and build on the state earlier ones (and
// earlier spec files) leave; the stack and page are fixtures.mjs's.
import { test, $, dialog, eventually, expect, onAgentA, page, row, sa } from './fixtures.mjs';

test.describe.configure({ mode: 'serial' });

test('Global: "New skill" makes skills/<name>/SKILL.md from a template; its YAML front matter is highlighted as YAML', async () => {
  await onAgentA();
  await $('[data-testid="tab-global"]').click();
  await $('[data-testid="new-skill"]').click();
  const d = dialog('new-skill-dialog');
  await d.locator('input').fill('lint');
  await d.locator('[data-action="confirm"]').click();
  await eventually(async () => (await $('[data-testid="file-path"]').textContent()) === 'skills/lint/SKILL.md', 'SKILL.md opened');
  expect(sa.exists('skills/lint/SKILL.md', 'global'), 'on disk');
  const text = sa.read('skills/lint/SKILL.md', 'global');
  expect(text.startsWith('---\nname: lint\ndescription: ') && text.includes('\n---\n'), `template front matter (${JSON.stringify(text)})`);
  await row('skills/lint/SKILL.md').waitFor();
  await $('[data-testid="clean"]').waitFor();
  // The front matter is parsed as YAML: "name" is a property name there, so it is highlighted unlike the Markdown body.
  await eventually(async () => (await $('.cm-editor').getAttribute('data-language')) === 'markdown', 'markdown language');
  const cls = await eventually(
    () =>
      page.evaluate(() => {
        const line = [...document.querySelectorAll('.cm-content .cm-line')].find((l) => l.textContent.startsWith('name:'));
        const span = line?.querySelector('span');
        // As YAML the key is a token of its own; as Markdown the whole line would be one (setext heading) span.
        return span && span.textContent === 'name' && span.className ? span.className : null;
      }),
    'the front matter key is highlighted',
  );
  expect(!!cls, `front matter token class ${cls}`);
  await $('[data-testid="tab-projects"]').click();
});
