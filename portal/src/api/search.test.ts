import { describe, expect, it } from 'vitest';
import { ApiError } from './errors';
import { search, searchQuery } from './search';
import type { SearchMatch } from './types';

const ws = { scope: 'PROJECT' as const, project_name: 'demo' };

function streaming(lines: string[], status = 200): typeof fetch {
  return (async () => {
    const enc = new TextEncoder();
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        // Split mid-line: the parser must join chunks.
        const all = lines.join('');
        c.enqueue(enc.encode(all.slice(0, 7)));
        c.enqueue(enc.encode(all.slice(7)));
        c.close();
      },
    });
    return new Response(body, { status, headers: { 'Content-Type': 'application/x-ndjson' } });
  }) as typeof fetch;
}

describe('search', () => {
  it('builds the query of the REST route', () => {
    const q = searchQuery({ ws, query: 'a b', mode: 'content', regex: true, caseSensitive: true, include: ['*.go', 'src/**'], exclude: ['x'] });
    expect(q.get('workspace.scope')).toBe('PROJECT');
    expect(q.get('workspace.project_name')).toBe('demo');
    expect(q.get('mode')).toBe('SEARCH_MODE_CONTENT');
    expect(q.getAll('include')).toEqual(['*.go', 'src/**']);
    expect(q.get('regex')).toBe('true');
  });

  it('streams matches and returns the summary', async () => {
    const got: SearchMatch[] = [];
    const sum = await search(
      'codex-a',
      { ws, query: 'x', mode: 'content' },
      new AbortController().signal,
      (m) => got.push(m),
      streaming(['{"result":{"match":{"path":"a.go","line":3}}}\n', '{"result":{"match":{"path":"b.go","line":1}}}\n', '{"result":{"summary":{"results":2,"truncated":""}}}\n']),
    );
    expect(got.map((m) => m.path)).toEqual(['a.go', 'b.go']);
    expect(sum?.results).toBe(2);
  });

  it('turns an error line and a refused request into ApiErrors', async () => {
    const err = '{"error":{"code":13,"message":"boom","details":[]}}\n';
    await expect(search('codex-a', { ws, query: 'x', mode: 'name' }, new AbortController().signal, () => {}, streaming([err]))).rejects.toBeInstanceOf(ApiError);
    const bad = streaming(['{"code":3,"message":"query is not a valid RE2 regular expression","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"INVALID_ARGUMENT"}]}'], 400);
    await expect(search('codex-a', { ws, query: '(', mode: 'content' }, new AbortController().signal, () => {}, bad)).rejects.toMatchObject({ status: 400, reason: 'INVALID_ARGUMENT' });
  });
});
