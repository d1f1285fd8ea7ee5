// Live changes on screen: whether the view is live (or may be stale since
// when), and the open file's "changed on disk" / "deleted on disk" bar.
import { html, nothing, type TemplateResult } from 'lit-html';
import type { StreamStatus } from '../api/watch';
import type { DiffLine } from '../state/live';

export function liveStatusView(s: StreamStatus, notLive: number): TemplateResult {
  const limited = notLive
    ? html`<span class="live-limit" data-testid="live-limit"> · ${notLive} folder${notLive === 1 ? ' is' : 's are'} not updated live (too many open)</span>`
    : nothing;
  switch (s.kind) {
    case 'off':
      return html`<div class="live-status" data-testid="live-status" data-state="off"></div>`;
    case 'connecting':
      return html`<div class="live-status" data-testid="live-status" data-state="connecting"><span class="live-dot"></span> Connecting to live updates…</div>`;
    case 'live':
      return html`<div class="live-status" data-testid="live-status" data-state="live" title="Changes on the agent's volume appear here as they happen">
        <span class="live-dot on"></span> Live${limited}
      </div>`;
    case 'reconnecting':
      return html`<div class="live-status stale" role="status" data-testid="live-status" data-state="reconnecting">
        <span class="live-dot off"></span> Live updates lost — reconnecting. The view may be stale since ${new Date(s.since).toLocaleTimeString()}.${limited}
      </div>`;
  }
}

export interface DiskBar {
  kind: 'changed' | 'deleted';
  path: string;
}

export interface DiskBarHandlers {
  compare: () => void;
  reload: () => void;
  keepMine: () => void;
  copy: () => void;
  saveAsNew: () => void;
}

export function diskBarView(b: DiskBar | null, h: DiskBarHandlers): TemplateResult | typeof nothing {
  if (!b) return nothing;
  if (b.kind === 'deleted') {
    return html`<div class="conflict-banner" role="alert" data-testid="disk-deleted-bar">
      <strong>${b.path} was deleted on disk by someone else.</strong> Your text stays here; you can save it again as a new file.
      <span class="banner-actions"
        ><button class="btn btn-small" data-testid="disk-copy" @click=${h.copy}>Copy my text</button
        ><button class="btn btn-small btn-primary" data-testid="disk-save-new" @click=${h.saveAsNew}>Save as new file</button></span
      >
    </div>`;
  }
  return html`<div class="conflict-banner" role="alert" data-testid="disk-changed-bar">
    <strong>${b.path} was changed on disk by someone else.</strong> Your unsaved changes are still here.
    <span class="banner-actions">
      <button class="btn btn-small" data-testid="disk-compare" @click=${h.compare}>Compare</button>
      <button class="btn btn-small" data-testid="disk-reload" @click=${h.reload}>Reload</button>
      <button class="btn btn-small btn-primary" data-testid="disk-keep" @click=${h.keepMine}>Keep mine</button>
    </span>
  </div>`;
}

export function diffView(lines: DiffLine[]): TemplateResult {
  return html`<div class="live-diff" data-testid="live-diff" aria-label="The version on disk (−) against your text (+)">
    ${lines.map((l) => html`<div class="diff-line ${l.op === '+' ? 'add' : l.op === '-' ? 'del' : ''}"><span class="op">${l.op}</span>${l.text}</div>`)}
  </div>`;
}
