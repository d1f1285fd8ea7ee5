// The page's one state: what is shown (Screen), the message strip (Notice),
// and everything loaded for one agent selection (AgentState, kept apart per
// agent by scope.ts). The views (src/views/) render it; App (src/app.ts)
// changes it.
import type { ApiError } from '../api/errors';
import type { Project, WorkspaceRef } from '../api/types';
import type * as ed from './editorState';
import { emptyListing, type Listing } from './paging';
import type { TreeState } from './tree';

export type Tab = 'projects' | 'global';

/** Everything loaded for one agent selection; never shared with another. */
export interface AgentState {
  tab: Tab;
  projects: Listing<Project>;
  projectsLoading: boolean;
  projectsError: ApiError | null;
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
  | { kind: 'no-access'; operator: string }
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
    selectedProject: null,
    trees: new Map(),
    file: null,
    fileLoading: null,
    fileError: null,
    fileRequest: 0,
  };
}

