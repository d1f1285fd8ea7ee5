// The live-changes controller (live.ts) wired to the page: which scope and
// tree are on screen, when live changes apply (the app screen, an agent with
// a sidecar), and how a change reaches the tree and the open file.
import { shownTree } from '../state/appState';
import { LiveController } from './live';
import type { AgentsPort, ConflictsPort, FilesPort, Shell, TreePort } from './ports';

/** What live changes need of the page (a narrow part of context.ts, ports.ts). */
export interface LiveContext extends Pick<Shell, 'state' | 'api' | 'update' | 'notify' | 'noteFeature'> {
  readonly agents: Pick<AgentsPort, 'current'>;
  readonly tree: Pick<TreePort, 'reloadDir'>;
  readonly files: Pick<FilesPort, 'showLoaded' | 'reloadServerVersion'>;
  readonly conflicts: Pick<ConflictsPort, 'saveAsNew'>;
}

export function createLive(c: LiveContext): LiveController {
  return new LiveController({
    scope: () => c.state.scopes.current,
    tree: (st) => shownTree(st),
    enabled: () => c.state.screen.kind === 'app' && !!c.agents.current?.project_management_enabled,
    reloadDir: (scope, tree, dir) => c.tree.reloadDir(scope, tree, dir),
    getFile: (scope, ws, path) => scope.guard(c.api.getFile(scope.agentId, ws, path)),
    showLoaded: (scope, r) => c.files.showLoaded(scope, r),
    reloadServerVersion: () => c.files.reloadServerVersion(),
    saveAsNew: () => c.conflicts.saveAsNew(),
    notify: (kind, text) => c.notify(kind, text),
    watchOutcome: (agentId, err) => c.noteFeature(agentId, 'watch', err),
    update: () => c.update(),
  });
}
