import { describe, expect, it } from 'vitest';
import { createApi } from './client';
import { ApiError } from './errors';

interface Seen {
  method: string;
  url: URL;
  csrf: string | null;
  body: unknown;
}

function fakeGateway(reply: (s: Seen) => Response) {
  const seen: Seen[] = [];
  const fetch = async (input: RequestInfo | URL, init?: RequestInit) => {
    const req = input instanceof Request ? input : new Request(input, init);
    const text = await req.text();
    const s = { method: req.method, url: new URL(req.url), csrf: req.headers.get('X-CSRF-Token'), body: text ? JSON.parse(text) : null };
    seen.push(s);
    return reply(s);
  };
  return { seen, fetch: fetch as typeof globalThis.fetch };
}

const ok = (body: unknown) => new Response(JSON.stringify(body), { status: 200, headers: { 'Content-Type': 'application/json' } });

describe('REST client (wire format of the generated contract)', () => {
  it('encodes the workspace as workspace.scope/workspace.project_name query parameters', async () => {
    const gw = fakeGateway(() => ok({ entries: [], next_cursor: '', directory_revision: 'r' }));
    const api = createApi({ csrf: () => 'tok', fetch: gw.fetch, baseUrl: 'http://gw.test' });
    await api.listEntries('codex-a', { scope: 'PROJECT', project_name: 'demo' }, 'src/lib', 'c1');
    const u = gw.seen[0]!.url;
    expect(u.pathname).toBe('/api/v1/agent-gateway/agents/codex-a/projects/entries');
    expect(u.searchParams.get('workspace.scope')).toBe('PROJECT');
    expect(u.searchParams.get('workspace.project_name')).toBe('demo');
    expect(u.searchParams.get('path')).toBe('src/lib');
    expect(u.searchParams.get('cursor')).toBe('c1');
    expect(u.searchParams.get('page_size')).toBe('100');
    await api.getFile('codex-a', { scope: 'GLOBAL' }, 'AGENTS.md');
    const g = gw.seen[1]!.url;
    expect(g.searchParams.get('workspace.scope')).toBe('GLOBAL');
    expect(g.searchParams.has('workspace.project_name')).toBe(false);
    expect(gw.seen.every((s) => s.csrf === null)).toBe(true); // reads carry no CSRF header
  });

  it('sends snake_case JSON bodies and the CSRF header on every state change', async () => {
    const gw = fakeGateway(() => ok({}));
    const api = createApi({ csrf: () => 'tok', fetch: gw.fetch, baseUrl: 'http://gw.test' });
    const ws = { scope: 'PROJECT' as const, project_name: 'demo' };
    await api.createProject('codex-a', 'demo');
    await api.createEntry('codex-a', ws, 'src', 'a.ts', 'ENTRY_TYPE_FILE');
    await api.updateFile('codex-a', ws, 'src/a.ts', 'text', 'rev1');
    await api.moveEntry('codex-a', ws, { path: 'src/a.ts', revision: 'rev2' }, 'lib/a.ts');
    await api.deleteEntry('codex-a', ws, { path: 'lib', revision: 'rev3' }, true);
    await api.deleteProject('codex-a', 'demo', 'demo');
    expect(gw.seen.map((s) => `${s.method} ${s.url.pathname}`)).toEqual([
      'POST /api/v1/agent-gateway/agents/codex-a/projects',
      'POST /api/v1/agent-gateway/agents/codex-a/projects/entries',
      'PUT /api/v1/agent-gateway/agents/codex-a/projects/files',
      'POST /api/v1/agent-gateway/agents/codex-a/projects/entries:move',
      'DELETE /api/v1/agent-gateway/agents/codex-a/projects/entries',
      'DELETE /api/v1/agent-gateway/agents/codex-a/projects/demo',
    ]);
    expect(gw.seen.every((s) => s.csrf === 'tok')).toBe(true);
    expect(gw.seen[1]!.body).toEqual({ workspace: ws, parent_path: 'src', name: 'a.ts', type: 'ENTRY_TYPE_FILE' });
    expect(gw.seen[2]!.body).toEqual({ workspace: ws, path: 'src/a.ts', content: 'text', expected_revision: 'rev1' });
    expect(gw.seen[3]!.body).toEqual({ workspace: ws, source_path: 'src/a.ts', destination_path: 'lib/a.ts', expected_revision: 'rev2' });
    const del = gw.seen[4]!.url.searchParams;
    expect([del.get('path'), del.get('expected_revision'), del.get('recursive')]).toEqual(['lib', 'rev3', 'true']);
    expect(gw.seen[5]!.url.searchParams.get('confirm_name')).toBe('demo');
  });

  it('turns error responses into ApiError with the ErrorInfo reason', async () => {
    const gw = fakeGateway(
      () =>
        new Response(
          JSON.stringify({
            code: 10,
            message: 'revision mismatch',
            details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'REVISION_MISMATCH', domain: 'workspace.agentworkspace.dev' }],
          }),
          { status: 409, headers: { 'Content-Type': 'application/json' } },
        ),
    );
    const api = createApi({ csrf: () => '', fetch: gw.fetch, baseUrl: 'http://gw.test' });
    const err = await api.updateFile('a', { scope: 'GLOBAL' }, 'AGENTS.md', 'x', 'r').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).status).toBe(409);
    expect((err as ApiError).reason).toBe('REVISION_MISMATCH');
    expect(gw.seen[0]!.csrf).toBeNull(); // no session token (trusted proxy): no header
  });

  it('reports a network failure as unavailable', async () => {
    const api = createApi({ csrf: () => '', baseUrl: 'http://gw.test', fetch: (async () => Promise.reject(new TypeError('failed'))) as typeof fetch });
    const err = (await api.listAgents().catch((e: unknown) => e)) as ApiError;
    expect(err.reason).toBe('NETWORK');
  });
});
