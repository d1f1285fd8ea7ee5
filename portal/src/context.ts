// What every feature module is handed: the one app state, the API clients,
// the editor and the draft store, the render/notice/error callbacks, and the
// other features (each reached through the context when it is used, so the
// modules can call one another without holding module-level state).
// src/app.ts, the composition root, is the one implementation.
import type { Api } from './api/client';
import type { CheckpointApi } from './api/checkpoints';
import type { LiveController } from './live';
import type { AppState, Notice } from './state/appState';
import type { Feature } from './state/features';
import type { Drafts } from './state/drafts';
import type { LazyEditor } from './ui/lazyEditor';
import type { Agents } from './features/agents';
import type { Session } from './features/session';
import type { Routing } from './features/routing';
import type { Projects } from './features/projects';
import type { Tree } from './features/tree';
import type { TreeActions } from './features/treeActions';
import type { Editor } from './features/editor';
import type { CheckpointHooks } from './views/checkpointHooks';

export interface AppContext {
  /** The element the page renders into. */
  readonly root: HTMLElement;
  readonly state: AppState;
  readonly api: Api;
  readonly ckpt: CheckpointApi;
  /** CodeMirror, loaded on demand. */
  readonly editor: LazyEditor;
  /** Unsaved text in the browser's storage. */
  readonly drafts: Drafts;
  /** Schedules a render of the state (once per microtask). */
  update(): void;
  /** Shows a message in the strip; info messages go away by themselves. */
  notify(kind: Notice['kind'], text: string, action?: Notice['action']): void;
  /** A mutation succeeded: an error message about an earlier attempt is out of date. */
  succeeded(): void;
  /** Central error handling (features/session.ts): a lost session, or a message. */
  fail(err: unknown, prefix?: string): void;
  /** Records the outcome of a call of an optional feature of agentId (banner, state/features.ts). */
  noteFeature(agentId: string, feature: Feature, err: unknown | null): void;

  readonly session: Session;
  readonly agents: Agents;
  readonly routing: Routing;
  readonly projects: Projects;
  readonly tree: Tree;
  readonly treeActions: TreeActions;
  readonly files: Editor;
  readonly checkpoints: CheckpointHooks;
  readonly live: LiveController;
}
