import { describe, expect, it } from 'vitest';
import { ApiError, describeError, describeGatewayError, isConflict, isStaleCursor, isUnavailable, sanitize } from './errors';

const status = (code: number, message: string, reason?: string) => ({
  code,
  message,
  details: reason ? [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason, domain: 'workspace.agentworkspace.dev' }] : [],
});

describe('ApiError', () => {
  it('reads the reason from google.rpc.ErrorInfo', () => {
    const e = ApiError.from(409, status(10, 'x', 'REVISION_MISMATCH'));
    expect(e.reason).toBe('REVISION_MISMATCH');
    expect(e.code).toBe(10);
    expect(isConflict(e)).toBe(true);
    expect(isStaleCursor(e)).toBe(false);
  });
  it('handles bodies that are not JSON', () => {
    const e = ApiError.from(502, '<html>bad gateway</html>');
    expect(e.reason).toBe('');
    expect(isUnavailable(e)).toBe(true);
  });
  it('classifies unavailable sidecars', () => {
    expect(isUnavailable(ApiError.from(503, status(14, 'sidecar unavailable', 'SIDECAR_UNAVAILABLE')))).toBe(true);
    expect(isUnavailable(ApiError.network())).toBe(true);
    expect(isUnavailable(ApiError.from(404, status(5, 'nf', 'NOT_FOUND')))).toBe(false);
  });
});

describe('describeError never shows endpoints or host paths', () => {
  it('uses the reason text when known', () => {
    expect(describeError(ApiError.from(503, status(14, 'dial tcp 127.0.0.1:9091: connection refused', 'SIDECAR_UNAVAILABLE')))).toBe(
      "The agent's file service is unavailable right now. Retry in a moment.",
    );
  });
  it('sanitises unknown server messages', () => {
    const msg = describeError(ApiError.from(500, status(2, 'open /data/projects/demo/x: failed at http://agent-a-sidecar:9092/x and 10.0.0.5:9091')));
    expect(msg).not.toMatch(/127\.0\.0\.1|10\.0\.0\.5|\/data\/projects|http:|:9092|:9091/);
  });
  it('sanitize keeps ordinary text', () => {
    expect(sanitize('name must not be empty')).toBe('name must not be empty');
    expect(sanitize('failed on localhost:8080 at /home/node/.codex/auth.json')).not.toMatch(/localhost|\/home/);
  });
});

describe('describeGatewayError', () => {
  it('blames the gateway, not a sidecar, for a 5xx from a proxy', () => {
    const text = describeGatewayError(ApiError.from(502, '<html>bad gateway at 10.0.0.7:8080</html>'));
    expect(text).toContain('gateway is not answering');
    expect(text).not.toContain('10.0.0.7');
  });
  it('says the gateway could not be reached when there was no answer', () => {
    expect(describeGatewayError(ApiError.network())).toContain('could not be reached');
  });
  it('falls back to the usual text for other errors', () => {
    expect(describeGatewayError(ApiError.from(500, status(13, 'boom')))).toBe(describeError(ApiError.from(500, status(13, 'boom'))));
  });
});
