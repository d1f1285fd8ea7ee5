// Live changes (issue #16): the gateway's Server-Sent Events stream
// GET /api/v1/agent-gateway/agents/{agent_id}/watch, one per agent and
// workspace, opened with the set of directories the tree shows. EventSource
// sends the session cookie (same origin); the stream is a GET, so no CSRF
// token is needed. Reconnects are ours (EventSource gives up on an HTTP
// error such as 429 or 503): exponential backoff with jitter, resuming from the
// last event id so that nothing is lost, or the server says RESYNC.
import { ApiError } from './errors';
import type { Entry, WorkspaceRef } from './types';

/**
 * One event, as the gateway marshals workspace.v1.WatchEvent
 * (contracts/proto/workspace/v1/watch.proto). SSE is outside the OpenAPI
 * document, so this mirror of the message is written here; enum values are
 * the proto names.
 */
export interface WatchEvent {
  id?: string;
  kind?:
    | 'WATCH_EVENT_KIND_READY'
    | 'WATCH_EVENT_KIND_CREATED'
    | 'WATCH_EVENT_KIND_MODIFIED'
    | 'WATCH_EVENT_KIND_REMOVED'
    | 'WATCH_EVENT_KIND_RENAMED'
    | 'WATCH_EVENT_KIND_DIRECTORY'
    | 'WATCH_EVENT_KIND_RESYNC';
  workspace?: WorkspaceRef;
  directory?: string;
  path?: string;
  from_path?: string;
  entry?: Entry;
  reason?: 'RESYNC_REASON_OVERFLOW' | 'RESYNC_REASON_LIMIT' | 'RESYNC_REASON_GAP' | 'RESYNC_REASON_GONE';
  directories?: string[];
}

export function watchUrl(agentId: string, ws: WorkspaceRef, dirs: string[], resumeAfter: string): string {
  const q = new URLSearchParams();
  q.set('workspace.scope', ws.scope === 'GLOBAL' ? 'GLOBAL' : 'PROJECT');
  if (ws.scope !== 'GLOBAL') q.set('workspace.project_name', ws.project_name ?? '');
  for (const d of dirs) q.append('directory', d);
  if (resumeAfter) q.set('resume_after', resumeAfter);
  return `/api/v1/agent-gateway/agents/${encodeURIComponent(agentId)}/watch?${q.toString()}`;
}

/**
 * How long a stream must stay up before the backoff starts again from
 * 0.5 s: a stream that ends right after READY (a gateway that cannot keep
 * it, a proxy cutting it) must not reconnect every half second.
 */
export const STABLE_AFTER_MS = 30_000;

/** Delay before reconnect attempt n (0-based): 0.5 s doubling to 30 s, ±20 % jitter. */
export function backoffDelay(attempt: number, random: () => number = Math.random): number {
  const base = Math.min(30_000, 500 * 2 ** Math.min(attempt, 16));
  return Math.round(base * (0.8 + 0.4 * random()));
}

export type StreamStatus =
  | { kind: 'off' }
  | { kind: 'connecting' }
  | { kind: 'live' }
  /** Not connected since `since` (ms): changes since then are not shown yet. */
  | { kind: 'reconnecting'; since: number; attempt: number };

export interface StreamHandlers {
  event: (ev: WatchEvent) => void;
  status: (s: StreamStatus) => void;
  /**
   * Why a lost stream's URL answers with an HTTP error (probeStream): for
   * example 503 WATCH_UNAVAILABLE while the agent's file watcher cannot
   * start. EventSource itself hides an error's status and body.
   */
  failed?: (err: ApiError) => void;
}

/**
 * Asks url once with fetch and returns its error answer as an ApiError, or
 * null when it answers 200 (the stream is dropped at once) or not at all.
 */
export async function probeStream(url: string, f: typeof fetch = (u, i) => fetch(u, i)): Promise<ApiError | null> {
  const ctl = new AbortController();
  try {
    const r = await f(url, { credentials: 'same-origin', signal: ctl.signal, headers: { Accept: 'text/event-stream' } });
    if (r.ok) return null;
    let body: unknown = null;
    try {
      body = await r.json();
    } catch {
      // not JSON: the status alone
    }
    return ApiError.from(r.status, body);
  } catch {
    return null;
  } finally {
    ctl.abort();
  }
}

type ESFactory = (url: string) => EventSource;

/** One subscription: opens, reconnects with backoff and resumes until closed. */
export class LiveStream {
  readonly #url: (resume: string) => string;
  readonly #h: StreamHandlers;
  readonly #make: ESFactory;
  #es: EventSource | null = null;
  #timer: ReturnType<typeof setTimeout> | null = null;
  /** Resets the backoff once the current connection stayed up STABLE_AFTER_MS. */
  #stable: ReturnType<typeof setTimeout> | null = null;
  #attempt = 0;
  #since = 0;
  #closed = false;
  /** The last event id received: where a reconnect resumes. */
  lastId: string;
  /** The id the current connection resumed from ('' for a fresh subscription). */
  resumedFrom = '';

  readonly #probe: (url: string) => Promise<ApiError | null>;

  constructor(
    url: (resume: string) => string,
    resumeFrom: string,
    h: StreamHandlers,
    make: ESFactory = (u) => new EventSource(u),
    probe: (url: string) => Promise<ApiError | null> = (u) => probeStream(u),
  ) {
    this.#url = url;
    this.#h = h;
    this.#make = make;
    this.#probe = probe;
    this.lastId = resumeFrom;
    // Not from the constructor: the handlers may refer to this stream.
    queueMicrotask(() => this.#open());
  }

  #open(): void {
    if (this.#closed) return;
    if (this.#attempt === 0) this.#h.status({ kind: 'connecting' });
    this.resumedFrom = this.lastId;
    const es = this.#make(this.#url(this.lastId));
    this.#es = es;
    es.addEventListener('change', (m) => {
      if (this.#es !== es) return;
      const msg = m as MessageEvent<string>;
      let ev: WatchEvent;
      try {
        ev = JSON.parse(msg.data) as WatchEvent;
      } catch {
        return;
      }
      if (ev.id) this.lastId = ev.id;
      if (ev.kind === 'WATCH_EVENT_KIND_READY') {
        this.#since = 0;
        this.#h.status({ kind: 'live' });
        // The backoff starts again only once this connection proved stable.
        if (this.#stable) clearTimeout(this.#stable);
        this.#stable = setTimeout(() => {
          this.#stable = null;
          if (this.#es === es) this.#attempt = 0;
        }, STABLE_AFTER_MS);
      }
      this.#h.event(ev);
    });
    // The gateway or the sidecar ended the stream (restart): resume at once-ish.
    es.addEventListener('end', () => this.#lost(es));
    es.addEventListener('error', () => this.#lost(es));
  }

  #lost(es: EventSource): void {
    if (this.#es !== es || this.#closed) return;
    es.close();
    this.#es = null;
    const failed = this.#h.failed;
    if (failed) {
      void this.#probe(this.#url(this.lastId)).then((err) => {
        if (err && !this.#closed) failed(err);
      });
    }
    if (this.#stable) clearTimeout(this.#stable);
    this.#stable = null;
    if (!this.#since) this.#since = Date.now();
    const attempt = this.#attempt++;
    this.#h.status({ kind: 'reconnecting', since: this.#since, attempt: this.#attempt });
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.#open();
    }, backoffDelay(attempt));
  }

  close(): void {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    if (this.#stable) clearTimeout(this.#stable);
    this.#es?.close();
    this.#es = null;
  }
}
