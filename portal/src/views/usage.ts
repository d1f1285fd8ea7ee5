// The usage bar of the projects volume and a project's size (loaded by
// features/projects.ts from GetUsage). Best effort: unknown sizes are left
// out, never shown as 0.
import { html, nothing, type TemplateResult } from 'lit-html';
import type { AgentState } from '../state/appState';

export function usageBarView(st: AgentState): TemplateResult | typeof nothing {
  const v = st.usage?.volume;
  if (!v || v.size <= 0) return nothing;
  const used = Math.max(0, v.size - v.free);
  const pct = Math.min(100, Math.round((used / v.size) * 100));
  const text = `${formatBytes(used)} used of ${formatBytes(v.size)} · ${formatBytes(v.free)} free`;
  return html`<div class="usage" data-testid="usage-bar" title="The projects volume: ${text}">
    <div class="usage-track" role="meter" aria-label="Projects volume used" aria-valuemin="0" aria-valuemax="100" aria-valuenow=${pct}>
      <div class="usage-fill ${pct >= 90 ? 'full' : ''}" style="width: ${pct}%"></div>
    </div>
    <span class="usage-text muted">${text}</span>
  </div>`;
}

export function projectSizeView(st: AgentState, name: string): TemplateResult | typeof nothing {
  const u = st.usage?.projects.get(name);
  if (!u) return nothing;
  return html`<span class="size muted" data-testid="project-size" title="${u.files} files, ${u.bytes} bytes">${formatBytes(u.bytes)}</span>`;
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
