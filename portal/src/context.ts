// The whole page as the views see it: the shell (features/ports.ts: the one
// app state, the API clients, the editor and the draft store, the
// render/notice/error callbacks) and every feature. src/app.ts, the
// composition root, is the one implementation. The features never import
// this file: each declares the narrow part of it that it uses, so the import
// graph has no circle (scripts/import-cycles.mjs checks that in npm test).
import type { Agents } from './features/agents';
import type { AgentsPage } from './features/agentsPage';
import type { CheckpointHooks } from './features/checkpoints';
import type { Conflicts } from './features/conflict';
import type { Editor } from './features/editor';
import type { LiveController } from './features/live';
import type { Shell } from './features/ports';
import type { Projects } from './features/projects';
import type { RecentlyDeleted } from './features/recentlyDeleted';
import type { Routing } from './features/routing';
import type { Search } from './features/search';
import type { Session } from './features/session';
import type { Tree } from './features/tree';
import type { TreeActions } from './features/treeActions';
import type { Upload } from './features/upload';

export interface AppContext extends Shell {
  readonly session: Session;
  readonly agents: Agents;
  readonly agentsPage: AgentsPage;
  readonly routing: Routing;
  readonly projects: Projects;
  readonly recentlyDeleted: RecentlyDeleted;
  readonly tree: Tree;
  readonly treeActions: TreeActions;
  readonly files: Editor;
  readonly conflicts: Conflicts;
  readonly checkpoints: CheckpointHooks;
  readonly live: LiveController;
  readonly search: Search;
  readonly upload: Upload;
}
