// The Agents page (features/agentsPage.ts): a search box, one page of agents
// with state, since when, source and project management, and Previous / Next.
import { html, nothing, type TemplateResult } from 'lit-html';
import type { AppContext } from '../context';
import { AGENTS_PAGE } from '../features/agentsPage';
import { hasNext, hasPrevious, rangeLabel, sinceLabel, sourceLabel, stateLabel, type AgentListing } from '../state/agentList';
import type { Agent } from '../api/types';

function row(c: AppContext, a: Agent, now: number): TemplateResult {
  const id = a.agent_id ?? '';
  const since = sinceLabel(a.state_since, now);
  const absolute = a.state_since ? new Date(a.state_since).toLocaleString() : '';
  return html`<tr class="agent-row" data-agent=${id}>
    <td>
      <button class="link" data-testid="open-agent" @click=${() => void c.agents.open(id)}>${id}</button>${a.is_default
        ? html` <span class="badge">default</span>`
        : nothing}
    </td>
    <td class="agent-state" data-state=${a.state ?? ''}>${stateLabel(a.state)}</td>
    <td class="agent-since">${since ? html`<time datetime=${a.state_since ?? ''} title=${absolute}>${since}</time>` : '—'}</td>
    <td class="agent-source">${sourceLabel(a.source)}</td>
    <td class="agent-pm">${a.project_management_enabled ? 'yes' : 'no'}</td>
  </tr>`;
}

export function agentListView(c: AppContext, l: AgentListing): TemplateResult {
  const now = Date.now();
  const busy = c.state.agentsPageLoading;
  return html`<section class="agents-page" data-testid="agents-page" aria-busy=${busy ? 'true' : 'false'}>
    <div class="agents-page-bar">
      <input
        type="search"
        data-testid="agents-page-search"
        aria-label="Search agents"
        placeholder="Search agents by ID"
        .value=${l.query}
        @input=${(e: Event) => c.agentsPage.search((e.target as HTMLInputElement).value)}
      />
      <span class="spacer"></span>
      <span data-testid="agents-page-range">${rangeLabel(l, AGENTS_PAGE)}</span>
      <button class="btn btn-small" data-testid="agents-page-prev" ?disabled=${busy || !hasPrevious(l)} @click=${() => void c.agentsPage.previous()}>
        Previous
      </button>
      <button class="btn btn-small" data-testid="agents-page-next" ?disabled=${busy || !hasNext(l)} @click=${() => void c.agentsPage.next()}>
        Next
      </button>
      <button class="btn btn-small" data-testid="agents-page-close" @click=${() => c.agentsPage.hide()}>Close</button>
    </div>
    <table class="agents-table">
      <thead>
        <tr><th>Agent</th><th>State</th><th>Since</th><th>Source</th><th>Project management</th></tr>
      </thead>
      <tbody>
        ${l.page.agents.map((a) => row(c, a, now))}
      </tbody>
    </table>
  </section>`;
}
