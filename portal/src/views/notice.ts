// The message strip: one notice at a time, errors as alerts, with an optional action (Undo).
import { html, nothing, type TemplateResult } from 'lit-html';
import type { Notice } from '../state/appState';

export function noticeView(n: Notice | null, onDismiss: () => void): TemplateResult {
  if (!n) return html`<div class="notice-slot" aria-live="polite"></div>`;
  return html`<div class="notice-slot" aria-live="polite">
    <div class="notice ${n.kind}" role=${n.kind === 'error' ? 'alert' : 'status'} data-testid="notice">
      <span>${n.text}</span>
      ${n.action ? html`<button class="btn btn-small" data-testid=${n.action.testid} @click=${n.action.run}>${n.action.label}</button>` : nothing}
      <button class="btn btn-small btn-ghost" aria-label="Dismiss message" @click=${onDismiss}>✕</button>
    </div>
  </div>`;
}
