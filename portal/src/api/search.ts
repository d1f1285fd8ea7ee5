// The search route (GET .../agents/{agent}/search): newline-delimited JSON,
// one {"result": SearchResult} per line, the summary last, {"error": Status}
// if the stream fails after its first line. A request is canceled with its
// AbortSignal (the portal aborts it when the user types on); the gateway
// then cancels the sidecar's walk.
import { ApiError } from './errors';
import type { SearchMatch, SearchResult, SearchSummary, WorkspaceRef } from './types';
import { wsQuery } from './client';

export interface SearchParams {
  ws: WorkspaceRef;
  query: string;
  mode: 'name' | 'content';
  regex?: boolean;
  caseSensitive?: boolean;
  include?: string[];
  exclude?: string[];
  maxResults?: number;
}

/** The query string of a search (exported for its unit test). */
export function searchQuery(p: SearchParams): URLSearchParams {
  const q = new URLSearchParams(wsQuery(p.ws) as Record<string, string>);
  q.set('query', p.query);
  q.set('mode', p.mode === 'name' ? 'SEARCH_MODE_NAME' : 'SEARCH_MODE_CONTENT');
  if (p.regex) q.set('regex', 'true');
  if (p.caseSensitive) q.set('case_sensitive', 'true');
  for (const g of p.include ?? []) q.append('include', g);
  for (const g of p.exclude ?? []) q.append('exclude', g);
  if (p.maxResults) q.set('max_results', String(p.maxResults));
  return q;
}

/**
 * Runs one search, calling onMatch for each match as it arrives; resolves
 * with the summary. Rejects with an ApiError (a refused request, a stream
 * that failed) or the AbortSignal's AbortError.
 */
export async function search(
  agentId: string,
  p: SearchParams,
  signal: AbortSignal,
  onMatch: (m: SearchMatch) => void,
  fetchFn: typeof fetch = fetch,
): Promise<SearchSummary | undefined> {
  const url = `/api/v1/agent-gateway/agents/${encodeURIComponent(agentId)}/search?${searchQuery(p).toString()}`;
  let resp: Response;
  try {
    resp = await fetchFn(url, { credentials: 'same-origin', signal });
  } catch (e) {
    if (signal.aborted) throw e;
    throw ApiError.network();
  }
  if (!resp.ok || !resp.body) {
    let body: unknown;
    try {
      body = await resp.json();
    } catch {
      body = undefined;
    }
    throw ApiError.from(resp.status, body);
  }
  const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  let summary: SearchSummary | undefined;
  for (;;) {
    const { value, done } = await reader.read();
    if (value) buf += value;
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (!line.trim()) continue;
      const msg = JSON.parse(line) as { result?: SearchResult; error?: unknown };
      if (msg.error) throw ApiError.from(200, msg.error);
      if (msg.result?.match) onMatch(msg.result.match);
      if (msg.result?.summary) summary = msg.result.summary;
    }
    if (done) return summary;
  }
}
