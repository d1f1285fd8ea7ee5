// The Agents page's composition root: creates the one app state
// (state/appState.ts), the API clients, the editor and the draft store, and
// the feature modules (src/features/),
// hands each of them this object as its context (context.ts), renders the
// state (views/) once per microtask, and listens to the window (unload,
// Back/Forward, Ctrl+S). What each feature does is in its own module.
import { render, type TemplateResult } from 'lit-html';
import { createApi, type Api } from './api/client';
import { createCheckpointApi, type CheckpointApi } from './api/checkpoints';
import type { AppContext } from './context';
import { Agents } from './features/agents';
import { AgentsPage } from './features/agentsPage';
import { CheckpointHooks } from './features/checkpoints';
import { Conflicts } from './features/conflict';
import { Editor } from './features/editor';
import type { LiveController } from './features/live';
import { createLive } from './features/liveHooks';
import { Projects } from './features/projects';
import { RecentlyDeleted } from './features/recentlyDeleted';
import { Routing } from './features/routing';
import { Search } from './features/search';
import { Session } from './features/session';
import { Tree } from './features/tree';
import { TreeActions } from './features/treeActions';
import { Upload } from './features/upload';
import { freshAppState, type AppState, type Notice } from './state/appState';
import { noteOutcome, unavailableFeature, type Feature } from './state/features';
import { browserStorage, Drafts } from './state/drafts';
import * as ed from './state/editorState';
import { LazyEditor } from './ui/lazyEditor';
import { agentsPageView } from './views/agents';
import { loadingView, loginView, noAccessView, startErrorView } from './views/login';

export class App implements AppContext {
  readonly root: HTMLElement;
  readonly state: AppState = freshAppState();
  readonly api: Api;
  readonly ckpt: CheckpointApi;
  readonly editor: LazyEditor;
  readonly drafts = new Drafts(browserStorage());
  // The features reach one another through this object when they are used
  // (never while being built), so the order here does not matter.
  readonly session: Session = new Session(this);
  readonly agents: Agents = new Agents(this);
  readonly agentsPage: AgentsPage = new AgentsPage(this);
  readonly routing: Routing = new Routing(this);
  readonly projects: Projects = new Projects(this);
  readonly recentlyDeleted: RecentlyDeleted = new RecentlyDeleted(this);
  readonly tree: Tree = new Tree(this);
  readonly treeActions: TreeActions = new TreeActions(this);
  readonly files: Editor = new Editor(this);
  readonly conflicts: Conflicts = new Conflicts(this);
  readonly checkpoints: CheckpointHooks = new CheckpointHooks(this);
  /** Live changes: the watch stream of what is on screen (features/live.ts). */
  readonly live: LiveController = createLive(this);
  /** Quick open and the content search (features/search.ts). */
  readonly search: Search = new Search(this);
  /** Uploads by picker and drag-and-drop (features/upload.ts). */
  readonly upload: Upload = new Upload(this);
  #scheduled = false;

  constructor(root: HTMLElement) {
    this.root = root;
    const csrf = () => this.state.session?.csrf_token ?? '';
    // Deletes and checkpoint calls tell whether the agent's checkpoints
    // (and the watch stream, features/liveHooks.ts) are available: the banner.
    this.api = createApi({
      csrf,
      failed: (agentId, err) => {
        const f = unavailableFeature(err);
        if (f) this.noteFeature(agentId, f, err);
      },
    });
    this.ckpt = createCheckpointApi({ csrf, observe: (agentId, err) => this.noteFeature(agentId, 'checkpoints', err) });
    this.editor = new LazyEditor(
      (text) => this.files.onEdit(text),
      () => void this.files.save(),
    );
    window.addEventListener('pagehide', () => this.files.flushDraft());
    window.addEventListener('popstate', () => void this.routing.onPopState());
    window.addEventListener('beforeunload', (e) => {
      this.files.flushDraft();
      if (ed.isDirty(this.state.scopes.current?.state.file) || this.upload.queue.busy) {
        e.preventDefault();
        e.returnValue = '';
      }
    });
    // Files dropped beside the tree (features/upload.ts takes drops on it)
    // would make the browser open them in place of the page.
    for (const type of ['dragover', 'drop'] as const) {
      window.addEventListener(type, (e) => {
        if (e.dataTransfer && [...e.dataTransfer.types].includes('Files')) e.preventDefault();
      });
    }
    window.addEventListener('keydown', (e) => {
      if ((e.ctrlKey || e.metaKey) && !e.altKey && e.key.toLowerCase() === 's' && this.state.scopes.current?.state.file) {
        e.preventDefault();
        void this.files.save();
      }
      this.#searchKeys(e);
    });
  }

  /** Ctrl+P: quick open; Ctrl+Shift+F: search in files (while an agent's workspace is shown, no dialog open). */
  #searchKeys(e: KeyboardEvent): void {
    if (!(e.ctrlKey || e.metaKey) || e.altKey || this.state.screen.kind !== 'app' || !this.state.scopes.current) return;
    if (document.querySelector('dialog[open]')) return;
    const k = e.key.toLowerCase();
    if (k === 'p' && !e.shiftKey) {
      e.preventDefault();
      void this.search.quickOpen();
    } else if (k === 'f' && e.shiftKey) {
      e.preventDefault();
      void this.search.contentSearch();
    }
  }

  start(): Promise<void> {
    return this.session.start();
  }

  notify(kind: Notice['kind'], text: string, action?: Notice['action']): void {
    const s = this.state;
    const id = ++s.noticeSerial;
    s.notice = { kind, text, id, ...(action ? { action } : {}) };
    if (kind === 'info') {
      setTimeout(
        () => {
          if (s.notice?.id === id) {
            s.notice = null;
            this.update();
          }
        },
        action ? 12000 : 6000,
      );
    }
    this.update();
  }

  succeeded(): void {
    if (this.state.notice?.kind === 'error') {
      this.state.notice = null;
      this.update();
    }
  }

  noteFeature(agentId: string, feature: Feature, err: unknown | null): void {
    let n = this.state.featureNotices.get(agentId);
    if (!n) this.state.featureNotices.set(agentId, (n = {}));
    if (noteOutcome(n, feature, err)) this.update();
  }

  fail(err: unknown, prefix = ''): void {
    this.session.fail(err, prefix);
  }

  update(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    queueMicrotask(() => {
      this.#scheduled = false;
      render(this.#view(), this.root);
      this.routing.syncUrl();
      this.live.sync();
      const focus = this.state.focusAfterRender;
      if (focus) {
        const el = this.root.querySelector<HTMLElement>(`[data-key="${CSS.escape(focus)}"]`);
        this.state.focusAfterRender = null;
        el?.focus();
      }
    });
  }

  #view(): TemplateResult {
    const s = this.state.screen;
    switch (s.kind) {
      case 'loading':
        return loadingView();
      case 'error':
        return startErrorView(s.message, () => void this.start());
      case 'login':
        return loginView(s, (token) => void this.session.login(token));
      case 'no-access':
        return noAccessView(s.operator, () => (s.signOutUrl ? location.assign(s.signOutUrl) : void this.session.logout()), !!s.signOutUrl);
      case 'app':
        return agentsPageView(this);
    }
  }
}
