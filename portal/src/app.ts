// The Agents page's controller: session gate, agent selector, Projects/Global
// tabs, tree actions, the editor's save/conflict/draft flow and deep links.
// The one state is in state/appState.ts (pure rules beside it in state/, unit
// tested); the screens and panes are rendered by src/views/ (login, notice,
// tree, editor, unavailable) and the dialogs by src/ui/dialogs.ts.
import { html, nothing, render, type TemplateResult } from 'lit-html';
import { repeat } from 'lit-html/directives/repeat.js';
import { createApi, type Api } from './api/client';
import { ApiError, asApiError, describeError, describeGatewayError, isConflict, isUnauthenticated, isUnavailable } from './api/errors';
import { currentSession, login, logout, type SessionInfo } from './api/session';
import type { Agent, Entry, EntryType, Project, WorkspaceRef } from './api/types';
import * as ed from './state/editorState';
import { languageForPath } from './state/language';
import { baseName, entryNameProblem, isWithin, joinPath, normaliseFolderPath, parentOf, projectNameProblem } from './state/names';
import { hasMore, loadFirst, loadMore, type Page } from './state/paging';
import { isStale, ScopeManager, type AgentScope } from './state/scope';
import { dirState, isDir, knownDirectories, listingsToReload, newTree, patchEntry, visibleRows, workspaceKey, type Row, type TreeState } from './state/tree';
import { initialAgent } from './state/agents';
import { LazyEditor } from './ui/lazyEditor';
import { confirmDialog, conflictDialog, copyText, promptDialog, signInDialog } from './ui/dialogs';
import { browserStorage, Drafts } from './state/drafts';
import { restoreLineEndings } from './state/lineEndings';
import { formatRoute, parseRoute, type Route } from './state/route';
import { closeMenu, openMenu, type MenuItem } from './ui/menu';
import { freshAgentState, GLOBAL, project, type AgentState, type Notice, type Screen, type Tab } from './state/appState';
import { loadingView, loginView, noAccessView, startErrorView } from './views/login';
import { noticeView } from './views/notice';
import { unavailableView } from './views/unavailable';
import { editorView } from './views/editor';
import { treeView } from './views/tree';
import { createCheckpointApi, type CheckpointApi } from './api/checkpoints';
import { openCheckpoints } from './views/checkpoints';
import { deleteWithOverride } from './views/deleteOverride';
import { LiveController } from './live';

/** SKILL.md of a new skill: the front matter Codex reads, and a place for the instructions. */
export function skillTemplate(name: string): string {
  return `---\nname: ${name}\ndescription: What this skill does and when the agent should use it.\n---\n\n# ${name}\n\nThe steps the agent follows when this skill applies.\n`;
}
export class App {
  readonly #root: HTMLElement;
  #screen: Screen = { kind: 'loading' };
  #session: SessionInfo | null = null;
  #agents: Agent[] = [];
  #agentsError: ApiError | null = null;
  readonly #scopes = new ScopeManager<AgentState>(freshAgentState);
  #notice: Notice | null = null;
  #noticeSerial = 0;
  readonly #api: Api;
  readonly #ckpt: CheckpointApi;
  readonly #editor: LazyEditor;
  #scheduled = false;
  #focusAfterRender: string | null = null;
  readonly #drafts = new Drafts(browserStorage());
  #draftTimer: ReturnType<typeof setTimeout> | null = null;
  /** The text the editor was last loaded with: the separators restored on every edit come from it. */
  #editorBase = '';
  /** An open sign-in-again dialog, shared by every request that found the session gone. */
  #reauth: Promise<boolean> | null = null;
  /** >0 while the page is being brought to a URL's place: the URL is replaced, not pushed. */
  #routing = 0;
  /** Live changes: the watch stream of what is on screen (live.ts). */
  readonly #live: LiveController;

  constructor(root: HTMLElement) {
    this.#root = root;
    this.#api = createApi({ csrf: () => this.#session?.csrf_token ?? '' });
    this.#ckpt = createCheckpointApi({ csrf: () => this.#session?.csrf_token ?? '' });
    this.#editor = new LazyEditor(
      (text) => this.#onEdit(text),
      () => void this.save(),
    );
    this.#live = new LiveController({
      scope: () => this.#scope,
      tree: (st) => this.#currentTree(st),
      enabled: () => this.#screen.kind === 'app' && !!this.#agent?.project_management_enabled,
      reloadDir: (scope, tree, dir) => this.#reloadDir(scope, tree, dir),
      getFile: (scope, ws, path) => scope.guard(this.#api.getFile(scope.agentId, ws, path)),
      showLoaded: (scope, r) => {
        const cur = scope.state.file;
        if (!cur) return;
        scope.state.file = ed.reloaded(cur, r);
        this.#loadEditor(scope.state.file.text, languageForPath(cur.path));
        const tree = scope.state.trees.get(cur.workspaceKey);
        if (tree && r.entry) patchEntry(tree, r.entry);
      },
      reloadServerVersion: () => this.#reloadServerVersion(),
      notify: (kind, text) => this.notify(kind, text),
      update: () => this.update(),
    });
    window.addEventListener('pagehide', () => this.#flushDraft());
    window.addEventListener('popstate', () => void this.#onPopState());
    window.addEventListener('beforeunload', (e) => {
      this.#flushDraft();
      if (ed.isDirty(this.#scope?.state.file)) {
        e.preventDefault();
        e.returnValue = '';
      }
    });
    window.addEventListener('keydown', (e) => {
      if ((e.ctrlKey || e.metaKey) && !e.altKey && e.key.toLowerCase() === 's' && this.#scope?.state.file) {
        e.preventDefault();
        void this.save();
      }
    });
  }

  get #scope(): AgentScope<AgentState> | null {
    return this.#scopes.current;
  }

  // ---- lifecycle -------------------------------------------------------

  async start(): Promise<void> {
    this.#screen = { kind: 'loading' };
    this.update();
    try {
      const s = await currentSession();
      await this.#enter(s);
    } catch (err) {
      this.#screen = { kind: 'error', message: describeError(err) };
      this.update();
    }
  }

  async #enter(s: Awaited<ReturnType<typeof currentSession>>, loginMessage = ''): Promise<void> {
    if (s.kind === 'signed-out') {
      this.#session = null;
      this.#scopes.clear();
      this.#screen = { kind: 'login', message: loginMessage, busy: false };
      this.update();
      return;
    }
    if (s.kind === 'no-access') {
      this.#session = null;
      this.#scopes.clear();
      this.#screen = { kind: 'no-access', operator: s.operator };
      this.update();
      return;
    }
    this.#session = s.session;
    this.#screen = { kind: 'app' };
    await this.#loadAgents();
  }

  async #login(token: string): Promise<void> {
    if (this.#screen.kind !== 'login') return;
    this.#screen = { kind: 'login', message: '', busy: true };
    this.update();
    try {
      const s = await login(token);
      await this.#enter(s, s.kind === 'signed-out' ? 'That token was not accepted. Check it and try again.' : '');
    } catch (err) {
      this.#screen = { kind: 'login', message: describeError(err), busy: false };
      this.update();
    }
  }

  async #logout(): Promise<void> {
    if (!(await this.#confirmDiscard('Signing out'))) return;
    const csrf = this.#session?.csrf_token ?? '';
    try {
      await logout(csrf);
    } catch {
      // The cookie may already be gone; the login form is what matters.
    }
    this.#session = null;
    this.#scopes.clear();
    this.#agents = [];
    this.#screen = { kind: 'login', message: 'You are signed out.', busy: false };
    this.update();
  }

  /**
   * Central error handling. A lost session with unsaved text on the page
   * asks to sign in again in place (nothing on the page is dropped);
   * without unsaved text it goes back to the login form.
   */
  #fail(err: unknown, prefix = ''): void {
    if (isStale(err)) return;
    if (isUnauthenticated(err)) {
      if (ed.isDirty(this.#scope?.state.file)) void this.#reauthenticate();
      else this.#sessionEnded();
      return;
    }
    this.notify('error', (prefix ? prefix + ' ' : '') + describeError(err));
  }

  #sessionEnded(): void {
    this.#flushDraft(); // unsaved text stays in the browser's storage for the next sign-in
    this.#session = null;
    this.#scopes.clear();
    this.#screen = { kind: 'login', message: 'Your session has ended. Sign in again.', busy: false };
    this.update();
  }

  /** Signs in again without leaving the page; true once signed in. Declined: the login form (drafts stay stored). */
  #reauthenticate(): Promise<boolean> {
    if (!this.#reauth) {
      this.#flushDraft();
      this.#reauth = signInDialog({
        message:
          'Your session has ended. Sign in again to carry on: your unsaved changes are kept, and a save that was refused is tried again once you are signed in.',
        submit: async (token) => {
          try {
            const s = await login(token);
            if (s.kind === 'signed-in') {
              this.#session = s.session;
              return null;
            }
            return s.kind === 'no-access' ? 'That token has no admin access.' : 'That token was not accepted. Check it and try again.';
          } catch (err) {
            return describeError(err);
          }
        },
      }).then((ok) => {
        this.#reauth = null;
        if (ok) this.update();
        else this.#sessionEnded();
        return ok;
      });
    }
    return this.#reauth;
  }

  notify(kind: Notice['kind'], text: string, action?: Notice['action']): void {
    const id = ++this.#noticeSerial;
    this.#notice = { kind, text, id, ...(action ? { action } : {}) };
    if (kind === 'info') {
      setTimeout(
        () => {
          if (this.#notice?.id === id) {
            this.#notice = null;
            this.update();
          }
        },
        action ? 12000 : 6000,
      );
    }
    this.update();
  }

  /** A mutation succeeded: an error message about an earlier attempt is out of date. */
  #succeeded(): void {
    if (this.#notice?.kind === 'error') {
      this.#notice = null;
      this.update();
    }
  }

  /** Reloads the listings whose revisions a mutation in dirs changed (see listingsToReload). */
  async #afterMutation(scope: AgentScope<AgentState>, tree: TreeState, dirs: string[]): Promise<void> {
    await Promise.all(listingsToReload(tree, dirs).map((d) => this.#reloadDir(scope, tree, d)));
  }

  // ---- agents ----------------------------------------------------------

  async #loadAgents(): Promise<void> {
    this.#agentsError = null;
    this.update();
    try {
      const r = await this.#api.listAgents();
      this.#agents = r.agents ?? [];
      void this.#editor.preload().catch(() => {}); // an admin: fetch CodeMirror while the projects load
      // The URL's agent when it is one of them (a deep link, a reload), else the default.
      const wanted = parseRoute(location.pathname);
      const first = this.#agents.find((a) => a.agent_id === wanted.agent) ?? initialAgent(this.#agents);
      if (first?.agent_id) {
        this.#routing++;
        try {
          this.#selectAgent(first.agent_id);
          if (first.agent_id === wanted.agent) await this.#applyRoute(wanted);
          this.#syncUrl(true);
        } finally {
          this.#routing--;
        }
      } else this.update();
    } catch (err) {
      if (isUnauthenticated(err)) return this.#fail(err);
      if (asApiError(err).status === 403) {
        this.#screen = { kind: 'no-access', operator: this.#session?.operator ?? '' };
        this.update();
        return;
      }
      this.#agentsError = asApiError(err);
      this.update();
    }
  }

  get #agent(): Agent | undefined {
    const id = this.#scope?.agentId;
    return this.#agents.find((a) => a.agent_id === id);
  }

  #selectAgent(agentId: string): void {
    closeMenu();
    this.#notice = null;
    const scope = this.#scopes.switchTo(agentId);
    this.#loadEditor('', 'plain'); // nothing of the previous agent stays in the editor
    const agent = this.#agents.find((a) => a.agent_id === agentId);
    this.update();
    if (agent?.project_management_enabled) void this.#loadProjects(scope);
  }

  async #changeAgent(select: HTMLSelectElement): Promise<void> {
    const next = select.value;
    const current = this.#scope?.agentId ?? '';
    if (next === current) return;
    if (!(await this.#confirmDiscard('Switching the agent'))) {
      select.value = current;
      return;
    }
    this.#selectAgent(next);
  }

  // ---- deep links --------------------------------------------------------

  /** Where the page is: what the URL says (see state/route.ts). */
  #currentRoute(): Route | null {
    const scope = this.#scope;
    if (this.#screen.kind !== 'app' || !scope) return null;
    const st = scope.state;
    const path = st.file?.path ?? st.fileLoading ?? st.fileError?.path ?? '';
    if (st.tab === 'global') return { agent: scope.agentId, tab: 'global', project: '', path };
    return { agent: scope.agentId, tab: 'projects', project: st.selectedProject ?? '', path: st.selectedProject ? path : '' };
  }

  /** Puts the current place in the address bar: a new history entry, or (while routing) the same one. */
  #syncUrl(replace = this.#routing > 0): void {
    const r = this.#currentRoute();
    if (!r) return;
    const url = formatRoute(r);
    if (url === location.pathname) return;
    if (replace) history.replaceState(null, '', url);
    else history.pushState(null, '', url);
  }

  /** Back and Forward: go to the URL's place (asking first when unsaved text would be lost). */
  async #onPopState(): Promise<void> {
    const scope = this.#scope;
    if (this.#screen.kind !== 'app' || !scope) return;
    const r = parseRoute(location.pathname);
    const cur = this.#currentRoute();
    if (cur && formatRoute(cur) === formatRoute(r)) return;
    const st = scope.state;
    if (ed.isDirty(st.file)) {
      if (!(await this.#confirmDiscard('Going to another page'))) {
        if (cur) history.pushState(null, '', formatRoute(cur)); // stay, and keep the entry that was left
        return;
      }
      this.#closeFile(st);
    }
    this.#routing++;
    try {
      if (r.agent && r.agent !== scope.agentId && this.#agents.some((a) => a.agent_id === r.agent)) this.#selectAgent(r.agent);
      await this.#applyRoute(r);
      this.#syncUrl(true);
    } finally {
      this.#routing--;
    }
  }

  /** Brings the selected agent's view to r's tab, project and file. */
  async #applyRoute(r: Route): Promise<void> {
    const scope = this.#scope;
    if (!scope || !this.#agent?.project_management_enabled) return;
    const st = scope.state;
    if (r.tab === 'global') {
      if (st.tab !== 'global') await this.#selectTab('global');
    } else {
      if (st.tab !== 'projects') await this.#selectTab('projects');
      if (r.project && st.selectedProject !== r.project) await this.#selectProject(r.project);
      if (!r.project && st.selectedProject) {
        st.selectedProject = null;
        this.#closeFile(st);
      }
    }
    if (!scope.alive) return;
    const ws = r.tab === 'global' ? GLOBAL : r.project ? project(r.project) : null;
    if (ws && r.path) {
      if (!(st.file && st.file.path === r.path && st.file.workspaceKey === workspaceKey(ws))) await this.#openPath(scope, ws, r.path);
    } else if (st.file || st.fileError || st.fileLoading) {
      this.#closeFile(st);
    }
    this.update();
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
      if (!d.listing.loaded && !d.loading) await this.#reloadDir(scope, tree, dir);
      if (!scope.alive) return;
    }
    tree.focusKey = 'e:' + path;
    await this.#openFile(ws, path, true);
  }

  // ---- projects --------------------------------------------------------

  #projectPages(scope: AgentScope<AgentState>) {
    return async (cursor: string): Promise<Page<Project>> => {
      const r = await scope.guard(this.#api.listProjects(scope.agentId, cursor));
      return { items: r.projects ?? [], nextCursor: r.next_cursor ?? '' };
    };
  }

  async #loadProjects(scope: AgentScope<AgentState>, more = false): Promise<void> {
    const st = scope.state;
    // "Load more" used from the keyboard: focus moves to the first project it added.
    const focusNew = more && !!document.activeElement?.closest('[data-testid="load-more-projects"]');
    const before = st.projects.items.length;
    st.projectsLoading = true;
    st.projectsError = null;
    this.update();
    try {
      st.projects = more
        ? (await loadMore(st.projects, this.#projectPages(scope), (p) => p.name ?? '')).listing
        : await loadFirst(this.#projectPages(scope));
      const added = st.projects.items[before];
      if (focusNew && added) this.#focusAfterRender = 'p:' + (added.name ?? '');
      if (st.selectedProject && !st.projects.items.some((p) => p.name === st.selectedProject) && !hasMore(st.projects)) {
        st.selectedProject = null;
      }
    } catch (err) {
      if (isStale(err)) return;
      if (isUnauthenticated(err)) return this.#fail(err);
      st.projectsError = asApiError(err);
    } finally {
      if (scope.alive) {
        st.projectsLoading = false;
        this.update();
      }
    }
  }

  async #selectProject(name: string): Promise<void> {
    const scope = this.#scope;
    if (!scope || scope.state.selectedProject === name) return;
    if (!(await this.#confirmDiscard('Switching the project'))) return;
    if (!scope.alive) return;
    const st = scope.state;
    st.selectedProject = name;
    this.#closeFile(st);
    const key = workspaceKey(project(name));
    // A fresh tree each time the project is selected: no stale listings.
    const tree = newTree(project(name));
    st.trees.set(key, tree);
    this.update();
    await this.#reloadDir(scope, tree, '');
  }

  async #createProject(): Promise<void> {
    const scope = this.#scope;
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
      await scope.guard(this.#api.createProject(scope.agentId, name));
      this.notify('info', `Project ${name} was created.`);
      await this.#loadProjects(scope);
      if (!ed.isDirty(scope.state.file)) await this.#selectProject(name);
    } catch (err) {
      this.#fail(err, `Project ${name} was not created.`);
    }
  }

  async #deleteProject(name: string): Promise<void> {
    const scope = this.#scope;
    if (!scope) return;
    if (!(await this.#confirmDiscard('Deleting a project'))) return;
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
      await deleteWithOverride(`the project ${name}`, (skip) => scope.guard(this.#api.deleteProject(scope.agentId, name, name, skip)));
      const st = scope.state;
      st.trees.delete(workspaceKey(project(name)));
      if (st.selectedProject === name) st.selectedProject = null;
      this.#closeFile(st);
      this.notify('info', `Project ${name} was deleted.`, {
        label: 'Checkpoints…',
        testid: 'deleted-project-checkpoints',
        run: () => void this.#openCheckpoints(project(name), () => this.#scope && this.#loadProjects(this.#scope)),
      });
      await this.#loadProjects(scope);
    } catch (err) {
      this.#fail(err, `Project ${name} was not deleted.`);
    }
  }

  // ---- tabs ------------------------------------------------------------

  async #selectTab(tab: Tab): Promise<void> {
    const scope = this.#scope;
    if (!scope || scope.state.tab === tab) return;
    if (!(await this.#confirmDiscard('Switching tabs'))) return;
    if (!scope.alive) return;
    const st = scope.state;
    st.tab = tab;
    this.#closeFile(st);
    if (tab === 'global') {
      const tree = newTree(GLOBAL);
      st.trees.set(workspaceKey(GLOBAL), tree);
      this.update();
      await this.#reloadDir(scope, tree, '');
    } else {
      this.update();
      if (!st.projects.loaded && this.#agent?.project_management_enabled) await this.#loadProjects(scope);
    }
  }

  // ---- tree ------------------------------------------------------------

  #entryPages(scope: AgentScope<AgentState>, ws: WorkspaceRef, dir: string) {
    return async (cursor: string): Promise<Page<Entry>> => {
      const r = await scope.guard(this.#api.listEntries(scope.agentId, ws, dir, cursor));
      return { items: r.entries ?? [], nextCursor: r.next_cursor ?? '' };
    };
  }

  #currentTree(st: AgentState): TreeState | undefined {
    if (st.tab === 'global') return st.trees.get(workspaceKey(GLOBAL));
    return st.selectedProject ? st.trees.get(workspaceKey(project(st.selectedProject))) : undefined;
  }

  /** Lists dir from its first page, replacing what was shown. */
  async #reloadDir(scope: AgentScope<AgentState>, tree: TreeState, dir: string): Promise<void> {
    const d = dirState(tree, dir);
    d.loading = true;
    d.error = null;
    this.update();
    try {
      d.listing = await loadFirst(this.#entryPages(scope, tree.workspace, dir));
    } catch (err) {
      if (isStale(err)) return;
      if (isUnauthenticated(err)) return this.#fail(err);
      d.error = describeError(err);
      if (dir === '') tree.rootError = asApiError(err);
    } finally {
      if (scope.alive) {
        d.loading = false;
        if (!d.error && dir === '') tree.rootError = null;
        this.update();
      }
    }
  }

  async #loadMoreDir(scope: AgentScope<AgentState>, tree: TreeState, dir: string): Promise<void> {
    const d = dirState(tree, dir);
    d.loading = true;
    this.update();
    try {
      const r = await loadMore(d.listing, this.#entryPages(scope, tree.workspace, dir), (e) => e.path ?? '');
      d.listing = r.listing;
      if (r.restarted) this.notify('info', 'The folder changed while it was being listed, so it was reloaded from the start.');
    } catch (err) {
      if (isStale(err)) return;
      if (isUnauthenticated(err)) return this.#fail(err);
      d.error = describeError(err);
    } finally {
      if (scope.alive) {
        d.loading = false;
        this.update();
      }
    }
  }

  async #toggleDir(tree: TreeState, entry: Entry, open?: boolean): Promise<void> {
    const scope = this.#scope;
    if (!scope) return;
    const path = entry.path ?? '';
    const d = dirState(tree, path);
    d.expanded = open ?? !d.expanded;
    this.update();
    if (d.expanded && !d.listing.loaded && !d.loading) await this.#reloadDir(scope, tree, path);
  }

  #rowsOf(tree: TreeState): Row[] {
    return visibleRows(tree).filter((r) => r.kind !== 'status');
  }

  #focusRow(tree: TreeState, key: string): void {
    tree.focusKey = key;
    this.#focusAfterRender = key;
    this.update();
  }

  #onTreeKey(e: KeyboardEvent, tree: TreeState): void {
    // Keys on controls inside the tree (a Retry button) keep their own meaning.
    if (!(e.target as HTMLElement).matches('[role="treeitem"]')) return;
    const rows = this.#rowsOf(tree);
    if (rows.length === 0) return;
    let i = rows.findIndex((r) => r.key === tree.focusKey);
    if (i < 0) i = 0;
    const row = rows[i]!;
    const entry = row.kind === 'entry' ? row.entry : null;
    const target = e.target as HTMLElement;
    switch (e.key) {
      case 'ArrowDown':
        this.#focusRow(tree, rows[Math.min(i + 1, rows.length - 1)]!.key);
        break;
      case 'ArrowUp':
        this.#focusRow(tree, rows[Math.max(i - 1, 0)]!.key);
        break;
      case 'Home':
        this.#focusRow(tree, rows[0]!.key);
        break;
      case 'End':
        this.#focusRow(tree, rows[rows.length - 1]!.key);
        break;
      case 'ArrowRight':
        if (entry && isDir(entry)) {
          const d = tree.dirs.get(entry.path ?? '');
          if (!d?.expanded) void this.#toggleDir(tree, entry, true);
          else {
            const next = rows[i + 1];
            if (next && next.kind !== 'status' && next.parent === entry.path) this.#focusRow(tree, next.key);
          }
        }
        break;
      case 'ArrowLeft':
        if (entry && isDir(entry) && tree.dirs.get(entry.path ?? '')?.expanded) {
          void this.#toggleDir(tree, entry, false);
        } else if (row.kind !== 'status' && row.parent !== '') {
          this.#focusRow(tree, 'e:' + row.parent);
        }
        break;
      case 'Enter':
      case ' ':
        this.#activateRow(tree, row);
        break;
      case 'F2':
        if (entry) void this.#rename(tree, entry);
        break;
      case 'Delete':
        if (entry) void this.#deleteEntry(tree, entry);
        break;
      case 'F10':
        if (!e.shiftKey) return;
        if (entry) this.#openEntryMenu(tree, entry, target);
        break;
      case 'ContextMenu':
        if (entry) this.#openEntryMenu(tree, entry, target);
        break;
      default:
        return;
    }
    e.preventDefault();
  }

  #activateRow(tree: TreeState, row: Row): void {
    const scope = this.#scope;
    if (!scope) return;
    tree.focusKey = row.key;
    if (row.kind === 'more') {
      void this.#loadMoreDir(scope, tree, row.dir);
    } else if (row.kind === 'entry') {
      if (isDir(row.entry)) void this.#toggleDir(tree, row.entry);
      else void this.#openFile(tree.workspace, row.entry.path ?? '', false, row.entry);
    }
  }

  /** What may be done to an entry: Global's skills root and AGENTS.md are fixed in place. */
  #allowed(tree: TreeState, entry: Entry) {
    const path = entry.path ?? '';
    const global = tree.workspace.scope === 'GLOBAL';
    const skillsRoot = global && path === 'skills';
    const agentsMd = global && path === 'AGENTS.md';
    return {
      create: isDir(entry),
      rename: !skillsRoot && !agentsMd,
      move: !skillsRoot && !agentsMd,
      delete: !skillsRoot,
    };
  }

  // ---- checkpoints -----------------------------------------------------

  /** The Checkpoints panel of ws (views/checkpoints.ts). */
  async #openCheckpoints(ws: WorkspaceRef, onRestored: () => unknown, comparePath?: string): Promise<void> {
    const scope = this.#scope;
    if (!scope) return;
    await openCheckpoints({
      api: this.#ckpt,
      agentId: scope.agentId,
      ws,
      title: ws.scope === 'GLOBAL' ? 'Global' : `project ${ws.project_name ?? ''}`,
      ...(comparePath ? { comparePath } : {}),
      notify: (kind, text) => this.notify(kind, text),
      describeError,
      onRestored: async () => {
        if (scope.alive) await onRestored();
      },
    });
  }

  async #refreshAfterRestore(tree: TreeState): Promise<void> {
    const scope = this.#scope;
    if (scope) await this.#refreshTree(scope, tree);
  }

  #openEntryMenu(tree: TreeState, entry: Entry, anchor: HTMLElement, at?: { x: number; y: number }): void {
    const can = this.#allowed(tree, entry);
    const items: MenuItem[] = [];
    if (isDir(entry)) {
      items.push({ label: 'New file…', run: () => void this.#newEntry(tree, entry.path ?? '', 'ENTRY_TYPE_FILE') });
      items.push({ label: 'New folder…', run: () => void this.#newEntry(tree, entry.path ?? '', 'ENTRY_TYPE_DIRECTORY') });
      items.push({ label: 'Refresh', run: () => this.#scope && void this.#reloadDir(this.#scope, tree, entry.path ?? '') });
    } else {
      items.push({ label: 'Open', hint: 'Enter', run: () => void this.#openFile(tree.workspace, entry.path ?? '', false, entry) });
    }
    if (!isDir(entry)) {
      items.push({ label: 'Compare with checkpoint…', run: () => void this.#openCheckpoints(tree.workspace, () => this.#refreshAfterRestore(tree), entry.path ?? '') });
    }
    if (can.rename) items.push({ label: 'Rename…', hint: 'F2', run: () => void this.#rename(tree, entry) });
    if (can.move) items.push({ label: 'Move to folder…', run: () => void this.#move(tree, entry) });
    if (can.delete) items.push({ label: 'Delete…', hint: 'Del', danger: true, run: () => void this.#deleteEntry(tree, entry) });
    const r = anchor.getBoundingClientRect();
    openMenu(at?.x ?? r.left + 24, at?.y ?? r.bottom, items, anchor, `Actions for ${entry.name ?? ''}`);
  }

  async #newEntry(tree: TreeState, parent: string, type: EntryType): Promise<void> {
    const scope = this.#scope;
    if (!scope) return;
    const kind = type === 'ENTRY_TYPE_DIRECTORY' ? 'folder' : 'file';
    const where = parent === '' ? (tree.workspace.scope === 'GLOBAL' ? 'Global' : tree.workspace.project_name) : parent;
    const name = await promptDialog({
      title: `New ${kind}`,
      label: `Name of the new ${kind} in ${where}`,
      confirmLabel: `Create ${kind}`,
      validate: entryNameProblem,
      testid: 'new-entry-dialog',
    });
    if (name === null || !scope.alive) return;
    await this.#create(scope, tree, parent, name, type);
  }

  async #create(scope: AgentScope<AgentState>, tree: TreeState, parent: string, name: string, type: EntryType): Promise<void> {
    try {
      const created = await scope.guard(this.#api.createEntry(scope.agentId, tree.workspace, parent, name, type));
      this.#succeeded();
      dirState(tree, parent).expanded = true;
      await this.#afterMutation(scope, tree, [parent]);
      if (!tree.dirs.get(parent)?.listing.loaded) await this.#reloadDir(scope, tree, parent);
      tree.focusKey = 'e:' + (created.path ?? joinPath(parent, name));
      if (type === 'ENTRY_TYPE_FILE') await this.#openFile(tree.workspace, created.path ?? joinPath(parent, name));
    } catch (err) {
      this.#fail(err, `${name} was not created.`);
      if (isConflict(err) || asApiError(err).status === 404) await this.#reloadDir(scope, tree, parent);
    }
  }

  /** Global's "New skill": a folder in skills/ holding a SKILL.md from a small template, opened for editing. */
  async #newSkill(scope: AgentScope<AgentState>, tree: TreeState): Promise<void> {
    const name = await promptDialog({
      title: 'New skill',
      label: 'Skill name (the folder in skills/)',
      help: 'Creates skills/<name>/SKILL.md from a short template for you to fill in.',
      confirmLabel: 'Create skill',
      validate: entryNameProblem,
      testid: 'new-skill-dialog',
    });
    if (name === null || !scope.alive) return;
    const dir = joinPath('skills', name);
    try {
      await scope.guard(this.#api.createEntry(scope.agentId, GLOBAL, 'skills', name, 'ENTRY_TYPE_DIRECTORY'));
      const file = await scope.guard(this.#api.createEntry(scope.agentId, GLOBAL, dir, 'SKILL.md', 'ENTRY_TYPE_FILE'));
      await scope.guard(this.#api.updateFile(scope.agentId, GLOBAL, file.path ?? joinPath(dir, 'SKILL.md'), skillTemplate(name), file.revision ?? ''));
      this.#succeeded();
      dirState(tree, 'skills').expanded = true;
      dirState(tree, dir).expanded = true;
      await this.#afterMutation(scope, tree, ['skills', dir]);
      for (const d of ['skills', dir]) if (!tree.dirs.get(d)?.listing.loaded) await this.#reloadDir(scope, tree, d);
      this.notify('info', `Skill ${name} was created.`);
      await this.#openFile(GLOBAL, joinPath(dir, 'SKILL.md'));
    } catch (err) {
      this.#fail(err, `Skill ${name} was not created.`);
      await this.#afterMutation(scope, tree, ['skills']);
    }
  }

  async #rename(tree: TreeState, entry: Entry): Promise<void> {
    if (!this.#allowed(tree, entry).rename) {
      this.notify('error', `${entry.name} cannot be renamed.`);
      return;
    }
    const name = entry.name ?? '';
    const dot = name.lastIndexOf('.');
    const newName = await promptDialog({
      title: `Rename ${isDir(entry) ? 'folder' : 'file'}`,
      label: 'New name',
      value: name,
      select: [0, !isDir(entry) && dot > 0 ? dot : name.length],
      confirmLabel: 'Rename',
      validate: (v) => (v === name ? 'Enter a different name.' : entryNameProblem(v)),
      testid: 'rename-dialog',
    });
    if (newName === null) return;
    await this.#moveTo(tree, entry, joinPath(parentOf(entry.path ?? ''), newName));
  }

  async #move(tree: TreeState, entry: Entry): Promise<void> {
    if (!this.#allowed(tree, entry).move) {
      this.notify('error', `${entry.name} cannot be moved.`);
      return;
    }
    const path = entry.path ?? '';
    const from = parentOf(path);
    const global = tree.workspace.scope === 'GLOBAL';
    const candidates = knownDirectories(tree).filter(
      (d) => d !== from && !(isDir(entry) && isWithin(d, path)) && (!global || isWithin(d, 'skills')),
    );
    const folder = await promptDialog({
      title: `Move ${entry.name}`,
      label: 'Destination folder (path inside this workspace; empty for the top level)',
      help: global ? 'In Global, files can only move within skills/.' : `Currently in ${from === '' ? 'the top level' : from}.`,
      value: '',
      suggestions: candidates,
      confirmLabel: 'Move',
      validate: (v) => {
        const n = normaliseFolderPath(v);
        if (n === null) return 'Enter a folder path like src/lib, without "." or ".." segments.';
        if (n === from) return 'That is where it already is.';
        if (isDir(entry) && isWithin(n, path)) return 'A folder cannot be moved into itself.';
        if (global && !isWithin(n, 'skills')) return 'In Global, choose a folder inside skills.';
        if (global && n === '') return 'In Global, choose a folder inside skills.';
        return null;
      },
      testid: 'move-dialog',
    });
    if (folder === null) return;
    await this.#moveTo(tree, entry, joinPath(normaliseFolderPath(folder) ?? '', entry.name ?? ''));
  }

  async #moveTo(tree: TreeState, entry: Entry, destination: string): Promise<void> {
    const scope = this.#scope;
    if (!scope) return;
    const source = entry.path ?? '';
    try {
      const moved = await scope.guard(this.#api.moveEntry(scope.agentId, tree.workspace, entry, destination));
      const st = scope.state;
      // Keep an open file (and its unsaved text) when it or a folder above it moved.
      if (st.file && st.file.workspaceKey === workspaceKey(tree.workspace) && isWithin(st.file.path, source)) {
        const newPath = destination + st.file.path.slice(source.length);
        st.file = { ...st.file, path: newPath, entry: { ...st.file.entry, path: newPath, name: baseName(newPath) } };
        if (newPath === destination && !isDir(entry)) {
          st.file.revision = moved.revision ?? st.file.revision;
          st.file.entry = { ...st.file.entry, ...moved };
        }
      }
      this.#succeeded();
      for (const k of [...tree.dirs.keys()]) if (k !== '' && isWithin(k, source)) tree.dirs.delete(k);
      await this.#afterMutation(scope, tree, [parentOf(source), parentOf(destination)]);
      tree.focusKey = 'e:' + destination;
      this.#focusAfterRender = tree.focusKey;
      this.update();
    } catch (err) {
      this.#fail(err, `${entry.name} was not moved.`);
      if (isConflict(err) || asApiError(err).status === 404) await this.#reloadDir(scope, tree, parentOf(source));
    }
  }

  async #deleteEntry(tree: TreeState, entry: Entry): Promise<void> {
    const scope = this.#scope;
    if (!scope) return;
    if (!this.#allowed(tree, entry).delete) {
      this.notify('error', `${entry.name} cannot be deleted.`);
      return;
    }
    const path = entry.path ?? '';
    const dir = isDir(entry);
    const st = scope.state;
    const losesEdits = ed.isDirty(st.file) && st.file?.workspaceKey === workspaceKey(tree.workspace) && isWithin(st.file.path, path);
    const ok = await confirmDialog({
      title: `Delete ${dir ? 'folder' : 'file'} ${entry.name}?`,
      body: [
        dir
          ? html`This deletes the folder <code>${path}</code>. If it is not empty, <strong>everything inside it is deleted recursively and
              permanently</strong>.`
          : html`This permanently deletes the file <code>${path}</code>.`,
        dir
          ? html`<strong>The deletion is permanent.</strong> With automatic checkpoints on (the default), a checkpoint of the folder is
              taken first: while it is kept, Checkpoints can bring it back.`
          : html`<strong>This cannot be undone</strong> unless a checkpoint holds the file.`,
        ...(losesEdits ? [html`Your unsaved changes in the open file will be lost.`] : []),
      ],
      confirmLabel: dir ? 'Delete folder permanently' : 'Delete file permanently',
      danger: true,
      testid: 'delete-entry-dialog',
    });
    if (!ok || !scope.alive) return;
    try {
      await deleteWithOverride(`the folder ${path}`, (skip) => scope.guard(this.#api.deleteEntry(scope.agentId, tree.workspace, entry, dir, skip)));
      if (st.file && st.file.workspaceKey === workspaceKey(tree.workspace) && isWithin(st.file.path, path)) {
        this.#drafts.remove(scope.agentId, st.file.workspaceKey, st.file.path);
        this.#closeFile(st);
      }
      for (const k of [...tree.dirs.keys()]) if (k !== '' && isWithin(k, path)) tree.dirs.delete(k);
      this.notify('info', `${entry.name} was deleted.`);
      await this.#afterMutation(scope, tree, [parentOf(path)]);
      if (parentOf(path) !== '') this.#focusRow(tree, 'e:' + parentOf(path));
    } catch (err) {
      this.#fail(err, `${entry.name} was not deleted.`);
      if (isConflict(err) || asApiError(err).status === 404) await this.#reloadDir(scope, tree, parentOf(path));
    }
  }

  // ---- editor ----------------------------------------------------------

  /** Asks before unsaved text would be lost. True when it is fine to go on. */
  async #confirmDiscard(action: string): Promise<boolean> {
    const f = this.#scope?.state.file;
    if (!ed.isDirty(f)) return true;
    const ok = await confirmDialog({
      title: 'Discard unsaved changes?',
      body: [html`<code>${f!.path}</code> has changes that are not saved. ${action} discards them.`],
      confirmLabel: 'Discard changes',
      cancelLabel: 'Keep editing',
      danger: true,
      testid: 'discard-dialog',
    });
    if (ok) this.#discardDraft();
    return ok;
  }

  // ---- drafts: unsaved text in the browser's storage ----------------------

  #scheduleDraft(): void {
    if (this.#draftTimer === null) this.#draftTimer = setTimeout(() => this.#flushDraft(), 300);
  }

  /** Stores the open file's unsaved text now (or forgets it once the file is clean). */
  #flushDraft(): void {
    if (this.#draftTimer !== null) {
      clearTimeout(this.#draftTimer);
      this.#draftTimer = null;
    }
    const scope = this.#scope;
    const f = scope?.state.file;
    if (!scope || !f || !f.editable) return;
    if (ed.isDirty(f)) {
      this.#drafts.put({ agentId: scope.agentId, workspaceKey: f.workspaceKey, path: f.path, baseRevision: f.revision, text: f.text });
    } else {
      this.#drafts.remove(scope.agentId, f.workspaceKey, f.path);
    }
  }

  /** The user chose to throw the open file's unsaved text away. */
  #discardDraft(): void {
    if (this.#draftTimer !== null) {
      clearTimeout(this.#draftTimer);
      this.#draftTimer = null;
    }
    const scope = this.#scope;
    const f = scope?.state.file;
    if (scope && f) this.#drafts.remove(scope.agentId, f.workspaceKey, f.path);
  }

  #loadEditor(text: string, lang: Parameters<LazyEditor['load']>[1]): void {
    this.#editorBase = text;
    this.#editor.load(text, lang);
  }

  #closeFile(st: AgentState): void {
    st.file = null;
    st.fileLoading = null;
    st.fileError = null;
    st.fileRequest++;
    this.#loadEditor('', 'plain');
  }

  /** listed is the entry as the tree listed it (metadata for files the server will not read). */
  async #openFile(ws: WorkspaceRef, path: string, force = false, listed?: Entry): Promise<void> {
    const scope = this.#scope;
    if (!scope) return;
    const st = scope.state;
    if (!force && st.file && st.file.path === path && st.file.workspaceKey === workspaceKey(ws)) return;
    if (!force && !(await this.#confirmDiscard('Opening another file'))) return;
    if (!scope.alive) return;
    const req = ++st.fileRequest;
    st.fileLoading = path;
    st.fileError = null;
    this.update();
    try {
      const r = await scope.guard(this.#api.getFile(scope.agentId, ws, path));
      if (req !== st.fileRequest) return;
      st.file = ed.openFile(workspaceKey(ws), path, r);
      const draft = st.file.editable ? this.#drafts.get(scope.agentId, st.file.workspaceKey, path) : null;
      if (draft && draft.text !== st.file.loadedText) {
        // Typed before the session ended or the page closed: back in the editor, on the revision it was typed on.
        st.file = { ...st.file, text: draft.text, revision: draft.baseRevision };
        this.#loadEditor(draft.text, languageForPath(path));
        this.notify(
          'info',
          draft.baseRevision === (r.entry?.revision ?? '')
            ? `Your unsaved changes to ${path} were restored.`
            : `Your unsaved changes to ${path} were restored. The file was changed elsewhere since, so saving them shows the conflict.`,
        );
      } else {
        if (draft) this.#drafts.remove(scope.agentId, st.file.workspaceKey, path);
        this.#loadEditor(st.file.text, languageForPath(path));
      }
    } catch (err) {
      if (isStale(err) || req !== st.fileRequest) return;
      if (isUnauthenticated(err)) return this.#fail(err);
      if (listed && asApiError(err).reason === 'MULTIPLE_LINKS') {
        // The server refuses to read a file with several hard links: show what the listing knows.
        st.file = ed.openFile(workspaceKey(ws), path, {
          entry: { ...listed, editable: false, non_editable_reason: 'NON_EDITABLE_REASON_MULTIPLE_LINKS' },
        });
        this.#loadEditor('', 'plain');
        return;
      }
      st.file = null;
      st.fileError = { path, ws, error: asApiError(err) };
    } finally {
      if (scope.alive && req === st.fileRequest) {
        st.fileLoading = null;
        this.update();
      }
    }
  }

  #onEdit(text: string): void {
    const st = this.#scope?.state;
    if (!st?.file) return;
    const wasDirty = ed.isDirty(st.file);
    // The editor joins lines with LF: the file's own separators go back in (CRLF files stay CRLF).
    st.file = ed.edit(st.file, restoreLineEndings(this.#editorBase, text));
    this.#scheduleDraft();
    if (wasDirty !== ed.isDirty(st.file)) this.update();
  }

  #fileWorkspace(f: ed.OpenFile): WorkspaceRef {
    return f.workspaceKey === 'GLOBAL:' ? GLOBAL : project(f.workspaceKey.slice('PROJECT:'.length));
  }

  async save(): Promise<void> {
    const scope = this.#scope;
    const f = scope?.state.file;
    if (!scope || !f) return;
    if (f.conflict) {
      await this.#showConflict();
      return;
    }
    if (!ed.canSave(f)) return;
    const text = f.text;
    this.#flushDraft(); // stored before the request: a session that ends now loses nothing
    scope.state.file = ed.saveStarted(f);
    this.update();
    try {
      const entry = await scope.guard(this.#api.updateFile(scope.agentId, this.#fileWorkspace(f), f.path, text, f.revision));
      const cur = scope.state.file;
      if (!cur || cur.path !== f.path) return;
      scope.state.file = ed.saveSucceeded(cur, entry, text);
      this.#flushDraft(); // gone, or re-based on the new revision when more was typed meanwhile
      this.notify('info', `Saved ${f.path}.`);
      // The tree's copy of the file, and of its folder (whose revision the save changed), are out of date.
      const tree = scope.state.trees.get(f.workspaceKey);
      if (tree) {
        patchEntry(tree, entry);
        const dir = parentOf(f.path);
        if (dir !== '') await this.#afterMutation(scope, tree, [parentOf(dir)]);
        else this.update();
      }
    } catch (err) {
      if (isStale(err)) return;
      const cur = scope.state.file;
      if (!cur || cur.path !== f.path) return this.#fail(err);
      const r = ed.saveFailed(cur, err);
      scope.state.file = r.file;
      this.update();
      if (isUnauthenticated(err)) {
        // Sign in again in place, then the same save (same expected revision) once more.
        if ((await this.#reauthenticate()) && scope.alive) await this.save();
        return;
      }
      if (r.conflict) await this.#showConflict();
      else this.#fail(err, 'Not saved.');
    }
  }

  async #showConflict(): Promise<void> {
    const f = this.#scope?.state.file;
    if (!f) return;
    const choice = await conflictDialog({ path: f.path, copy: () => this.#copyMine() });
    if (choice === 'reload') await this.#reloadServerVersion();
  }

  async #copyMine(): Promise<boolean> {
    const f = this.#scope?.state.file;
    if (!f) return false;
    return copyText(f.text);
  }

  async #reloadServerVersion(): Promise<void> {
    const scope = this.#scope;
    const f = scope?.state.file;
    if (!scope || !f) return;
    try {
      const r = await scope.guard(this.#api.getFile(scope.agentId, this.#fileWorkspace(f), f.path));
      const cur = scope.state.file;
      if (!cur || cur.path !== f.path) return;
      this.#discardDraft();
      scope.state.file = ed.reloaded(cur, r);
      this.#loadEditor(scope.state.file.text, languageForPath(f.path));
      const tree = scope.state.trees.get(f.workspaceKey);
      if (tree && r.entry) patchEntry(tree, r.entry);
      this.notify('info', 'The server version was loaded.');
    } catch (err) {
      this.#fail(err, 'The server version could not be loaded.');
    }
  }

  /** Revert: back to the saved text, undoable (from the message, or Ctrl+Z in the editor). */
  #cancelEdits(): void {
    const st = this.#scope?.state;
    if (!st?.file || !ed.isDirty(st.file)) return;
    const mine = st.file.text;
    const path = st.file.path;
    const reverted = ed.cancel(st.file);
    st.file = reverted;
    this.#editorBase = reverted.text;
    this.#editor.replace(reverted.text);
    this.#discardDraft();
    this.notify('info', `Your changes to ${path} were reverted.`, {
      label: 'Undo',
      testid: 'undo-revert',
      run: () => {
        const cur = this.#scope?.state.file;
        if (!cur || cur.path !== path || ed.isDirty(cur)) return;
        this.#editorBase = mine;
        this.#editor.replace(mine);
        this.#scope!.state.file = ed.edit(cur, mine);
        this.#flushDraft();
        this.#notice = null;
        this.update();
      },
    });
  }

  /** The editor's Reload: the server's current version (asks first when there are unsaved changes). */
  async #reloadFile(): Promise<void> {
    const f = this.#scope?.state.file;
    if (!f) return;
    if (!(await this.#confirmDiscard('Reloading the file'))) return;
    await this.#reloadServerVersion();
  }

  /** The tree's Refresh: every listed folder, and the open file when it has no unsaved changes. */
  async #refreshTree(scope: AgentScope<AgentState>, tree: TreeState): Promise<void> {
    const dirs = [...tree.dirs.entries()].filter(([k, d]) => k === '' || (d.expanded && d.listing.loaded)).map(([k]) => k);
    const f = scope.state.file;
    await Promise.all([
      ...dirs.map((d) => this.#reloadDir(scope, tree, d)),
      f && f.workspaceKey === workspaceKey(tree.workspace) && !ed.isDirty(f) ? this.#refreshOpenFile(scope, f) : null,
    ]);
  }

  async #refreshOpenFile(scope: AgentScope<AgentState>, f: ed.OpenFile): Promise<void> {
    try {
      const r = await scope.guard(this.#api.getFile(scope.agentId, this.#fileWorkspace(f), f.path));
      const cur = scope.state.file;
      if (!cur || cur.path !== f.path || cur.workspaceKey !== f.workspaceKey || ed.isDirty(cur)) return;
      if ((r.entry?.revision ?? '') === cur.revision) return;
      scope.state.file = ed.reloaded(cur, r);
      this.#loadEditor(scope.state.file.text, languageForPath(f.path));
      this.notify('info', `${f.path} was changed elsewhere: its new version is shown.`);
    } catch (err) {
      if (isStale(err)) return;
      if (asApiError(err).status === 404) {
        const cur = scope.state.file;
        if (cur && cur.path === f.path && !ed.isDirty(cur)) this.#closeFile(scope.state);
        this.notify('info', `${f.path} no longer exists.`);
        return;
      }
      this.#fail(err, `${f.path} could not be refreshed.`);
    }
  }

  // ---- rendering -------------------------------------------------------

  #tree(scope: AgentScope<AgentState>, tree: TreeState, label: string): TemplateResult {
    return treeView(scope.state, tree, label, {
      key: (e) => this.#onTreeKey(e, tree),
      activate: (row) => this.#activateRow(tree, row),
      menu: (entry, anchor, at) => this.#openEntryMenu(tree, entry, anchor, at),
      retry: (dir) => void this.#reloadDir(scope, tree, dir),
    });
  }

  update(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    queueMicrotask(() => {
      this.#scheduled = false;
      render(this.#view(), this.#root);
      this.#syncUrl();
      this.#live.sync();
      if (this.#focusAfterRender) {
        const el = this.#root.querySelector<HTMLElement>(`[data-key="${CSS.escape(this.#focusAfterRender)}"]`);
        this.#focusAfterRender = null;
        el?.focus();
      }
    });
  }

  #view(): TemplateResult {
    const s = this.#screen;
    switch (s.kind) {
      case 'loading':
        return loadingView();
      case 'error':
        return startErrorView(s.message, () => void this.start());
      case 'login':
        return loginView(s, (token) => void this.#login(token));
      case 'no-access':
        return noAccessView(s.operator, () => void this.#logout());
      case 'app':
        return this.#appView();
    }
  }

  #appView(): TemplateResult {
    const scope = this.#scope;
    const st = scope?.state;
    const agent = this.#agent;
    return html`
      <header class="topbar">
        <h1>Agents</h1>
        <label class="agent-select"
          ><span>Agent</span>
          <select
            data-testid="agent-select"
            aria-label="Agent"
            ?disabled=${this.#agents.length === 0}
            @change=${(e: Event) => void this.#changeAgent(e.target as HTMLSelectElement)}
          >
            ${this.#agents.map(
              (a) =>
                html`<option value=${a.agent_id ?? ''} ?selected=${a.agent_id === scope?.agentId}>
                  ${a.agent_id}${a.is_default ? ' (default)' : ''}${a.project_management_enabled ? '' : ' — no project management'}
                </option>`,
            )}
          </select></label
        >
        <span class="spacer"></span>
        <span class="operator" data-testid="operator">${this.#session?.operator}</span>
        ${this.#session?.csrf_token
          ? html`<button class="btn btn-small" data-testid="logout" @click=${() => void this.#logout()}>Sign out</button>`
          : nothing /* signed in by the trusted proxy: nothing to sign out of here */}
      </header>
      ${noticeView(this.#notice, () => {
        this.#notice = null;
        this.update();
      })}
      ${this.#agentsError
        ? html`<div class="panel-message" role="alert" data-testid="agents-error">
            <p>The agent list could not be loaded. ${describeGatewayError(this.#agentsError)}</p>
            <button class="btn btn-primary" data-testid="agents-retry" @click=${() => void this.#loadAgents()}>Retry</button>
          </div>`
        : !scope || !st || !agent
          ? html`<div class="panel-message"><p>${this.#agents.length ? 'Select an agent.' : 'No agents are configured on the gateway.'}</p></div>`
          : !agent.project_management_enabled
            ? html`<div class="panel-message" data-testid="no-project-management">
                <p>Project management is not enabled for <strong>${agent.agent_id}</strong>: it has no file sidecar configured.</p>
              </div>`
            : this.#workspaceView(scope, st)}
    `;
  }

  #workspaceView(scope: AgentScope<AgentState>, st: AgentState): TemplateResult {
    const tabs: [Tab, string][] = [
      ['projects', 'Projects'],
      ['global', 'Global'],
    ];
    return html`
      <div class="tabs" role="tablist" aria-label="Workspace">
        ${tabs.map(
          ([t, label]) => html`<button
            role="tab"
            id="tab-${t}"
            data-testid="tab-${t}"
            aria-selected=${st.tab === t ? 'true' : 'false'}
            aria-controls="panel-files"
            tabindex=${st.tab === t ? 0 : -1}
            @click=${() => void this.#selectTab(t)}
            @keydown=${(e: KeyboardEvent) => {
              if (e.key === 'ArrowRight' || e.key === 'ArrowLeft') {
                e.preventDefault();
                const next = t === 'projects' ? 'global' : 'projects';
                void this.#selectTab(next).then(() => this.#root.querySelector<HTMLElement>(`#tab-${next}`)?.focus());
              }
            }}
          >
            ${label}
          </button>`,
        )}
      </div>
      ${this.#live.statusView()}
      <main class="layout" id="panel-files" role="tabpanel" aria-labelledby="tab-${st.tab}">
        <section class="sidebar" aria-label=${st.tab === 'projects' ? 'Projects and files' : 'Global files'}>
          ${st.tab === 'projects' ? this.#projectsSidebar(scope, st) : this.#globalSidebar(scope, st)}
        </section>
        <section class="editor-pane" aria-label="File">${this.#live.fileBar(st)}${editorView(st, {
          editorDom: this.#editor.dom,
          retryOpen: (ws, path) => void this.#openFile(ws, path, true),
          copyMine: async () =>
            (await this.#copyMine())
              ? this.notify('info', 'Your version was copied to the clipboard.')
              : this.notify('error', 'Copying failed: select the text in the editor and copy it by hand.'),
          reloadServer: () => void this.#reloadServerVersion(),
          reload: () => void this.#reloadFile(),
          revert: () => this.#cancelEdits(),
          save: () => void this.save(),
        })}</section>
      </main>
    `;
  }

  #projectsSidebar(scope: AgentScope<AgentState>, st: AgentState): TemplateResult {
    if (st.projectsError && isUnavailable(st.projectsError)) {
      return unavailableView(this.#scope?.agentId ?? '', () => void this.#loadProjects(scope), 'its projects');
    }
    const tree = this.#currentTree(st);
    return html`
      <div class="sidebar-section projects">
        <div class="section-head">
          <h2>Projects</h2>
          <span class="head-actions">
            <button class="btn btn-small" data-testid="new-project" @click=${() => void this.#createProject()}>New project</button>
            <button
              class="btn btn-small"
              data-testid="refresh-projects"
              title="Reload the project list"
              ?disabled=${st.projectsLoading}
              @click=${() => void this.#loadProjects(scope)}
            >
              Refresh
            </button>
          </span>
        </div>
        ${st.projectsError
          ? html`<div class="inline-error" role="alert">
              ${describeError(st.projectsError)} <button class="btn btn-small" @click=${() => void this.#loadProjects(scope)}>Retry</button>
            </div>`
          : nothing}
        <ul class="project-list" data-testid="project-list" aria-label="Projects">
          ${repeat(st.projects.items, (p) => p.name ?? '', (p) => {
            const name = p.name ?? '';
            const selected = st.selectedProject === name;
            return html`<li class="project-row ${selected ? 'selected' : ''}" data-project=${name}>
              <button class="project-name" data-key="p:${name}" aria-current=${selected ? 'true' : 'false'} @click=${() => void this.#selectProject(name)}>
                <span class="name">${name}</span>
                <span class="badge ${p.git_initialized ? 'git' : 'nogit'}" title=${p.git_initialized ? 'Git repository' : 'Not a Git repository'}
                  >${p.git_initialized ? 'Git' : 'No Git'}</span
                >
              </button>
              <button class="btn btn-small btn-ghost danger" aria-label="Delete project ${name}" title="Delete project" @click=${() => void this.#deleteProject(name)}>
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
                  @click=${() => void this.#loadProjects(scope, true)}
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
                <button class="btn btn-small" data-testid="root-new-file" @click=${() => void this.#newEntry(tree, '', 'ENTRY_TYPE_FILE')}>New file</button>
                <button class="btn btn-small" data-testid="root-new-folder" @click=${() => void this.#newEntry(tree, '', 'ENTRY_TYPE_DIRECTORY')}>
                  New folder
                </button>
                <button
                  class="btn btn-small"
                  data-testid="refresh-files"
                  title="Reload the listed folders and the open file"
                  @click=${() => void this.#refreshTree(scope, tree)}
                >
                  Refresh
                </button>
                <button
                  class="btn btn-small"
                  data-testid="open-checkpoints"
                  title="Snapshots of this project: compare and restore"
                  @click=${() => void this.#openCheckpoints(tree.workspace, () => this.#refreshAfterRestore(tree))}
                >
                  Checkpoints
                </button>
              </span>
            </div>
            ${this.#tree(scope, tree, `Files of project ${st.selectedProject}`)}
          </div>`
        : html`<p class="muted hint">Select a project to browse its files.</p>`}
    `;
  }

  #globalSidebar(scope: AgentScope<AgentState>, st: AgentState): TemplateResult {
    const tree = st.trees.get(workspaceKey(GLOBAL));
    if (!tree) return html`<p class="muted">Loading…</p>`;
    const root = tree.dirs.get('')!;
    const rootError = tree.rootError;
    if (rootError && isUnavailable(rootError)) {
      return unavailableView(this.#scope?.agentId ?? '', () => void this.#reloadDir(scope, tree, ''), 'its Global files');
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
                @click=${() => void this.#create(scope, tree, '', 'AGENTS.md', 'ENTRY_TYPE_FILE')}
              >
                Create AGENTS.md
              </button>`
            : nothing}
          <button class="btn btn-small" data-testid="new-skill" title="A folder in skills/ with a SKILL.md" @click=${() => void this.#newSkill(scope, tree)}>
            New skill
          </button>
          <button class="btn btn-small" data-testid="refresh-files" title="Reload the listed folders and the open file" @click=${() => void this.#refreshTree(scope, tree)}>
            Refresh
          </button>
          <button
            class="btn btn-small"
            data-testid="open-checkpoints"
            title="Snapshots of skills/ and AGENTS.md: compare and restore"
            @click=${() => void this.#openCheckpoints(GLOBAL, () => this.#refreshAfterRestore(tree))}
          >
            Checkpoints
          </button>
        </span>
      </div>
      <p class="muted hint">Shared by all of this agent's projects: its skills and the global AGENTS.md instructions.</p>
      ${this.#tree(scope, tree, 'Global files')}
      ${root.listing.loaded && !hasAgentsMd
        ? html`<p class="muted hint">There is no AGENTS.md yet. Create it to give the agent global instructions.</p>`
        : nothing}
    </div>`;
  }

}
