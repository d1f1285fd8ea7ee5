// The override for a delete whose automatic checkpoint does not fit in the
// checkpoint store (reason CHECKPOINT_LIMIT): the portal offers to delete
// without a checkpoint, behind a second explicit confirmation that says the
// delete then cannot be undone, and retries with skip_checkpoint=true. The
// gateway audits such a delete as skip_checkpoint. The same override is
// offered when the agent's checkpoint store cannot be used at all
// (CHECKPOINTS_UNAVAILABLE, issue #23): the delete is refused rather than
// done without its safety net, unless the user says so twice.
import { html } from 'lit-html';
import { asApiError } from '../api/errors';
import { confirmDialog } from '../ui/dialogs';

/** True when err is a delete refused because its checkpoint did not fit. */
export function isCheckpointLimit(err: unknown): boolean {
  return asApiError(err).reason === 'CHECKPOINT_LIMIT';
}

/**
 * Runs del(false); when that fails with CHECKPOINT_LIMIT (or
 * CHECKPOINTS_UNAVAILABLE) and the user
 * confirms twice, runs del(true) and resolves with its result. Any other
 * error, or the user declining, rejects with the first error (the caller
 * reports it as usual).
 */
export async function deleteWithOverride<T>(what: string, del: (skipCheckpoint: boolean) => Promise<T>): Promise<T> {
  try {
    return await del(false);
  } catch (err) {
    const unusable = asApiError(err).reason === 'CHECKPOINTS_UNAVAILABLE';
    if (!isCheckpointLimit(err) && !unusable) throw err;
    const offer = await confirmDialog({
      title: unusable ? 'Checkpoints are unavailable' : 'The checkpoint store is full',
      body: unusable
        ? [
            html`The automatic checkpoint of ${what}, taken before it is deleted, cannot be taken: the agent's checkpoint store
              cannot be used right now, so nothing was deleted.`,
            html`Wait until checkpoints are back (the agent retries by itself), or delete without a checkpoint.`,
          ]
        : [
            html`The automatic checkpoint of ${what}, taken before it is deleted, does not fit in the checkpoint store, so nothing
              was deleted.`,
            html`Delete older checkpoints (Checkpoints…) and try again, or delete without a checkpoint.`,
          ],
      confirmLabel: 'Delete without a checkpoint',
      danger: true,
      testid: 'delete-override-dialog',
    });
    if (!offer) throw err;
    const sure = await confirmDialog({
      title: 'Delete without a checkpoint?',
      body: [html`No checkpoint is taken of ${what}: <strong>the delete then cannot be undone</strong>, not even from Checkpoints.`],
      confirmLabel: 'Delete permanently, no checkpoint',
      danger: true,
      testid: 'delete-override-confirm-dialog',
    });
    if (!sure) throw err;
    return del(true);
  }
}
