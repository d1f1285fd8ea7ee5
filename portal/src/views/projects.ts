// The Projects tab's sidebar: the project list (New project, Refresh, Load
// more, Delete) and the selected project's file tree with its actions.
import { naturalSorted } from '../state/naturalSort';
import { html, nothing, type TemplateResult } from 'lit-html';
import { repeat } from 'lit-html/directives/repeat.js';
import { describeError, isUnavailable } from '../api/errors';
import type { AppContext } from '../context';
import { shownTree, type AgentState } from '../state/appState';
import { hasMore } from '../state/paging';
import type { AgentScope } from '../state/scope';
import { treeHeadButtons, uploadMenu } from './tree';
import { unavailableView } from './unavailable';
import { projectSizeView, usageBarView } from './usage';

export function projectsSidebarView(c: AppContext, scope: AgentScope<AgentState>): TemplateResult {
  const st = scope.state;
  const projects = c.projects;
  if (st.projectsError && isUnavailable(st.projectsError)) {
    return unavailableView(c.state.scopes.current?.agentId ?? '', () => void projects.load(scope), 'its projects');
  }
  const tree = shownTree(st);
  return html`
    <div class="sidebar-section projects">
      <div class="section-head">
        <h2>Projects</h2>
        <span class="head-actions">
          <button class="btn btn-small" data-testid="new-project" @click=${() => void projects.create()}>New project</button>
          <button
            class="btn btn-small"
            data-testid="refresh-projects"
            title="Reload the project list"
            ?disabled=${st.projectsLoading}
            @click=${() => void projects.load(scope)}
          >
            Refresh
          </button>
          <button
            class="btn btn-small"
            data-testid="recently-deleted"
            title="Deleted projects that their automatic checkpoints can bring back"
            @click=${() => void c.recentlyDeleted.open()}
          >
            Recently deleted
          </button>
        </span>
      </div>
      ${st.projectsError
        ? html`<div class="inline-error" role="alert">
            ${describeError(st.projectsError)} <button class="btn btn-small" @click=${() => void projects.load(scope)}>Retry</button>
          </div>`
        : nothing}
      ${usageBarView(st)}
      <ul class="project-list" data-testid="project-list" aria-label="Projects">
        ${repeat(naturalSorted(st.projects.items, (p) => p.name ?? ''), (p) => p.name ?? '', (p) => {
          const name = p.name ?? '';
          const selected = st.selectedProject === name;
          return html`<li class="project-row ${selected ? 'selected' : ''}" data-project=${name}>
            <button class="project-name" data-key="p:${name}" aria-current=${selected ? 'true' : 'false'} @click=${() => void projects.select(name)}>
              <span class="name">${name}</span>
              ${projectSizeView(st, name)}
              <span class="badge ${p.git_initialized ? 'git' : 'nogit'}" title=${p.git_initialized ? 'Git repository' : 'Not a Git repository'}
                >${p.git_initialized ? 'Git' : 'No Git'}</span
              >
            </button>
            <button class="btn btn-small btn-ghost danger" aria-label="Delete project ${name}" title="Delete project" @click=${() => void projects.delete(name)}>
              Delete
            </button>
          </li>`;
        })}
        ${hasMore(st.projects)
          ? html`<li class="project-more">
              <button
                class="btn btn-small load-more"
                data-testid="load-more-projects"
                ?disabled=${st.projectsLoading}
                @click=${() => void projects.load(scope, true)}
              >
                ${st.projectsLoading ? 'Loading…' : 'Load more projects'}
              </button>
            </li>`
          : nothing}
      </ul>
      ${st.projectsLoading && !hasMore(st.projects) ? html`<p class="muted">Loading…</p>` : nothing}
      ${!st.projectsLoading && st.projects.loaded && st.projects.items.length === 0
        ? html`<p class="muted">No projects yet. Create one to get started.</p>`
        : nothing}
    </div>
    ${tree && st.selectedProject
      ? html`<div class="sidebar-section files">
          <div class="section-head">
            <h2 title=${st.selectedProject}>Files in ${st.selectedProject}</h2>
            <span class="head-actions">
              <button class="btn btn-small" data-testid="root-new-file" @click=${() => void c.treeActions.newEntry(tree, '', 'ENTRY_TYPE_FILE')}>New file</button>
              <button class="btn btn-small" data-testid="root-new-folder" @click=${() => void c.treeActions.newEntry(tree, '', 'ENTRY_TYPE_DIRECTORY')}>
                New folder
              </button>
              ${treeHeadButtons(
                () => void c.tree.refresh(scope, tree),
                () => void c.checkpoints.openForTree(tree),
                'Snapshots of this project: compare and restore',
                (anchor) => uploadMenu((folder) => c.upload.pick(tree, '', folder), anchor),
              )}
            </span>
          </div>
          ${c.tree.view(scope, tree, `Files of project ${st.selectedProject}`)}
        </div>`
      : html`<p class="muted hint">Select a project to browse its files.</p>`}
  `;
}
