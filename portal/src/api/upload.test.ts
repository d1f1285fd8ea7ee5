import { describe, expect, it } from 'vitest';
import { parseLimit, uploadLimit, uploadUrl } from './upload';

describe('upload URLs and the limit', () => {
  it('builds the REST URL with the workspace, path and if_exists', () => {
    const u = uploadUrl('codex-a', { scope: 'PROJECT', project_name: 'demo' }, 'a b/x (1).txt', { mode: 'fail' });
    const q = new URL(u, 'http://x').searchParams;
    expect(u.startsWith('/api/v1/agent-gateway/agents/codex-a/upload?')).toBe(true);
    expect([q.get('workspace.scope'), q.get('workspace.project_name'), q.get('path'), q.get('if_exists'), q.get('expected_revision')]).toEqual([
      'PROJECT',
      'demo',
      'a b/x (1).txt',
      'fail',
      null,
    ]);
    const r = new URL(uploadUrl('codex-a', { scope: 'GLOBAL' }, 'skills/s/a.md', { mode: 'replace', revision: 'R1' }), 'http://x').searchParams;
    expect([r.get('workspace.scope'), r.get('workspace.project_name'), r.get('if_exists'), r.get('expected_revision')]).toEqual(['GLOBAL', null, 'replace', 'R1']);
  });

  it.each([
    ['104857600', 104857600],
    [' 42 ', 42],
    ['0', null],
    ['-1', null],
    ['1e3', null],
    ['', null],
    [null, null],
  ])('parses X-Max-Upload-Size %s', (v, want) => expect(parseLimit(v)).toBe(want));

  it('reads the limit from the OPTIONS answer, and an error as an ApiError', async () => {
    const seen: string[] = [];
    const ok = (async (url: string, init: RequestInit) => {
      seen.push(`${init.method} ${url}`);
      return new Response(null, { status: 204, headers: { 'X-Max-Upload-Size': '4096' } });
    }) as unknown as typeof fetch;
    expect(await uploadLimit('codex-a', { scope: 'GLOBAL' }, ok)).toBe(4096);
    expect(seen).toEqual(['OPTIONS /api/v1/agent-gateway/agents/codex-a/upload?workspace.scope=GLOBAL']);
    const bad = (async () =>
      new Response(JSON.stringify({ code: 14, message: 'down', details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'SIDECAR_UNAVAILABLE' }] }), {
        status: 503,
      })) as unknown as typeof fetch;
    await expect(uploadLimit('codex-a', { scope: 'GLOBAL' }, bad)).rejects.toMatchObject({ status: 503, reason: 'SIDECAR_UNAVAILABLE' });
  });
});
