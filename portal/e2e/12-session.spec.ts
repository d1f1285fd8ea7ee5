// The session across a gateway restart, and drafts (issue #14).
// Tests run in order (serial) and build on the state earlier ones (and
// earlier spec files) leave; the stack and page are fixtures.mjs's.
import path from 'node:path';
import { test, $, context, dialog, editorText, endOfLine, eventually, expect, gw, onAgentA, openFile, openProject, page, sa, signIn, sleep } from './fixtures.mjs';

test.describe.configure({ mode: 'serial' });

test('session: a gateway restart keeps the session; a save refused for a lost session signs in again in place and is retried', async () => {
  await onAgentA();
  await $('[data-testid="refresh-projects"]').click();
  await openProject('keep');
  await openFile('draft.txt');
  await endOfLine(0);
  await page.keyboard.insertText(' +restart');
  await $('[data-testid="dirty"]').waitFor();
  await gw.restart(); // same session key: the sealed cookie still opens
  await page.keyboard.press('Control+S');
  await $('[data-testid="clean"]').waitFor();
  expect(sa.read('keep/draft.txt') === 'first line +restart\n', `saved across a restart (${JSON.stringify(sa.read('keep/draft.txt'))})`);
  expect((await dialog('signin-dialog').count()) === 0, 'no sign-in needed after a restart');

  // The session ends (the key it was sealed with is gone): sign in again in place, the save goes through.
  await endOfLine(0);
  await page.keyboard.insertText(' +again');
  await $('[data-testid="dirty"]').waitFor();
  await gw.restart({ newSessionKey: true });
  await page.keyboard.press('Control+S');
  const d = dialog('signin-dialog');
  await d.waitFor();
  expect((await editorText()) === 'first line +restart +again\n', `text kept under the sign-in dialog (${JSON.stringify(await editorText())})`);
  await d.locator('input[name="token"]').fill('wrong-token');
  await d.locator('[data-action="confirm"]').click();
  await eventually(async () => (await d.locator('[role="alert"]').textContent()).includes('not accepted'), 'wrong token refused in the dialog');
  await d.locator('input[name="token"]').fill(gw.adminToken);
  await d.locator('[data-action="confirm"]').click();
  await $('[data-testid="clean"]').waitFor();
  expect(sa.read('keep/draft.txt') === 'first line +restart +again\n', 'the refused save was retried once signed in');

  // Retried with the same expected revision: a change meanwhile takes the conflict path.
  await endOfLine(0);
  await page.keyboard.insertText(' +conflict');
  await $('[data-testid="dirty"]').waitFor();
  await gw.restart({ newSessionKey: true });
  sa.write('keep/draft.txt', 'changed by the agent\n');
  await page.keyboard.press('Control+S');
  await d.waitFor();
  await d.locator('input[name="token"]').fill(gw.adminToken);
  await d.locator('[data-action="confirm"]').click();
  const cd = dialog('merge-dialog');
  await cd.waitFor();
  expect(sa.read('keep/draft.txt') === 'changed by the agent\n', 'the other writer is kept');
  await cd.locator('[data-action="cancel"]').click();
  await page.locator('[data-testid="conflict-banner"] button', { hasText: 'Reload server version' }).click();
  await eventually(async () => (await editorText()) === 'changed by the agent\n', 'server version loaded');
  await $('[data-testid="clean"]').waitFor();
});

test('drafts: unsaved text survives a page reload and a declined sign-in, and is saved on the revision it was typed on', async () => {
  await onAgentA();
  await openProject('keep');
  await openFile('draft.txt');
  await endOfLine(0);
  await page.keyboard.insertText(' +draft');
  await $('[data-testid="dirty"]').waitFor();
  await sleep(500); // the draft is stored within 300 ms of typing
  const accept = (dl) => dl.accept().catch(() => {});
  page.on('dialog', accept); // "leave the page?" — yes
  try {
    await page.reload();
  } finally {
    page.off('dialog', accept);
  }
  await $('[data-testid="agent-select"]').waitFor();
  await openProject('keep');
  await openFile('draft.txt');
  await eventually(async () => (await editorText()) === 'changed by the agent +draft\n', `draft restored (${JSON.stringify(await editorText())})`);
  await $('[data-testid="dirty"]').waitFor();
  expect((await $('[data-testid="notice"]').textContent()).includes('restored'), 'says the changes were restored');
  // The session ends and the user declines to sign in: the login page, and the draft is still kept.
  await endOfLine(0);
  await page.keyboard.insertText(' +more');
  await context.clearCookies();
  await page.keyboard.press('Control+S');
  await dialog('signin-dialog').waitFor();
  await dialog('signin-dialog').locator('[data-action="cancel"]').click();
  await $('[data-testid="login-form"]').waitFor();
  await signIn();
  await $('[data-testid="agent-select"]').waitFor();
  await openProject('keep');
  await openFile('draft.txt');
  await eventually(async () => (await editorText()) === 'changed by the agent +draft +more\n', 'draft restored after signing in again');
  await page.keyboard.press('Control+S');
  await $('[data-testid="clean"]').waitFor();
  expect(sa.read('keep/draft.txt') === 'changed by the agent +draft +more\n', 'draft saved');
  // Saved: nothing is restored any more.
  await page.reload();
  await $('[data-testid="agent-select"]').waitFor();
  await openProject('keep');
  await openFile('draft.txt');
  await $('[data-testid="clean"]').waitFor();
});
