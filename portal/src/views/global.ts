// The Global tab's sidebar: skills/ and AGENTS.md (Create AGENTS.md, New
// skill, Refresh, Checkpoints) and their tree.
import { html, nothing, type TemplateResult } from 'lit-html';
import { isUnavailable } from '../api/errors';
import type { AppContext } from '../context';
import { GLOBAL, type AgentState } from '../state/appState';
import type { AgentScope } from '../state/scope';
import { workspaceKey } from '../state/tree';
import { treeHeadButtons, uploadMenu } from './tree';
import { unavailableView } from './unavailable';

export function globalSidebarView(c: AppContext, scope: AgentScope<AgentState>): TemplateResult {
  const tree = scope.state.trees.get(workspaceKey(GLOBAL));
  if (!tree) return html`<p class="muted">Loading…</p>`;
  const root = tree.dirs.get('')!;
  const rootError = tree.rootError;
  if (rootError && isUnavailable(rootError)) {
    return unavailableView(c.state.scopes.current?.agentId ?? '', () => void c.tree.reloadDir(scope, tree, ''), 'its Global files');
  }
  const hasAgentsMd = root.listing.items.some((e) => e.path === 'AGENTS.md');
  return html`<div class="sidebar-section files">
    <div class="section-head">
      <h2>Global</h2>
      <span class="head-actions">
        ${root.listing.loaded && !hasAgentsMd
          ? html`<button
              class="btn btn-small"
              data-testid="create-agents-md"
              @click=${() => void c.treeActions.create(scope, tree, '', 'AGENTS.md', 'ENTRY_TYPE_FILE')}
            >
              Create AGENTS.md
            </button>`
          : nothing}
        <button class="btn btn-small" data-testid="new-skill" title="A folder in skills/ with a SKILL.md" @click=${() => void c.treeActions.newSkill(scope, tree)}>
          New skill
        </button>
        ${treeHeadButtons(
          () => void c.tree.refresh(scope, tree),
          () => void c.checkpoints.openForTree(tree),
          'Snapshots of skills/ and AGENTS.md: compare and restore',
          (anchor) => uploadMenu((folder) => c.upload.pick(tree, '', folder), anchor),
        )}
      </span>
    </div>
    <p class="muted hint">Shared by all of this agent's projects: its skills and the global AGENTS.md instructions.</p>
    ${c.tree.view(scope, tree, 'Global files')}
    ${root.listing.loaded && !hasAgentsMd
      ? html`<p class="muted hint">There is no AGENTS.md yet. Create it to give the agent global instructions.</p>`
      : nothing}
  </div>`;
}
