// The live-changes controller (live.ts) wired to the page: which scope and
// tree are on screen, when live changes apply (the app screen, an agent with
// a sidecar), and how a change reaches the tree and the open file.
import type { AppContext } from './context';
import { LiveController } from './live';
import { shownTree } from './state/appState';

export function createLive(c: AppContext): LiveController {
  return new LiveController({
    scope: () => c.state.scopes.current,
    tree: (st) => shownTree(st),
    enabled: () => c.state.screen.kind === 'app' && !!c.agents.current?.project_management_enabled,
    reloadDir: (scope, tree, dir) => c.tree.reloadDir(scope, tree, dir),
    getFile: (scope, ws, path) => scope.guard(c.api.getFile(scope.agentId, ws, path)),
    showLoaded: (scope, r) => c.files.showLoaded(scope, r),
    reloadServerVersion: () => c.files.reloadServerVersion(),
    notify: (kind, text) => c.notify(kind, text),
    watchOutcome: (agentId, err) => c.noteFeature(agentId, 'watch', err),
    update: () => c.update(),
  });
}
