// One page of the agent list as the server pages it (ListAgents: page_size,
// cursor, query; total counts every match). The Agents page and the picker
// both hold one: the query, the page on screen, the cursors of the pages
// before it (Previous) and the next page's cursor (Next).
import type { Agent } from '../api/types';

export interface AgentPage {
  agents: Agent[];
  nextCursor: string;
  total: number;
}

export type FetchAgents = (query: string, cursor: string) => Promise<AgentPage>;

export interface AgentListing {
  query: string;
  /** The cursor the page on screen was fetched with ('' for the first page). */
  cursor: string;
  /** The cursors of the pages before it, oldest first. */
  previous: string[];
  page: AgentPage;
}

export const emptyAgentListing = (query = ''): AgentListing => ({ query, cursor: '', previous: [], page: { agents: [], nextCursor: '', total: 0 } });

/** The first page for query. */
export async function searchAgents(fetch: FetchAgents, query: string): Promise<AgentListing> {
  const q = query.trim();
  return { query: q, cursor: '', previous: [], page: await fetch(q, '') };
}

export const hasNext = (l: AgentListing) => l.page.nextCursor !== '';
export const hasPrevious = (l: AgentListing) => l.previous.length > 0;

/** The page after the one on screen (the same listing when there is none). */
export async function nextAgents(fetch: FetchAgents, l: AgentListing): Promise<AgentListing> {
  if (!hasNext(l)) return l;
  const page = await fetch(l.query, l.page.nextCursor);
  return { query: l.query, cursor: l.page.nextCursor, previous: [...l.previous, l.cursor], page };
}

/** The page before the one on screen (the same listing when there is none). */
export async function previousAgents(fetch: FetchAgents, l: AgentListing): Promise<AgentListing> {
  if (!hasPrevious(l)) return l;
  const cursor = l.previous[l.previous.length - 1] ?? '';
  const page = await fetch(l.query, cursor);
  return { query: l.query, cursor, previous: l.previous.slice(0, -1), page };
}

/** The position of the page on screen, e.g. "101–200 of 2,003" ("No agents match" when empty). */
export function rangeLabel(l: AgentListing, pageSize: number): string {
  if (l.page.agents.length === 0) return l.query ? 'No agents match' : 'No agents';
  const from = l.previous.length * pageSize + 1;
  const to = from + l.page.agents.length - 1;
  return `${from.toLocaleString('en')}–${to.toLocaleString('en')} of ${l.page.total.toLocaleString('en')}`;
}

/** The picker's hint under its first page: "1,900 more — refine the search" ('' when all are shown). */
export function moreLabel(l: AgentListing): string {
  const more = l.page.total - l.page.agents.length;
  return more > 0 ? `${more.toLocaleString('en')} more — refine the search` : '';
}

/** A clock for the debounce (injected; tests pass a fake). */
export interface Timers {
  set(fn: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

/** Calls fn with the latest value once ms have passed without another call. */
export function debouncer<T>(fn: (v: T) => void, ms: number, timers: Timers): (v: T) => void {
  let handle: unknown;
  return (v: T) => {
    if (handle !== undefined) timers.clear(handle);
    handle = timers.set(() => {
      handle = undefined;
      fn(v);
    }, ms);
  };
}

/** Relative time of an ISO timestamp against now, e.g. "5 min ago" ('' when unset or unreadable). */
export function sinceLabel(iso: string | undefined, now: number): string {
  if (!iso) return '';
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return '';
  const s = Math.max(0, Math.round((now - t) / 1000));
  if (s < 60) return 'just now';
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ago`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h} h ago`;
  return `${Math.floor(h / 24)} days ago`;
}

const STATES: Record<string, string> = {
  AGENT_STATE_READY: 'ready',
  AGENT_STATE_UNREACHABLE: 'unreachable',
  AGENT_STATE_NO_SIDECAR: 'no sidecar',
};
const SOURCES: Record<string, string> = { AGENT_SOURCE_STATIC: 'static', AGENT_SOURCE_DISCOVERED: 'discovered' };

export const stateLabel = (s: string | undefined) => STATES[s ?? ''] ?? 'unknown';
export const sourceLabel = (s: string | undefined) => SOURCES[s ?? ''] ?? 'unknown';
