// Dark mode and a narrow editor.
// Tests run in order (serial) and build on the state earlier ones (and
// earlier spec files) leave; the stack and page are fixtures.mjs's.
import { test, $, eventually, expect, onAgentA, openFile, openProject, page, shot, sleep } from './fixtures.mjs';

test.describe.configure({ mode: 'serial' });

test('dark mode follows prefers-color-scheme, the editor included; at 768 px the editor and Save are on screen', async () => {
  await onAgentA();
  await openProject('bytes');
  await openFile('crlf.txt');
  const colors = () =>
    page.evaluate(() => ({
      body: getComputedStyle(document.documentElement).backgroundColor,
      editor: getComputedStyle(document.querySelector('.cm-editor')).backgroundColor,
      theme: document.querySelector('.cm-editor').dataset.theme,
    }));
  const lum = (rgb) => {
    const [r, g, b] = rgb.match(/\d+/g).map(Number);
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  await page.emulateMedia({ colorScheme: 'dark' });
  try {
    const dark = await eventually(async () => {
      const c = await colors();
      return c.theme === 'dark' && c;
    }, 'editor switched to its dark theme');
    expect(lum(dark.body) < 60 && lum(dark.editor) < 60, `dark page and editor (${JSON.stringify(dark)})`);
    await shot('dark.png');
  } finally {
    await page.emulateMedia({ colorScheme: 'light' });
  }
  const light = await eventually(async () => {
    const c = await colors();
    return c.theme === 'light' && c;
  }, 'back to light');
  expect(lum(light.body) > 200, `light page (${JSON.stringify(light)})`);
  for (const [w, h] of [
    [768, 1024],
    [1024, 768],
    [1366, 768],
  ]) {
    await page.setViewportSize({ width: w, height: h });
    await sleep(200);
    const box = await page.evaluate(() => {
      const r = (sel) => document.querySelector(sel)?.getBoundingClientRect();
      return { save: r('[data-testid="save"]'), editor: r('.cm-editor'), vw: innerWidth, vh: innerHeight, sy: scrollY };
    });
    expect(box.save && box.save.bottom <= box.vh && box.save.right <= box.vw, `${w}x${h}: Save visible without scrolling (${JSON.stringify(box)})`);
    expect(box.editor && box.editor.top < box.vh && box.editor.height >= 150, `${w}x${h}: editor visible (${JSON.stringify(box.editor)})`);
  }
  await page.setViewportSize({ width: 1280, height: 800 });
});
