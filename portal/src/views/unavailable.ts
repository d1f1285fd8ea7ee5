// An agent whose file service cannot be reached: it stays selectable, with Retry.
import { html, type TemplateResult } from 'lit-html';

export function unavailableView(agentId: string, onRetry: () => void, what: string): TemplateResult {
  return html`<div class="unavailable" role="alert" data-testid="unavailable">
    <h2>Agent unavailable</h2>
    <p>The file service of agent <strong>${agentId}</strong> cannot be reached right now, so ${what} cannot be shown.</p>
    <p>The agent may be restarting. You can still switch to another agent.</p>
    <button class="btn btn-primary" data-testid="retry" @click=${onRetry}>Retry</button>
  </div>`;
}
