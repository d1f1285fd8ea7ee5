// The selected agent's workspace: the Projects/Global tabs, the live-changes
// status, the sidebar (views/projects.ts or views/global.ts) and the editor
// pane (features/editor.ts over views/editor.ts).
import { html, type TemplateResult } from 'lit-html';
import type { AppContext } from '../context';
import type { AgentState, Tab } from '../state/appState';
import type { AgentScope } from '../state/scope';
import { globalSidebarView } from './global';
import { projectsSidebarView } from './projects';

const TABS: [Tab, string][] = [
  ['projects', 'Projects'],
  ['global', 'Global'],
];

export function workspaceView(c: AppContext, scope: AgentScope<AgentState>): TemplateResult {
  const st = scope.state;
  return html`
    <div class="tabs" role="tablist" aria-label="Workspace">
      ${TABS.map(
        ([t, label]) => html`<button
          role="tab"
          id="tab-${t}"
          data-testid="tab-${t}"
          aria-selected=${st.tab === t ? 'true' : 'false'}
          aria-controls="panel-files"
          tabindex=${st.tab === t ? 0 : -1}
          @click=${() => void c.projects.selectTab(t)}
          @keydown=${(e: KeyboardEvent) => {
            if (e.key === 'ArrowRight' || e.key === 'ArrowLeft') {
              e.preventDefault();
              const next = t === 'projects' ? 'global' : 'projects';
              void c.projects.selectTab(next).then(() => c.root.querySelector<HTMLElement>(`#tab-${next}`)?.focus());
            }
          }}
        >
          ${label}
        </button>`,
      )}
      <span class="tabs-actions">
        <button type="button" class="btn" data-testid="quick-open-button" title="Go to file (Ctrl+P)" @click=${() => void c.search.quickOpen()}>Go to file</button>
        <button type="button" class="btn" data-testid="search-button" title="Search in files (Ctrl+Shift+F)" @click=${() => void c.search.contentSearch()}>Search</button>
      </span>
    </div>
    ${c.live.statusView()}
    <main class="layout" id="panel-files" role="tabpanel" aria-labelledby="tab-${st.tab}">
      <section class="sidebar" aria-label=${st.tab === 'projects' ? 'Projects and files' : 'Global files'}>
        ${st.tab === 'projects' ? projectsSidebarView(c, scope) : globalSidebarView(c, scope)}
      </section>
      <section class="editor-pane" aria-label="File">${c.live.fileBar(st)}${c.files.view(st)}</section>
    </main>
    ${c.upload.view()}
  `;
}
