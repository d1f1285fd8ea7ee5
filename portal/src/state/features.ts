// Optional features of an agent's file service that may be unavailable
// while the files work (issue #23): the checkpoint store (a symlinked or
// foreign store) and live changes (the file watcher cannot start). The
// sidecar answers their calls with CHECKPOINTS_UNAVAILABLE /
// WATCH_UNAVAILABLE (REST 503) and retries by itself; the portal shows a
// banner for the selected agent until a call of the feature succeeds again.
import { asApiError, sanitize } from '../api/errors';

export type Feature = 'checkpoints' | 'watch';

/** Why each feature of one agent is unavailable (absent: available or unknown). */
export type FeatureNotices = Partial<Record<Feature, string>>;

const REASON_FEATURE: Record<string, Feature> = {
  CHECKPOINTS_UNAVAILABLE: 'checkpoints',
  WATCH_UNAVAILABLE: 'watch',
};

/** The feature an error says is unavailable, or null. */
export function unavailableFeature(err: unknown): Feature | null {
  return REASON_FEATURE[asApiError(err).reason] ?? null;
}

const LEAD: Record<Feature, string> = {
  checkpoints: 'Checkpoints are unavailable for this agent; deletes that would take an automatic checkpoint are refused.',
  watch: 'Live changes are unavailable for this agent; reload folders to see changes made elsewhere.',
};

const TAIL = 'Files can still be read and edited. The agent retries by itself.';

/** The banner text for feature: what is off, the server's reason, what still works. */
export function bannerText(feature: Feature, reason: string): string {
  const why = reason ? sanitize(reason) : '';
  return [LEAD[feature], why ? `Reason: ${/[.!?]$/.test(why) ? why : why + '.'}` : '', TAIL].filter(Boolean).join(' ');
}

/**
 * Records the outcome of a call of feature in notices: a failure naming the
 * feature sets its reason; a success (err null) clears it; any other error
 * says nothing about the feature. Returns whether notices changed.
 */
export function noteOutcome(notices: FeatureNotices, feature: Feature, err: unknown | null): boolean {
  if (err === null) {
    if (notices[feature] === undefined) return false;
    delete notices[feature];
    return true;
  }
  if (unavailableFeature(err) !== feature) return false;
  const reason = asApiError(err).message;
  if (notices[feature] === reason) return false;
  notices[feature] = reason;
  return true;
}
