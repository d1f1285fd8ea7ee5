// Usage (issue #25): the project list shows each project's size (from
// GetUsage, the sidecar's cache) and a bar of the projects volume's used
// and free space; a write through the portal's REST makes the size move.
import { test, expect, eventually, $, projectRow, ensureSignedIn, selectAgent, shot, checkNoLeaks, sa, gw } from './fixtures.mjs';

test.describe.configure({ mode: 'serial' });

test('usage: project sizes in the list and the volume usage bar', async () => {
  sa.mkdir('usage-demo');
  sa.write('usage-demo/a.bin', Buffer.alloc(12_345, 1));
  sa.write('usage-demo/b.txt', 'x'.repeat(655));
  await ensureSignedIn();
  await selectAgent('codex-a');
  const size = () => projectRow('usage-demo').locator('[data-testid="project-size"]');
  await eventually(
    async () => {
      await $('[data-testid="refresh-projects"]').click().catch(() => {});
      return (await size().count()) > 0;
    },
    'usage-demo shows a size',
    20_000,
  );
  const text = (await size().textContent())?.trim();
  expect(text === '13 kB', `13,000 bytes shown as 13 kB (got ${text})`);
  const title = await size().getAttribute('title');
  expect(title === '2 files, 13000 bytes', `the exact figures in the title (${title})`);

  const bar = $('[data-testid="usage-bar"]');
  await bar.waitFor();
  const barText = (await bar.textContent()) ?? '';
  expect(/used of .+ · .+ free/.test(barText), `the bar says used, size and free (${barText})`);
  const now = Number(await bar.locator('[role="meter"]').getAttribute('aria-valuenow'));
  expect(now >= 0 && now <= 100, `the meter is a percentage (${now})`);
  await checkNoLeaks('the usage bar');
  await shot('usage.png');

  // The same figures over REST, and a REST write makes them move (the cache is stale, not re-walked per request).
  const ask = async () =>
    (await (await fetch(`${gw.url}/api/v1/agent-gateway/agents/codex-a/usage?project_names=usage-demo`, { headers: { Authorization: `Bearer ${gw.adminToken}` } })).json())
      .workspaces[0];
  expect((await ask()).bytes === '13000', 'REST agrees');
  const put = await fetch(`${gw.url}/api/v1/agent-gateway/agents/codex-a/projects/entries`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${gw.adminToken}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ workspace: { scope: 'PROJECT', project_name: 'usage-demo' }, parent_path: '', name: 'c.txt', type: 'ENTRY_TYPE_FILE' }),
  });
  expect(put.ok, `create c.txt (${put.status})`);
  expect((await ask()).files === '3', 'the new file is counted');
  await $('[data-testid="refresh-projects"]').click();
  await eventually(async () => (await size().getAttribute('title')) === '3 files, 13000 bytes', 'the list shows the new count');
  await fetch(`${gw.url}/api/v1/agent-gateway/agents/codex-a/projects/usage-demo?confirm_name=usage-demo`, { method: 'DELETE', headers: { Authorization: `Bearer ${gw.adminToken}` } });
});
