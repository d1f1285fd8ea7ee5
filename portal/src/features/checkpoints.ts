// Where the page opens the Checkpoints panel (checkpointPanel.ts): a
// workspace's Checkpoints button, a file's "Compare with checkpoint…", and
// the message after a project was deleted. After a restore the shown tree and
// the open file are refreshed (while the agent selection is still the same).
import { describeError } from '../api/errors';
import type { WorkspaceRef } from '../api/types';
import type { CheckpointsPort, Shell, TreePort } from './ports';
import type { TreeState } from '../state/tree';
import { openCheckpoints } from './checkpointPanel';

/** What the checkpoint hooks needs of the page (a narrow part of context.ts, ports.ts). */
export interface CheckpointsContext extends Pick<Shell, 'state' | 'notify' | 'ckpt'> {
  readonly tree: Pick<TreePort, 'refresh'>;
}

export class CheckpointHooks implements CheckpointsPort {
  readonly #c: CheckpointsContext;

  constructor(c: CheckpointsContext) {
    this.#c = c;
  }

  /** The Checkpoints panel of ws; onRestored runs after a restore. */
  async open(ws: WorkspaceRef, onRestored: () => unknown, comparePath?: string): Promise<void> {
    const scope = this.#c.state.scopes.current;
    if (!scope) return;
    await openCheckpoints({
      api: this.#c.ckpt,
      agentId: scope.agentId,
      ws,
      title: ws.scope === 'GLOBAL' ? 'Global' : `project ${ws.project_name ?? ''}`,
      ...(comparePath ? { comparePath } : {}),
      notify: (kind, text) => this.#c.notify(kind, text),
      describeError,
      onRestored: async () => {
        if (scope.alive) await onRestored();
      },
    });
  }

  /** The panel of tree's workspace; a restore refreshes the tree (and the open file). */
  openForTree(tree: TreeState, comparePath?: string): Promise<void> {
    return this.open(
      tree.workspace,
      async () => {
        const scope = this.#c.state.scopes.current;
        if (scope) await this.#c.tree.refresh(scope, tree);
      },
      comparePath,
    );
  }
}
