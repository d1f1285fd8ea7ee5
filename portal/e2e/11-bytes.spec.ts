// Bytes kept exactly (issue #14).
// Tests run in order (serial) and build on the state earlier ones (and
// earlier spec files) leave; the stack and page are fixtures.mjs's.
import { test, $, endOfLine, expect, hex, onAgentA, openFile, openProject, page, sa, sleep } from './fixtures.mjs';

test.describe.configure({ mode: 'serial' });

test('bytes: CRLF, mixed endings, a BOM, tabs and a missing final newline are saved byte for byte; an undone edit saves nothing', async () => {
  await onAgentA();
  await $('[data-testid="refresh-projects"]').click();
  await openProject('bytes');
  const cases = [
    // file, edit, expected bytes
    ['crlf.txt', async () => {
      await endOfLine(1);
      await page.keyboard.press('Enter');
      await page.keyboard.insertText('new line');
    }, 'one\r\ntwo\r\nnew line\r\nthree\r\n'],
    ['mixed.txt', async () => {
      await endOfLine(1);
      await page.keyboard.insertText('B');
    }, 'a\r\nbB\nc\r\nd'],
    ['bom.txt', async () => {
      await $('.cm-content').click();
      await page.keyboard.press('Control+End');
      await page.keyboard.insertText(' ok');
    }, '\ufeff\tx = 1\r\n\ty = 2 ok'],
  ];
  for (const [file, edit, want] of cases) {
    const before = sa.readBytes(`bytes/${file}`);
    await openFile(file);
    // An edit undone is no edit: nothing to save, nothing written.
    await endOfLine(0);
    await page.keyboard.insertText('x');
    await $('[data-testid="dirty"]').waitFor();
    await page.keyboard.press('Backspace');
    await $('[data-testid="clean"]').waitFor({ timeout: 3000 }).catch(() => {
      throw new Check(`${file}: typing and deleting a character leaves the file dirty (line endings changed)`);
    });
    expect(await $('[data-testid="save"]').isDisabled(), `${file}: Save disabled without an edit`);
    await page.keyboard.press('Control+S');
    await sleep(300);
    expect(hex(sa.readBytes(`bytes/${file}`)) === hex(before), `${file}: disk untouched by Ctrl+S without an edit`);
    await edit();
    await $('[data-testid="dirty"]').waitFor();
    await page.keyboard.press('Control+S');
    await $('[data-testid="clean"]').waitFor();
    const got = sa.readBytes(`bytes/${file}`);
    expect(hex(got) === hex(Buffer.from(want)), `${file}: bytes on disk ${JSON.stringify(got.toString())}, want ${JSON.stringify(want)}`);
  }
});
