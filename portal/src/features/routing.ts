// Deep links: the address bar follows the page (state/route.ts), and a URL
// (reload, Back, Forward, a link) brings the page to its place: agent, tab,
// project, and the file with the folders above it expanded.
import type { WorkspaceRef } from '../api/types';
import type { AgentsPort, FilesPort, ProjectsPort, RecentlyDeletedPort, RoutingPort, Shell, TreePort } from './ports';
import { GLOBAL, project, type AgentState } from '../state/appState';
import * as ed from '../state/editorState';
import { joinPath } from '../state/names';
import { formatRoute, parseRoute, placeOf, type Route } from '../state/route';
import type { AgentScope } from '../state/scope';
import { dirState, workspaceKey } from '../state/tree';

/** What the URL handling needs of the page (a narrow part of context.ts, ports.ts). */
export interface RoutingContext extends Pick<Shell, 'state' | 'update'> {
  readonly files: Pick<FilesPort, 'closeFile' | 'openFile' | 'confirmDiscard'>;
  readonly projects: Pick<ProjectsPort, 'select' | 'selectTab'>;
  readonly tree: Pick<TreePort, 'reloadDir'>;
  readonly agents: Pick<AgentsPort, 'select' | 'current'>;
  readonly recentlyDeleted: Pick<RecentlyDeletedPort, 'missingProject'>;
}

export class Routing implements RoutingPort {
  readonly #c: RoutingContext;

  constructor(c: RoutingContext) {
    this.#c = c;
  }

  /** Where the page is: what the URL says (see state/route.ts). */
  current(): Route | null {
    const scope = this.#c.state.scopes.current;
    if (this.#c.state.screen.kind !== 'app' || !scope) return null;
    return placeOf(scope.agentId, scope.state);
  }

  /** Puts the current place in the address bar: a new history entry, or (while routing) the same one. */
  syncUrl(replace = this.#c.state.routing > 0): void {
    const r = this.current();
    if (!r) return;
    const url = formatRoute(r);
    if (url === location.pathname) return;
    if (replace) history.replaceState(null, '', url);
    else history.pushState(null, '', url);
  }

  /** Back and Forward: go to the URL's place (asking first when unsaved text would be lost). */
  async onPopState(): Promise<void> {
    const s = this.#c.state;
    const scope = s.scopes.current;
    if (s.screen.kind !== 'app' || !scope) return;
    const r = parseRoute(location.pathname);
    const cur = this.current();
    if (cur && formatRoute(cur) === formatRoute(r)) return;
    const st = scope.state;
    if (ed.isDirty(st.file)) {
      if (!(await this.#c.files.confirmDiscard('Going to another page'))) {
        if (cur) history.pushState(null, '', formatRoute(cur)); // stay, and keep the entry that was left
        return;
      }
      this.#c.files.closeFile(st);
    }
    s.routing++;
    try {
      if (r.agent && r.agent !== scope.agentId && s.agentCache.has(r.agent)) this.#c.agents.select(r.agent);
      await this.apply(r);
      this.syncUrl(true);
    } finally {
      s.routing--;
    }
  }

  /** Brings the selected agent's view to r's tab, project and file. */
  async apply(r: Route): Promise<void> {
    const scope = this.#c.state.scopes.current;
    if (!scope || !this.#c.agents.current?.project_management_enabled) return;
    const st = scope.state;
    if (r.tab === 'global') {
      if (st.tab !== 'global') await this.#c.projects.selectTab('global');
    } else {
      if (st.tab !== 'projects') await this.#c.projects.selectTab('projects');
      if (r.project && st.selectedProject !== r.project) {
        await this.#c.projects.select(r.project);
        if (this.#missing(st, r.project)) {
          // A link to a project that is not there (deleted?): say so, offer Restore.
          st.selectedProject = null;
          this.#c.files.closeFile(st);
          this.#c.update();
          await this.#c.recentlyDeleted.missingProject(r.project);
          return;
        }
      }
      if (!r.project && st.selectedProject) {
        st.selectedProject = null;
        this.#c.files.closeFile(st);
      }
    }
    if (!scope.alive) return;
    const ws = r.tab === 'global' ? GLOBAL : r.project ? project(r.project) : null;
    if (ws && r.path) {
      if (!(st.file && st.file.path === r.path && st.file.workspaceKey === workspaceKey(ws))) await this.#openPath(scope, ws, r.path);
    } else if (st.file || st.fileError || st.fileLoading) {
      this.#c.files.closeFile(st);
    }
    this.#c.update();
  }

  /** True when the project name is not there: its listing found no project. */
  #missing(st: AgentState, name: string): boolean {
    const e = st.trees.get(workspaceKey(project(name)))?.rootError;
    return !!e && (e.reason === 'PROJECT_NOT_FOUND' || e.status === 404);
  }

  /** Opens a file by path: the folders above it are listed and expanded first, so the tree shows it. */
  async #openPath(scope: AgentScope<AgentState>, ws: WorkspaceRef, path: string): Promise<void> {
    const tree = scope.state.trees.get(workspaceKey(ws));
    if (!tree) return;
    let dir = '';
    for (const part of path.split('/').slice(0, -1)) {
      dir = joinPath(dir, part);
      const d = dirState(tree, dir);
      d.expanded = true;
      if (!d.listing.loaded && !d.loading) await this.#c.tree.reloadDir(scope, tree, dir);
      if (!scope.alive) return;
    }
    tree.focusKey = 'e:' + path;
    await this.#c.files.openFile(ws, path, true);
  }
}
