// Recently deleted: the agent's deleted projects that their automatic
// checkpoints can bring back (found without knowing their names), restored
// in one step, under their name or, when a project of that name exists now,
// under another; and what a deep link to a deleted project offers.
import { html } from 'lit-html';
import type { DeletedProject } from '../api/checkpoints';
import { asApiError } from '../api/errors';
import type { ProjectsPort, RecentlyDeletedPort, Shell } from './ports';
import { formatSize, formatTime } from '../state/format';
import { projectNameProblem } from '../state/names';
import { naturalCompare } from '../state/naturalSort';
import { choiceDialog, promptDialog } from '../ui/dialogs';

/** What Recently deleted needs of the page (a narrow part of context.ts, ports.ts). */
export interface RecentlyDeletedContext extends Pick<Shell, 'state' | 'ckpt' | 'notify' | 'fail' | 'succeeded'> {
  readonly projects: Pick<ProjectsPort, 'load' | 'select'>;
}

/** One line about a deleted project: when, by whom, how much. */
export function deletedLine(p: DeletedProject): string {
  const by = p.deleted_by ? ` by ${p.deleted_by}` : '';
  const files = p.file_count === 1 ? '1 file' : `${p.file_count ?? 0} files`;
  return `deleted ${formatTime(p.deleted_at)}${by} · ${files}, ${formatSize(p.size)}`;
}

export class RecentlyDeleted implements RecentlyDeletedPort {
  readonly #c: RecentlyDeletedContext;

  constructor(c: RecentlyDeletedContext) {
    this.#c = c;
  }

  async #list(agentId: string): Promise<DeletedProject[]> {
    const r = await this.#c.ckpt.listDeleted(agentId);
    return [...(r.projects ?? [])];
  }

  /** The Recently deleted list of the current agent, with Restore on each. */
  async open(): Promise<void> {
    const scope = this.#c.state.scopes.current;
    if (!scope) return;
    let items: DeletedProject[];
    try {
      items = await scope.guard(this.#list(scope.agentId));
    } catch (err) {
      return this.#c.fail(err, 'The deleted projects could not be listed.');
    }
    const chosen = await choiceDialog<DeletedProject>({
      title: 'Recently deleted projects',
      body: ['Projects deleted while automatic checkpoints were on, newest first. Restore brings one back as it was before the delete (without its Git history).'],
      empty: 'No deleted project can be restored: none was deleted with a checkpoint, or their checkpoints are gone.',
      choices: items.map((p) => ({
        value: p,
        label: 'Restore',
        testid: 'deleted-project',
        body: html`<strong data-testid="deleted-project-name">${p.project_name}</strong> <span class="muted">${deletedLine(p)}</span>`,
      })),
      testid: 'recently-deleted-dialog',
    });
    if (chosen && scope.alive) await this.restore(chosen.project_name ?? '', chosen.checkpoint_id ?? '');
  }

  /** Restores the deleted project name; when its name is taken now, offers another name. */
  async restore(name: string, checkpointId = ''): Promise<void> {
    const scope = this.#c.state.scopes.current;
    if (!scope) return;
    let as = '';
    for (;;) {
      try {
        await scope.guard(this.#c.ckpt.restoreDeleted(scope.agentId, name, { checkpointId, restoreAs: as }));
        break;
      } catch (err) {
        if (asApiError(err).status !== 409) return this.#c.fail(err, `Project ${name} was not restored.`);
        const taken = as || name;
        const next = await promptDialog({
          title: `A project named ${taken} exists`,
          label: 'Restore it as',
          value: `${name}-restored`,
          help: `Nothing was overwritten. Choose a new name for the deleted ${name}.`,
          confirmLabel: 'Restore',
          validate: (v) => (v === taken ? 'That name is taken.' : projectNameProblem(v)),
          testid: 'restore-as-dialog',
        });
        if (next === null || !scope.alive) return;
        as = next;
      }
    }
    this.#c.succeeded();
    const shown = as || name;
    this.#c.notify('info', `Project ${shown} was restored.`);
    await this.#c.projects.load(scope);
    await this.#c.projects.select(shown);
  }

  /** A link named a project that is not there: says whether it was deleted, and offers Restore. */
  async missingProject(name: string): Promise<void> {
    const scope = this.#c.state.scopes.current;
    if (!scope) return;
    let found: DeletedProject | undefined;
    try {
      found = (await scope.guard(this.#list(scope.agentId))).find((p) => naturalCompare(p.project_name ?? '', name) === 0);
    } catch {
      found = undefined; // no checkpoints: say only that it is not there
    }
    if (!scope.alive) return;
    if (!found) {
      this.#c.notify('error', `The link names project ${name}, which does not exist on ${scope.agentId}.`);
      return;
    }
    const id = found.checkpoint_id ?? '';
    this.#c.notify('error', `Project ${name} was ${deletedLine(found)}.`, {
      label: 'Restore',
      testid: 'restore-linked-project',
      run: () => void this.restore(name, id),
    });
  }
}
