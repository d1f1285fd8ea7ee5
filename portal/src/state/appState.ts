// The page's one state (AppState): what is shown (Screen), the session, the
// agent list, the message strip (Notice), and everything loaded for one agent
// selection (AgentState, kept apart per agent by scope.ts). The views
// (src/views/) render it; the feature modules (src/features/) change it; the
// composition root (src/app.ts) creates the one instance.
import { emptyAgentListing, type AgentListing } from './agentList';
import type { ApiError } from '../api/errors';
import type { SessionInfo } from '../api/session';
import type { Agent, Project, WorkspaceRef } from '../api/types';
import type * as ed from './editorState';
import type { FeatureNotices } from './features';
import { emptyListing, type Listing } from './paging';
import { ScopeManager } from './scope';
import { workspaceKey, type TreeState } from './tree';

export type Tab = 'projects' | 'global';

/** What the portal shows of usage: bytes and files per project, the projects volume. */
export interface UsageState {
  projects: Map<string, { bytes: number; files: number }>;
  volume: { size: number; free: number } | null;
}

/** Everything loaded for one agent selection; never shared with another. */
export interface AgentState {
  tab: Tab;
  projects: Listing<Project>;
  projectsLoading: boolean;
  projectsError: ApiError | null;
  /** Sizes of the listed projects and the volume (features/usage.ts); null until known. */
  usage: UsageState | null;
  selectedProject: string | null;
  trees: Map<string, TreeState>;
  file: ed.OpenFile | null;
  fileLoading: string | null;
  fileError: { path: string; ws: WorkspaceRef; error: ApiError } | null;
  /** Serial of the latest file open request: older responses are dropped. */
  fileRequest: number;
}

export type Screen =
  | { kind: 'loading' }
  | { kind: 'login'; message: string; busy: boolean }
  | { kind: 'no-access'; operator: string; signOutUrl?: string }
  | { kind: 'error'; message: string }
  | { kind: 'app' };

export interface Notice {
  kind: 'error' | 'info';
  text: string;
  id: number;
  action?: { label: string; testid: string; run: () => void };
}

export const GLOBAL: WorkspaceRef = { scope: 'GLOBAL' };

export const project = (name: string): WorkspaceRef => ({ scope: 'PROJECT', project_name: name });

export function freshAgentState(): AgentState {
  return {
    tab: 'projects',
    projects: emptyListing(),
    projectsLoading: false,
    projectsError: null,
    usage: null,
    selectedProject: null,
    trees: new Map(),
    file: null,
    fileLoading: null,
    fileError: null,
    fileRequest: 0,
  };
}


/** The tree on screen: Global's, or the selected project's (none while no project is selected). */
export function shownTree(st: AgentState): TreeState | undefined {
  if (st.tab === 'global') return st.trees.get(workspaceKey(GLOBAL));
  return st.selectedProject ? st.trees.get(workspaceKey(project(st.selectedProject))) : undefined;
}

/** Everything the page holds; one instance, shared by every feature module. */
export interface AppState {
  screen: Screen;
  /** Who is signed in (null on the login and no-access screens). */
  session: SessionInfo | null;
  agents: Agent[];
  /** Why the agent list could not be loaded (shown with Retry). */
  agentsError: ApiError | null;
  /** Every agent the page has been shown (the selection may be on no page on screen). */
  agentCache: Map<string, Agent>;
  /** The picker's search and its first page (agents is that page). */
  picker: AgentListing;
  /** The Agents page while it is shown (null: the workspace is shown). */
  agentsPage: AgentListing | null;
  agentsPageLoading: boolean;
  /** One scope per agent selection; its state is the selected agent's AgentState. */
  readonly scopes: ScopeManager<AgentState>;
  notice: Notice | null;
  /** Serial of the latest notice: a timer only clears the notice it was set for. */
  noticeSerial: number;
  /** data-key of the element that gets the focus after the next render. */
  focusAfterRender: string | null;
  /** >0 while the page is being brought to a URL's place: the URL is replaced, not pushed. */
  routing: number;
  /** Per agent ID: its features that are unavailable, and why (banner, state/features.ts). */
  featureNotices: Map<string, FeatureNotices>;
}

export function freshAppState(): AppState {
  return {
    screen: { kind: 'loading' },
    session: null,
    agents: [],
    agentsError: null,
    agentCache: new Map(),
    picker: emptyAgentListing(),
    agentsPage: null,
    agentsPageLoading: false,
    scopes: new ScopeManager<AgentState>(freshAgentState),
    notice: null,
    noticeSerial: 0,
    focusAfterRender: null,
    routing: 0,
    featureNotices: new Map(),
  };
}
