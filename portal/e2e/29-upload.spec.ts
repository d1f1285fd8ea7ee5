// Uploads (issue #25): files and a folder by the pickers and by drops (a
// synthetic DataTransfer dispatched in the page, and a real drag of a
// folder from disk through the DevTools protocol), compared byte for byte
// with the volume; an existing name answered each way (Replace keeps a
// version, Skip leaves the old bytes, Keep both makes "x (1).txt"); a file
// over maxUploadSize refused before a byte is sent, with the number; a
// denylisted folder's files refused with the server's reason while the
// others go on; Cancel mid-way leaves nothing; Global takes files into
// skills/ only. Self-contained: it prepares its own project. The stack
// and page are fixtures.mjs's.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { test, $, base, clickMenu, dialog, eventually, expect, onAgentA, openProject, page, row, sa, shot } from './fixtures.mjs';

test.describe.configure({ mode: 'serial' });

const item = (p: string) => $(`[data-testid="upload-item"][data-path="${p}"]`);

async function statusOf(p: string): Promise<string | null> {
  return (await item(p).count()) ? item(p).getAttribute('data-status') : null;
}

async function waitStatus(p: string, want: string, timeout = 20_000): Promise<void> {
  await eventually(async () => (await statusOf(p)) === want, `${p}: upload ${want} (is ${await statusOf(p)}: ${await item(p).textContent().catch(() => '')})`, timeout);
}

/** Closes the upload panel once nothing is in flight. */
async function closePanel(): Promise<void> {
  if (await $('[data-testid="upload-clear"]').count()) await $('[data-testid="upload-clear"]').click();
  await eventually(async () => (await $('[data-testid="upload-panel"]').count()) === 0, 'the upload panel closed');
}

/** Picks files (or a folder) with the Upload button's menu and the browser's chooser. */
async function pick(files: Parameters<import('@playwright/test').FileChooser['setFiles']>[0], folder = false): Promise<void> {
  await $('[data-testid="upload-button"]').click();
  const [chooser] = await Promise.all([page.waitForEvent('filechooser'), clickMenu(folder ? 'Upload folder…' : 'Upload files…')]);
  await chooser.setFiles(files);
}

/** Drops a file made in the page (bytes, or size zero bytes) on the element sel, as a synthetic DataTransfer. */
async function dropSynthetic(sel: string, name: string, bytes: Buffer | null, size = 0): Promise<void> {
  await page.evaluate(
    ({ sel, name, b64, size }) => {
      const el = document.querySelector(sel);
      if (!el) throw new Error(`no ${sel}`);
      const body = b64 === null ? new Uint8Array(size) : Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
      const dt = new DataTransfer();
      dt.items.add(new File([body], name));
      for (const type of ['dragenter', 'dragover', 'drop']) el.dispatchEvent(new DragEvent(type, { bubbles: true, cancelable: true, dataTransfer: dt }));
    },
    { sel, name, b64: bytes === null ? null : bytes.toString('base64'), size },
  );
}

/** Drags paths from disk onto the element sel as Chromium does for a real drag from the desktop (Input.dispatchDragEvent). */
async function dragFromDisk(sel: string, paths: string[]): Promise<void> {
  const box = await $(sel).boundingBox();
  expect(box, `${sel} is on screen`);
  const cdp = await page.context().newCDPSession(page);
  const at = { x: box!.x + box!.width / 2, y: box!.y + box!.height / 2 };
  const data = { items: [], files: paths, dragOperationsMask: 1 };
  for (const type of ['dragEnter', 'dragOver', 'drop']) await cdp.send('Input.dispatchDragEvent', { type, ...at, data } as never);
  await cdp.detach();
}

/** Every name in a folder of project up on disk. */
const onDisk = (rel: string) => fs.readdirSync(path.join(sa.projects, 'up', rel)).sort();

test('upload: files and a folder by the pickers land byte for byte, the folder with its folders', async () => {
  sa.mkdir('up');
  await onAgentA();
  await $('[data-testid="refresh-projects"]').click();
  await openProject('up');
  const cut = await page.evaluate(() => {
    const h = document.querySelector('.sidebar-section.files h2');
    return h ? h.scrollWidth > h.clientWidth : true;
  });
  expect(!cut, '"Files in up" is not cut beside the Upload button');
  const a = randomBytes(300 * 1024 + 3);
  const b = Buffer.from('übung\r\nzwei\n');
  await pick([
    { name: 'a.bin', mimeType: 'application/octet-stream', buffer: a },
    { name: 'ü b.txt', mimeType: 'text/plain', buffer: b },
  ]);
  await waitStatus('a.bin', 'done');
  await waitStatus('ü b.txt', 'done');
  expect(Buffer.compare(sa.readBytes('up/a.bin'), a) === 0, 'a.bin: the same bytes on the volume');
  expect(Buffer.compare(sa.readBytes('up/ü b.txt'), b) === 0, 'ü b.txt: the same bytes on the volume');
  const total = await $('[data-testid="upload-total"]').evaluate((p: HTMLProgressElement) => p.value);
  expect(total === 100, `the total progress is full (${total})`);
  await row('a.bin').waitFor(); // the tree was refreshed
  await closePanel();

  const local = path.join(base, 'up-local', 'picked');
  const deep = randomBytes(70_000);
  fs.mkdirSync(path.join(local, 'sub', 'deep'), { recursive: true });
  fs.writeFileSync(path.join(local, 'top.txt'), 'top\n');
  fs.writeFileSync(path.join(local, 'sub', 'deep', 'y.bin'), deep);
  await pick(local, true);
  await waitStatus('picked/sub/deep/y.bin', 'done');
  await waitStatus('picked/top.txt', 'done');
  expect(Buffer.compare(sa.readBytes('up/picked/sub/deep/y.bin'), deep) === 0, 'picked/sub/deep/y.bin: the same bytes');
  expect(sa.read('up/picked/top.txt') === 'top\n', 'picked/top.txt: the same bytes');
  await row('picked').waitFor();
  await closePanel();
});

test('upload: a file dropped on a folder row, a folder dragged from disk onto the tree; a denylisted folder refused, the rest uploaded', async () => {
  const dropped = randomBytes(40_000);
  await row('picked').waitFor();
  await dropSynthetic('.tree-row[data-path="picked"]', 'dropped.bin', dropped);
  await waitStatus('picked/dropped.bin', 'done');
  expect(Buffer.compare(sa.readBytes('up/picked/dropped.bin'), dropped) === 0, 'dropped.bin: in the folder it was dropped on, the same bytes');
  await closePanel();

  const local = path.join(base, 'up-local', 'dragged');
  const blob = randomBytes(123_457);
  fs.mkdirSync(path.join(local, 'empty'), { recursive: true });
  fs.mkdirSync(path.join(local, 'node_modules', 'm'), { recursive: true });
  fs.mkdirSync(path.join(local, 'src'), { recursive: true });
  fs.writeFileSync(path.join(local, 'src', 'blob.bin'), blob);
  fs.writeFileSync(path.join(local, 'readme.md'), '# dragged\n');
  fs.writeFileSync(path.join(local, 'node_modules', 'm', 'index.js'), 'denied\n');
  await dragFromDisk('.tree-row[data-path="a.bin"]', [local]); // on a file at the top: into the top
  await waitStatus('dragged/src/blob.bin', 'done');
  await waitStatus('dragged/readme.md', 'done');
  await waitStatus('dragged/node_modules/m/index.js', 'failed');
  const why = (await item('dragged/node_modules/m/index.js').locator('[data-testid="upload-status"]').textContent()) ?? '';
  expect(why.includes('node_modules') && /deni|protected/i.test(why), `the refused file says why (${why})`);
  expect(Buffer.compare(sa.readBytes('up/dragged/src/blob.bin'), blob) === 0, 'dragged/src/blob.bin: the same bytes');
  expect(sa.read('up/dragged/readme.md') === '# dragged\n', 'dragged/readme.md: the same bytes');
  expect(onDisk('dragged').join(',') === 'empty,readme.md,src', `dragged/ holds ${onDisk('dragged')} (the empty folder made, no node_modules)`);
  await row('dragged').waitFor();
  await closePanel();
});

test('upload: an existing name answered each way: Replace keeps a version, Skip leaves the old bytes, Keep both makes x (1).txt', async () => {
  sa.write('up/x.txt', 'old\n');
  await $('[data-testid="refresh-files"]').click();
  await row('x.txt').waitFor();
  const answer = async (text: string, action: string) => {
    await pick([{ name: 'x.txt', mimeType: 'text/plain', buffer: Buffer.from(text) }]);
    const d = dialog('upload-conflict-dialog');
    await d.waitFor();
    expect(((await d.textContent()) ?? '').includes('x (1).txt'), 'the dialog names the Keep both name');
    await d.locator(`[data-action="${action}"]`).click();
  };

  await answer('replaced\n', 'replace');
  await waitStatus('x.txt', 'done');
  expect(sa.read('up/x.txt') === 'replaced\n', 'Replace: the new bytes');
  const cks = await page.evaluate(async () => {
    const r = await fetch('/api/v1/agent-gateway/agents/codex-a/checkpoints?workspace.scope=PROJECT&workspace.project_name=up&path=x.txt');
    return r.json();
  });
  const v = (cks.checkpoints ?? []).find((c: { reason?: string }) => c.reason === 'CHECKPOINT_REASON_BEFORE_WEBDAV_WRITE');
  expect(v && v.operator === 'alice', `Replace kept the old x.txt as a version by alice (${JSON.stringify(cks).slice(0, 400)})`);
  await closePanel();

  await answer('skipped\n', 'skip');
  await waitStatus('x.txt', 'skipped');
  expect(sa.read('up/x.txt') === 'replaced\n', 'Skip: the old bytes stay');
  await closePanel();

  await answer('both\n', 'keep');
  await waitStatus('x (1).txt', 'done');
  expect(sa.read('up/x (1).txt') === 'both\n' && sa.read('up/x.txt') === 'replaced\n', 'Keep both: x (1).txt is new, x.txt unchanged');
  await row('x (1).txt').waitFor();
  await closePanel();
});

test('upload: a file over maxUploadSize is refused before anything is sent, with the number', async () => {
  const puts: string[] = [];
  const seen = (r: import('@playwright/test').Request) => {
    if (r.method() === 'PUT') puts.push(r.url());
  };
  page.on('request', seen);
  try {
    await dropSynthetic('[data-testid="tree"]', 'huge.bin', null, 104857600 + 1);
    await waitStatus('huge.bin', 'failed');
    const why = (await item('huge.bin').locator('[data-testid="upload-status"]').textContent()) ?? '';
    expect(why.includes('104,857,600 bytes'), `the refusal names the limit (${why})`);
    const notice = (await $('[data-testid="notice"]').textContent()) ?? '';
    expect(notice.includes('104,857,600 bytes'), `the message names the limit (${notice})`);
  } finally {
    page.off('request', seen);
  }
  expect(puts.length === 0, `nothing was sent (${puts.join(', ')})`);
  expect(!sa.exists('up/huge.bin'), 'no huge.bin on the volume');
  await closePanel();
});

test('upload: Cancel mid-way stops the file, with progress shown, and leaves nothing on the volume', async () => {
  const before = onDisk('');
  const cdp = await page.context().newCDPSession(page);
  // 512 KiB/s: an 8 MiB file takes long enough to be seen half-sent and cancelled.
  await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: 512 * 1024 });
  try {
    await pick([{ name: 'slow.bin', mimeType: 'application/octet-stream', buffer: randomBytes(8 << 20) }]);
    const half = await eventually(
      async () => {
        const p = await item('slow.bin').locator('progress').evaluate((e: HTMLProgressElement) => e.value);
        return p > 0 && p < 100 ? p : null;
      },
      'slow.bin is being sent (its progress between 0 and 100)',
    );
    // The bytes are streaming into the sidecar's temp file beside the target (davfs's .davfs-tmp-…).
    await eventually(() => onDisk('').some((n) => n.startsWith('.davfs-tmp-')), `a temp file in up/ while slow.bin is sent (${onDisk('')})`);
    const total = await $('[data-testid="upload-total"]').evaluate((e: HTMLProgressElement) => e.value);
    expect(total > 0 && total < 100, `the total shows the progress too (${total}; the file's ${half})`);
    await shot('upload.png');
    await item('slow.bin').locator('[data-testid="upload-cancel"]').click();
    await waitStatus('slow.bin', 'cancelled');
  } finally {
    await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1 });
    await cdp.detach();
  }
  // The sidecar removes its temp file when the body ends short, and commits nothing.
  await eventually(() => onDisk('').join(',') === before.join(','), `nothing new in up/ after Cancel (${onDisk('')})`);
  await page.waitForTimeout(500);
  expect(onDisk('').join(',') === before.join(','), `still nothing new in up/ (${onDisk('')})`);
  expect(!sa.exists('up/slow.bin'), 'no slow.bin');
  await closePanel();
});

test('upload: in Global a file goes into skills/; one beside skills/ is refused with the server reason', async () => {
  await $('[data-testid="tab-global"]').click();
  await row('skills').waitFor();
  await dropSynthetic('[data-testid="tree"]', 'stray.txt', Buffer.from('not allowed here\n'));
  await waitStatus('stray.txt', 'failed');
  const why = (await item('stray.txt').locator('[data-testid="upload-status"]').textContent()) ?? '';
  expect(/skills|AGENTS\.md|Global/i.test(why), `the refusal says what Global holds (${why})`);
  expect(!sa.exists('stray.txt', 'global'), 'nothing beside skills/');
  const ref = randomBytes(2048);
  await dropSynthetic('.tree-row[data-path="skills"]', 'ref.bin', ref);
  await waitStatus('skills/ref.bin', 'done');
  expect(Buffer.compare(sa.readBytes('skills/ref.bin', 'global'), ref) === 0, 'skills/ref.bin: the same bytes in CODEX_HOME');
  await closePanel();
  await $('[data-testid="tab-projects"]').click();
});
