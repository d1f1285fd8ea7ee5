// Downloads (issue #25): a folder from the tree's menu as a .zip, unzipped
// and compared byte for byte with the volume (denied folders and a symlink
// to a canary outside the volume absent); a binary file from the Download
// button where it cannot be edited. Uploads are 29-upload.spec.ts.
// Tests run in order (serial) and build on the state earlier ones (and
// earlier spec files) leave; the stack and page are fixtures.mjs's.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { test, $, base, eventually, expect, onAgentA, openProject, page, row, sa } from './fixtures.mjs';

test.describe.configure({ mode: 'serial' });

/** Every regular file under dir: relative path → bytes. */
function filesUnder(dir: string, rel = ''): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  for (const e of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
    const r = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) for (const [k, v] of filesUnder(dir, r)) out.set(k, v);
    else if (e.isFile()) out.set(r, fs.readFileSync(path.join(dir, r)));
    else throw new Error(`${r}: not a file or folder in the archive`);
  }
  return out;
}

test('download: a folder from the tree menu is a .zip of exactly its files; denied folders and a symlink out are absent', async () => {
  const blob = randomBytes(1536 * 1024 + 7);
  const canary = path.join(base, 'xfer-canary.txt');
  fs.writeFileSync(canary, 'outside the volume\n');
  sa.write('xfer/src/main.go', 'package main\n');
  sa.write('xfer/src/deep/notes ü.md', '# notes\n');
  sa.write('xfer/src/data.bin', blob);
  sa.write('xfer/src/node_modules/m/index.js', 'denied\n');
  sa.write('xfer/src/.git/config', '[core]\n');
  fs.symlinkSync(canary, path.join(sa.projects, 'xfer/src/link.txt'));
  await onAgentA();
  await $('[data-testid="refresh-projects"]').click();
  await openProject('xfer');
  await row('src').click({ button: 'right' });
  await $('[data-testid="context-menu"]').waitFor();
  const [dl] = await Promise.all([page.waitForEvent('download'), $('[role="menuitem"]:has-text("Download as .zip")').click()]);
  expect(dl.suggestedFilename() === 'src.zip', `suggested name ${dl.suggestedFilename()}`);
  const zip = path.join(base, 'xfer-src.zip');
  await dl.saveAs(zip);
  const out = path.join(base, 'xfer-unzipped');
  fs.rmSync(out, { recursive: true, force: true });
  execFileSync('unzip', ['-q', zip, '-d', out]); // make setup installs unzip
  const got = filesUnder(path.join(out, 'src'));
  const want = new Map<string, Buffer>([
    ['main.go', Buffer.from('package main\n')],
    ['deep/notes ü.md', Buffer.from('# notes\n')],
    ['data.bin', blob],
  ]);
  expect(
    [...got.keys()].sort().join(',') === [...want.keys()].sort().join(','),
    `archive holds ${[...got.keys()].sort().join(', ')}; want ${[...want.keys()].sort().join(', ')} (no node_modules, .git, link.txt)`,
  );
  for (const [k, v] of want) expect(Buffer.compare(got.get(k)!, v) === 0, `${k}: not the same bytes`);
  expect(fs.readFileSync(canary, 'utf8') === 'outside the volume\n', 'the canary is untouched');
});

test('download: a binary file that cannot be edited has a Download button that gives its bytes', async () => {
  await row('src').click();
  await row('src/data.bin').click();
  await $('[data-testid="non-editable"]').waitFor();
  const [dl] = await Promise.all([page.waitForEvent('download'), $('[data-testid="download-file"]').click()]);
  expect(dl.suggestedFilename() === 'data.bin', `suggested name ${dl.suggestedFilename()}`);
  const p = path.join(base, 'xfer-data.bin');
  await dl.saveAs(p);
  await eventually(async () => fs.existsSync(p), 'download saved');
  expect(Buffer.compare(fs.readFileSync(p), sa.readBytes('xfer/src/data.bin')) === 0, 'downloaded bytes equal the file on disk');
});
