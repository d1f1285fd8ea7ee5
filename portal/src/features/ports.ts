// What the feature modules are handed. Shell is the page itself (the one app
// state, the API clients, the editor, the drafts and the render/notice/error
// callbacks); the ports are what each feature offers the others. A feature
// declares the narrow part it uses (Pick<…>) as its own context, so it never
// imports context.ts or another feature: context.ts (the whole page, which
// src/app.ts implements) imports the features, never the other way round.
// Only types live here; scripts/import-cycles.mjs keeps the import graph
// free of circles.
import type { CheckpointApi } from '../api/checkpoints';
import type { Api } from '../api/client';
import type { Agent, Entry, EntryType, GetFileResponse, WorkspaceRef } from '../api/types';
import type { FetchAgents } from '../state/agentList';
import type { AgentState, AppState, Notice, Tab } from '../state/appState';
import type { Drafts } from '../state/drafts';
import type * as ed from '../state/editorState';
import type { Feature } from '../state/features';
import type { Route } from '../state/route';
import type { AgentScope } from '../state/scope';
import type { TreeState } from '../state/tree';
import type { LazyEditor } from '../ui/lazyEditor';
import type { nothing, TemplateResult } from 'lit-html';

type Scope = AgentScope<AgentState>;

export interface Shell {
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
}

/** Signing in and out (session.ts). */
export interface SessionPort {
  reauthenticate(): Promise<boolean>;
  logout(): Promise<void>;
}

/** The agent list and selection (agents.ts). */
export interface AgentsPort {
  readonly current: Agent | undefined;
  load(): Promise<void>;
  select(agentId: string): void;
  /** Opens an agent (asks first when unsaved text would be lost); false when declined. */
  open(agentId: string): Promise<boolean>;
  search(query: string): void;
  /** A page fetcher for the agent list that keeps every agent it saw. */
  pages(pageSize: number): FetchAgents;
  change(select: HTMLSelectElement): Promise<void>;
}

/** The Agents page (agentsPage.ts). */
export interface AgentsPagePort {
  show(): Promise<void>;
  hide(): void;
  search(query: string): void;
  next(): Promise<void>;
  previous(): Promise<void>;
}

/** The URL of the page (routing.ts). */
export interface RoutingPort {
  syncUrl(replace?: boolean): void;
  apply(r: Route): Promise<void>;
}

/** The project list and tabs (projects.ts). */
export interface ProjectsPort {
  load(scope: Scope, more?: boolean): Promise<void>;
  select(name: string): Promise<void>;
  selectTab(tab: Tab): Promise<void>;
  /** Reloads the listed projects' sizes and the volume's usage (after a change the list does not show). */
  refreshUsage(scope: Scope): Promise<void>;
}

/** A workspace's file tree (tree.ts). */
export interface TreePort {
  reloadDir(scope: Scope, tree: TreeState, dir: string): Promise<void>;
  focusRow(tree: TreeState, key: string): void;
  refresh(scope: Scope, tree: TreeState): Promise<void>;
  view(scope: Scope, tree: TreeState, label: string): TemplateResult;
}

/** Creating, renaming, moving and deleting entries (treeActions.ts). */
export interface TreeActionsPort {
  afterMutation(scope: Scope, tree: TreeState, dirs: string[]): Promise<void>;
  menu(tree: TreeState, entry: Entry, anchor: HTMLElement, at?: { x: number; y: number }): void;
  newEntry(tree: TreeState, parent: string, type: EntryType): Promise<void>;
  create(scope: Scope, tree: TreeState, parent: string, name: string, type: EntryType): Promise<void>;
  newSkill(scope: Scope, tree: TreeState): Promise<void>;
  rename(tree: TreeState, entry: Entry): Promise<void>;
  delete(tree: TreeState, entry: Entry): Promise<void>;
}

/** Uploads into the shown workspace (upload.ts). */
export interface UploadPort {
  /** Opens the file (or folder) picker for dir. */
  pick(tree: TreeState, dir: string, folder: boolean): void;
  /** The tree's drag-and-drop handlers. */
  dropHandlers(tree: TreeState): { over: (e: DragEvent) => void; leave: (e: DragEvent) => void; drop: (e: DragEvent) => void };
  /** The folder a drag of files is over ('' the root), or null. */
  readonly dropTarget: string | null;
  /** The upload panel (nothing when empty). */
  view(): TemplateResult | typeof nothing;
}

/** The open file (editor.ts). */
export interface FilesPort {
  confirmDiscard(action: string): Promise<boolean>;
  flushDraft(): void;
  loadEditor(text: string, lang: Parameters<LazyEditor['load']>[1]): void;
  closeFile(st: AgentState): void;
  openFile(ws: WorkspaceRef, path: string, force?: boolean, listed?: Entry): Promise<void>;
  onEdit(text: string): void;
  save(): Promise<void>;
  reloadServerVersion(): Promise<void>;
  showLoaded(scope: Scope, r: GetFileResponse): void;
  refreshOpenFile(scope: Scope, f: ed.OpenFile): Promise<void>;
  view(st: AgentState): TemplateResult;
}

/** Where the Checkpoints panel opens (checkpoints.ts). */
export interface CheckpointsPort {
  open(ws: WorkspaceRef, onRestored: () => unknown, comparePath?: string): Promise<void>;
  openForTree(tree: TreeState, comparePath?: string): Promise<void>;
}

/** Recently deleted projects (recentlyDeleted.ts). */
export interface RecentlyDeletedPort {
  open(): Promise<void>;
  restore(name: string, checkpointId?: string): Promise<void>;
  /** A link named a project that is not there: say so, and offer Restore when it was deleted. */
  missingProject(name: string): Promise<void>;
}

/** A refused save's merge, and saving a deleted file again (conflict.ts). */
export interface ConflictsPort {
  resolve(): Promise<void>;
  saveAsNew(): Promise<void>;
}
