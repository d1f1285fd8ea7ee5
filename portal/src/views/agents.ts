// The signed-in page: the top bar (agent selector, operator, Sign out), the
// message strip, and the selected agent's workspace (views/workspace.ts), or
// why there is none (the agent list failed, no agents, no sidecar).
import { html, nothing, type TemplateResult } from 'lit-html';
import { describeGatewayError } from '../api/errors';
import type { AppContext } from '../context';
import { moreLabel } from '../state/agentList';
import { agentListView } from './agentList';
import { featureBannersView } from './features';
import { noticeView } from './notice';
import { workspaceView } from './workspace';

export function agentsPageView(c: AppContext): TemplateResult {
  const s = c.state;
  const scope = s.scopes.current;
  const st = scope?.state;
  const agent = c.agents.current;
  return html`
    <header class="topbar">
      <h1 data-testid="product-name">Agent Workspace Files</h1>
      <input
        type="search"
        class="agent-search"
        data-testid="agent-search"
        aria-label="Search agents"
        placeholder="Search agents"
        .value=${s.picker.query}
        @input=${(e: Event) => c.agents.search((e.target as HTMLInputElement).value)}
      />
      <label class="agent-select"
        ><span>Agent</span>
        <select
          data-testid="agent-select"
          aria-label="Agent"
          ?disabled=${s.agents.length === 0 && !agent}
          @change=${(e: Event) => void c.agents.change(e.target as HTMLSelectElement)}
        >
          ${(agent && !s.agents.some((a) => a.agent_id === agent.agent_id) ? [agent, ...s.agents] : s.agents).map(
            (a) =>
              html`<option value=${a.agent_id ?? ''} ?selected=${a.agent_id === scope?.agentId}>
                ${a.agent_id}${a.is_default ? ' (default)' : ''}${a.project_management_enabled ? '' : ' — no project management'}
              </option>`,
          )}
        </select></label
      >
      ${moreLabel(s.picker) ? html`<span class="agent-more" data-testid="agent-more">${moreLabel(s.picker)}</span>` : nothing}
      <button
        class="btn btn-small"
        data-testid="nav-agents"
        aria-pressed=${s.agentsPage ? 'true' : 'false'}
        @click=${() => (s.agentsPage ? c.agentsPage.hide() : void c.agentsPage.show())}
      >
        All agents
      </button>
      <span class="spacer"></span>
      <span class="operator" data-testid="operator">${s.session?.operator}</span>
      ${s.session?.sso ? html`<span class="sso-badge" data-testid="sso" title="Signed in through your organisation's single sign-on">via SSO</span>` : nothing}
      ${s.session?.csrf_token || s.session?.sign_out_url
        ? html`<button class="btn btn-small" data-testid="logout" @click=${() => void c.session.logout()}>Sign out</button>`
        : nothing /* a trusted proxy with no sign-out of its own: nothing to sign out of here */}
    </header>
    ${noticeView(s.notice, () => {
      s.notice = null;
      c.update();
    })}
    ${s.agentsPage
      ? agentListView(c, s.agentsPage)
      : s.agentsError
      ? html`<div class="panel-message" role="alert" data-testid="agents-error">
          <p>The agent list could not be loaded. ${describeGatewayError(s.agentsError)}</p>
          <button class="btn btn-primary" data-testid="agents-retry" @click=${() => void c.agents.load()}>Retry</button>
        </div>`
      : !scope || !st || !agent
        ? html`<div class="panel-message"><p>${s.agents.length ? 'Select an agent.' : 'No agents are configured on the gateway.'}</p></div>`
        : !agent.project_management_enabled
          ? html`<div class="panel-message" data-testid="no-project-management">
              <p>Project management is not enabled for <strong>${agent.agent_id}</strong>: it has no file sidecar configured.</p>
            </div>`
          : html`${featureBannersView(s.featureNotices.get(agent.agent_id ?? ''))}${workspaceView(c, scope)}`}
  `;
}
