// The Projects and Global tabs and the project list: paging ("Load more"),
// selecting a project (a fresh tree each time), creating and deleting
// projects. The sidebars are views/projects.ts and views/global.ts.
import { html } from 'lit-html';
import { asApiError, isUnauthenticated } from '../api/errors';
import type { Api } from '../api/client';
import type { Project } from '../api/types';
import type { AgentsPort, CheckpointsPort, FilesPort, ProjectsPort, Shell, TreePort } from './ports';
import { GLOBAL, project, type AgentState, type Tab, type UsageState } from '../state/appState';
import * as ed from '../state/editorState';
import { projectNameProblem } from '../state/names';
import { hasMore, loadFirst, loadMore, type Page } from '../state/paging';
import { isStale, type AgentScope } from '../state/scope';
import { newTree, workspaceKey } from '../state/tree';
import { confirmDialog, promptDialog } from '../ui/dialogs';
import { deleteWithOverride } from '../views/deleteOverride';

/** What the project list needs of the page (a narrow part of context.ts, ports.ts). */
export interface ProjectsContext extends Pick<Shell, 'state' | 'update' | 'fail' | 'notify' | 'api'> {
  readonly files: Pick<FilesPort, 'confirmDiscard' | 'closeFile'>;
  readonly tree: Pick<TreePort, 'reloadDir'>;
  readonly checkpoints: Pick<CheckpointsPort, 'open'>;
  readonly agents: Pick<AgentsPort, 'current'>;
}

export class Projects implements ProjectsPort {
  readonly #c: ProjectsContext;

  constructor(c: ProjectsContext) {
    this.#c = c;
  }

  #pages(scope: AgentScope<AgentState>) {
    return async (cursor: string): Promise<Page<Project>> => {
      const r = await scope.guard(this.#c.api.listProjects(scope.agentId, cursor));
      return { items: r.projects ?? [], nextCursor: r.next_cursor ?? '' };
    };
  }

  /** The project list from its first page, or (more) its next page. */
  async load(scope: AgentScope<AgentState>, more = false): Promise<void> {
    const st = scope.state;
    // "Load more" used from the keyboard: focus moves to the first project it added.
    const focusNew = more && !!document.activeElement?.closest('[data-testid="load-more-projects"]');
    const before = st.projects.items.length;
    st.projectsLoading = true;
    st.projectsError = null;
    this.#c.update();
    try {
      st.projects = more ? (await loadMore(st.projects, this.#pages(scope), (p) => p.name ?? '')).listing : await loadFirst(this.#pages(scope));
      const added = st.projects.items[before];
      if (focusNew && added) this.#c.state.focusAfterRender = 'p:' + (added.name ?? '');
      if (st.selectedProject && !st.projects.items.some((p) => p.name === st.selectedProject) && !hasMore(st.projects)) {
        st.selectedProject = null;
      }
    } catch (err) {
      if (isStale(err)) return;
      if (isUnauthenticated(err)) return this.#c.fail(err);
      st.projectsError = asApiError(err);
    } finally {
      if (scope.alive) {
        st.projectsLoading = false;
        this.#c.update();
      }
    }
    if (scope.alive && !st.projectsError) void loadUsage(this.#c.api, scope, () => this.#c.update());
  }

  async refreshUsage(scope: AgentScope<AgentState>): Promise<void> {
    if (scope.alive && !scope.state.projectsError) await loadUsage(this.#c.api, scope, () => this.#c.update());
  }

  async select(name: string): Promise<void> {
    const scope = this.#c.state.scopes.current;
    if (!scope || scope.state.selectedProject === name) return;
    if (!(await this.#c.files.confirmDiscard('Switching the project'))) return;
    if (!scope.alive) return;
    const st = scope.state;
    st.selectedProject = name;
    this.#c.files.closeFile(st);
    const key = workspaceKey(project(name));
    // A fresh tree each time the project is selected: no stale listings.
    const tree = newTree(project(name));
    st.trees.set(key, tree);
    this.#c.update();
    await this.#c.tree.reloadDir(scope, tree, '');
  }

  async create(): Promise<void> {
    const scope = this.#c.state.scopes.current;
    if (!scope) return;
    const name = await promptDialog({
      title: 'Create project',
      label: 'Project name',
      help: 'A new folder in this agent\u2019s projects, initialised as a Git repository (branch main).',
      confirmLabel: 'Create project',
      validate: projectNameProblem,
      testid: 'create-project-dialog',
    });
    if (name === null || !scope.alive) return;
    try {
      await scope.guard(this.#c.api.createProject(scope.agentId, name));
      this.#c.notify('info', `Project ${name} was created.`);
      await this.load(scope);
      if (!ed.isDirty(scope.state.file)) await this.select(name);
    } catch (err) {
      this.#c.fail(err, `Project ${name} was not created.`);
    }
  }

  async delete(name: string): Promise<void> {
    const scope = this.#c.state.scopes.current;
    if (!scope) return;
    if (!(await this.#c.files.confirmDiscard('Deleting a project'))) return;
    const ok = await confirmDialog({
      title: `Delete project ${name}?`,
      body: [
        html`This <strong>permanently deletes</strong> the project <code>${name}</code> and everything in it, including its Git history
          and files not under version control.`,
        html`<strong>The deletion is permanent.</strong> With automatic checkpoints on (the default), a checkpoint of the project
          (without its Git history and denied folders) is taken first: while it is kept, Checkpoints can bring the files back.`,
      ],
      requireText: { label: `Type the project name (${name}) to confirm`, value: name },
      confirmLabel: 'Delete project permanently',
      danger: true,
      testid: 'delete-project-dialog',
    });
    if (!ok || !scope.alive) return;
    try {
      await deleteWithOverride(`the project ${name}`, (skip) => scope.guard(this.#c.api.deleteProject(scope.agentId, name, name, skip)));
      const st = scope.state;
      st.trees.delete(workspaceKey(project(name)));
      if (st.selectedProject === name) st.selectedProject = null;
      this.#c.files.closeFile(st);
      this.#c.notify('info', `Project ${name} was deleted.`, {
        label: 'Checkpoints…',
        testid: 'deleted-project-checkpoints',
        run: () =>
          void this.#c.checkpoints.open(project(name), () => {
            const cur = this.#c.state.scopes.current;
            return cur && this.load(cur);
          }),
      });
      await this.load(scope);
    } catch (err) {
      this.#c.fail(err, `Project ${name} was not deleted.`);
    }
  }

  async selectTab(tab: Tab): Promise<void> {
    const scope = this.#c.state.scopes.current;
    if (!scope || scope.state.tab === tab) return;
    if (!(await this.#c.files.confirmDiscard('Switching tabs'))) return;
    if (!scope.alive) return;
    const st = scope.state;
    st.tab = tab;
    this.#c.files.closeFile(st);
    if (tab === 'global') {
      const tree = newTree(GLOBAL);
      st.trees.set(workspaceKey(GLOBAL), tree);
      this.#c.update();
      await this.#c.tree.reloadDir(scope, tree, '');
    } else {
      this.#c.update();
      if (!st.projects.loaded && this.#c.agents.current?.project_management_enabled) await this.load(scope);
    }
  }
}

// Usage (issue #25): the sizes of the listed projects and the projects
// volume's size and free space, from GetUsage (the sidecar's cache, kept
// fresh by its change feed). A failure leaves the sizes out.
/** The usage of the projects loaded in st (at most 100 per call), then a render. */
async function loadUsage(api: Pick<Api, 'getUsage'>, scope: AgentScope<AgentState>, update: () => void): Promise<void> {
  const names = scope.state.projects.items.map((p) => p.name ?? '').filter((n) => n !== '');
  const out: UsageState = { projects: new Map(), volume: null };
  try {
    for (let i = 0; i === 0 || i < names.length; i += 100) {
      const r = await scope.guard(api.getUsage(scope.agentId, names.slice(i, i + 100)));
      for (const w of r.workspaces ?? []) {
        const name = w.workspace?.project_name ?? '';
        if (!w.error_reason && w.bytes !== undefined && w.files !== undefined) {
          out.projects.set(name, { bytes: Number(w.bytes), files: Number(w.files) });
        }
      }
      const v = r.projects_volume;
      if (v?.known && v.size_bytes !== undefined && v.free_bytes !== undefined) {
        out.volume = { size: Number(v.size_bytes), free: Number(v.free_bytes) };
      }
    }
  } catch {
    // Sizes are an aid: the list stands without them.
  }
  if (!scope.alive) return;
  scope.state.usage = out;
  update();
}
