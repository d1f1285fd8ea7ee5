// Drives the npm `webdav` client (portal devDependency, pinned) against the
// gateway's WebDAV view for TestKeepNpmWebdav: an overwrite
// (putFileContents), a delete (deleteFile) and a move onto an existing name
// (moveFile, overwrite). None of them sends a precondition. Arguments: the
// portal directory (where node_modules/webdav is), the WebDAV URL of the
// project, the token. It prints one JSON line: {"ok":true} or
// {"ok":false,"step":...,"status":...}.
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import path from 'node:path';

const [portalDir, url, token] = process.argv.slice(2);
const require = createRequire(path.join(portalDir, 'package.json'));
const { createClient } = await import(pathToFileURL(require.resolve('webdav')).href);
const client = createClient(url, { username: 'npm-webdav', password: token });

const steps = [
  ['putFileContents', () => client.putFileContents('/notes.txt', 'notes v2 from the npm client\n', { overwrite: true })],
  ['deleteFile', () => client.deleteFile('/old.txt')],
  ['moveFile', () => client.moveFile('/draft.txt', '/final.txt', { overwrite: true })],
];
for (const [step, run] of steps) {
  try {
    await run();
  } catch (err) {
    console.log(JSON.stringify({ ok: false, step, status: err?.status ?? err?.response?.status ?? 0, message: String(err?.message ?? err) }));
    process.exit(0);
  }
}
console.log(JSON.stringify({ ok: true }));
