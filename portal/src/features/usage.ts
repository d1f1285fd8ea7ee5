// Usage (issue #25): the sizes of the listed projects and the projects
// volume's size and free space, from GetUsage (the sidecar's cache, kept
// fresh by its change feed). Best effort: a failure leaves the sizes out,
// never shows 0 for what is unknown.
import type { Api } from '../api/client';
import type { AgentState, UsageState } from '../state/appState';
import type { AgentScope } from '../state/scope';

/** The usage of the projects loaded in st (at most 100 per call), then a render. */
export async function loadUsage(api: Pick<Api, 'getUsage'>, scope: AgentScope<AgentState>, update: () => void): Promise<void> {
  const names = scope.state.projects.items.map((p) => p.name ?? '').filter((n) => n !== '');
  const out: UsageState = { projects: new Map(), volume: null };
  try {
    for (let i = 0; i === 0 || i < names.length; i += 100) {
      const r = await scope.guard(api.getUsage(scope.agentId, names.slice(i, i + 100)));
      for (const w of r.workspaces ?? []) {
        const name = w.workspace?.project_name ?? '';
        if (!w.error_reason && w.bytes !== undefined && w.files !== undefined) {
          out.projects.set(name, { bytes: Number(w.bytes), files: Number(w.files) });
        }
      }
      const v = r.projects_volume;
      if (v?.known && v.size_bytes !== undefined && v.free_bytes !== undefined) {
        out.volume = { size: Number(v.size_bytes), free: Number(v.free_bytes) };
      }
    }
  } catch {
    // Sizes are an aid: the list stands without them.
  }
  if (!scope.alive) return;
  scope.state.usage = out;
  update();
}

/** 1234567 → "1.2 MB" (decimal units, as du -h --si and Finder count). */
export function formatBytes(n: number): string {
  const units = ['B', 'kB', 'MB', 'GB', 'TB', 'PB'];
  let i = 0;
  let v = n;
  while (v >= 1000 && i < units.length - 1) {
    v /= 1000;
    i++;
  }
  return i === 0 ? `${n} B` : `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[i]}`;
}
