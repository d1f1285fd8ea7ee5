// An unavailable sidecar.
// Tests run in order (serial) and build on the state earlier ones (and
// earlier spec files) leave; the stack and page are fixtures.mjs's.
import { test, $, checkNoLeaks, ensureSignedIn, eventually, expect, projectRow, sb, selectAgent, shot, sleep } from './fixtures.mjs';

test.describe.configure({ mode: 'serial' });

test('unavailable sidecar: agent stays selectable, both tabs say so, Retry works after restart, no endpoint shown', async () => {
  await ensureSignedIn();
  await selectAgent('codex-a');
  await projectRow('alpha-only').waitFor();
  await sb.kill();
  await selectAgent('codex-b');
  await $('[data-testid="unavailable"]').waitFor({ timeout: 20_000 });
  const text = await $('[data-testid="unavailable"]').textContent();
  expect(text.includes('codex-b') && text.includes('cannot be reached'), 'unavailable message names the agent');
  expect(!(await $('[data-testid="agent-select"]').isDisabled()), 'agent selector still usable');
  await checkNoLeaks('unavailable state');
  await shot('unavailable.png');
  // The Global tab says the same, and coming back to Projects tries again.
  await $('[data-testid="tab-global"]').click();
  await eventually(async () => (await $('[data-testid="unavailable"]').textContent())?.includes('Global files'), 'Global tab shows the unavailable state');
  await checkNoLeaks('unavailable Global tab');
  await $('[data-testid="tab-projects"]').click();
  await eventually(async () => (await $('[data-testid="unavailable"]').textContent())?.includes('its projects'), 'Projects tab unavailable again');
  await $('[data-testid="retry"]').click();
  await $('[data-testid="unavailable"]').waitFor(); // still down
  await sb.start();
  // The gateway reconnects with back-off, so a user may need to press Retry more than once.
  await eventually(
    async () => {
      if (await projectRow('beta-only').count()) return true;
      if (await $('[data-testid="retry"]').count()) await $('[data-testid="retry"]').click();
      await sleep(1000);
      return (await projectRow('beta-only').count()) > 0;
    },
    'projects listed after Retry',
    30_000,
  );
  expect((await $('[data-testid="unavailable"]').count()) === 0, 'unavailable state cleared');
});
