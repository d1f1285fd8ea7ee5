import { describe, expect, it } from 'vitest';
import { ApiError, describeError, isUnavailable } from '../api/errors';
import { LiveStream, probeStream } from '../api/watch';
import { bannerText, noteOutcome, unavailableFeature, type FeatureNotices } from './features';

const ckErr = (msg: string) =>
  ApiError.from(503, {
    code: 14,
    message: msg,
    details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'CHECKPOINTS_UNAVAILABLE', domain: 'workspace.agentworkspace.dev' }],
  });
const watchErr = ApiError.from(503, {
  code: 14,
  message: 'live changes are not available: the file watcher cannot start',
  details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'WATCH_UNAVAILABLE' }],
});

describe('feature notices', () => {
  it('names the feature of its reason only', () => {
    expect(unavailableFeature(ckErr('x'))).toBe('checkpoints');
    expect(unavailableFeature(watchErr)).toBe('watch');
    expect(unavailableFeature(ApiError.from(503, { code: 14, message: 'down' }))).toBeNull();
    expect(unavailableFeature(new Error('x'))).toBeNull();
  });

  it('a feature reason is not the sidecar being down', () => {
    expect(isUnavailable(ckErr('x'))).toBe(false);
    expect(isUnavailable(watchErr)).toBe(false);
    expect(describeError(ckErr('x'))).toMatch(/Checkpoints are unavailable.*Files still work/);
  });

  it('sets the reason on failure, clears it on success, ignores other errors', () => {
    const n: FeatureNotices = {};
    expect(noteOutcome(n, 'checkpoints', ckErr('the checkpoint store is not usable: it is a symbolic link'))).toBe(true);
    expect(n.checkpoints).toBe('the checkpoint store is not usable: it is a symbolic link');
    expect(noteOutcome(n, 'checkpoints', ckErr('the checkpoint store is not usable: it is a symbolic link'))).toBe(false);
    expect(noteOutcome(n, 'checkpoints', ApiError.from(409, { code: 10, message: 'conflict' }))).toBe(false);
    expect(noteOutcome(n, 'watch', ckErr('x'))).toBe(false); // not the watch's reason
    expect(n.watch).toBeUndefined();
    expect(noteOutcome(n, 'checkpoints', null)).toBe(true);
    expect(n.checkpoints).toBeUndefined();
    expect(noteOutcome(n, 'checkpoints', null)).toBe(false);
  });

  it('banner says what is off, why, and that files work, without host paths', () => {
    const t = bannerText('checkpoints', 'the checkpoint store is not usable: /data/projects/.agent-checkpoints is a symbolic link');
    expect(t).toContain('Checkpoints are unavailable for this agent');
    expect(t).toContain('Reason: the checkpoint store is not usable:');
    expect(t).not.toContain('/data/projects');
    expect(t).toContain('Files can still be read and edited.');
    expect(bannerText('watch', '')).toMatch(/^Live changes are unavailable.*retries by itself\.$/);
  });
});

describe('watch stream probe', () => {
  it('reads the error answer of the stream URL', async () => {
    const f = (async () =>
      new Response(JSON.stringify({ code: 14, message: 'm', details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'WATCH_UNAVAILABLE' }] }), {
        status: 503,
      })) as typeof fetch;
    const err = await probeStream('/watch', f);
    expect(err?.status).toBe(503);
    expect(err?.reason).toBe('WATCH_UNAVAILABLE');
    const ok = (async () => new Response('', { status: 200 })) as typeof fetch;
    expect(await probeStream('/watch', ok)).toBeNull();
    const down = (async () => {
      throw new TypeError('offline');
    }) as typeof fetch;
    expect(await probeStream('/watch', down)).toBeNull();
  });

  it('a lost stream hands the probe answer to failed', async () => {
    let es: { fire: (n: string) => void } | null = null;
    const failures: ApiError[] = [];
    const probed: string[] = [];
    const s = new LiveStream(
      () => '/watch?x',
      '',
      { event: () => {}, status: () => {}, failed: (e) => failures.push(e) },
      () => {
        const l = new Map<string, () => void>();
        es = { fire: (n) => l.get(n)?.() };
        return { addEventListener: (n: string, fn: () => void) => l.set(n, fn), close: () => {} } as unknown as EventSource;
      },
      async (u) => (probed.push(u), watchErr),
    );
    await Promise.resolve();
    es!.fire('error');
    await new Promise((r) => setTimeout(r, 0));
    s.close();
    expect(probed).toEqual(['/watch?x']);
    expect(failures.map((e) => e.reason)).toEqual(['WATCH_UNAVAILABLE']);
  });
});
