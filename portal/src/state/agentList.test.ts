import { describe, expect, it } from 'vitest';
import type { Agent } from '../api/types';
import {
  debouncer,
  emptyAgentListing,
  hasNext,
  hasPrevious,
  moreLabel,
  nextAgents,
  previousAgents,
  rangeLabel,
  searchAgents,
  sinceLabel,
  stateLabel,
  type FetchAgents,
} from './agentList';

// A fake server paging like gateway/internal/mgmt/agentpage.go: sorted IDs,
// case-insensitive substring query, cursor = last ID of the previous page.
function server(ids: string[], size: number) {
  const calls: [string, string][] = [];
  const fetch: FetchAgents = async (query, cursor) => {
    calls.push([query, cursor]);
    const all = ids.filter((id) => id.toLowerCase().includes(query.toLowerCase())).sort();
    const start = cursor ? all.indexOf(cursor) + 1 : 0;
    const agents: Agent[] = all.slice(start, start + size).map((agent_id) => ({ agent_id }));
    const more = start + size < all.length;
    return { agents, nextCursor: more ? (agents[agents.length - 1]?.agent_id ?? '') : '', total: all.length };
  };
  return { fetch, calls };
}

const ids = Array.from({ length: 25 }, (_, i) => `agent-${String(i).padStart(2, '0')}`);
const names = (l: { page: { agents: Agent[] } }) => l.page.agents.map((a) => a.agent_id);

describe('agent list paging', () => {
  it('pages forward and back with cursors and keeps the position', async () => {
    const { fetch } = server(ids, 10);
    let l = await searchAgents(fetch, '');
    expect(names(l)[0]).toBe('agent-00');
    expect(hasPrevious(l)).toBe(false);
    expect(rangeLabel(l, 10)).toBe('1–10 of 25');
    l = await nextAgents(fetch, l);
    expect(names(l)[0]).toBe('agent-10');
    l = await nextAgents(fetch, l);
    expect(names(l)).toEqual(['agent-20', 'agent-21', 'agent-22', 'agent-23', 'agent-24']);
    expect(hasNext(l)).toBe(false);
    expect(rangeLabel(l, 10)).toBe('21–25 of 25');
    expect(await nextAgents(fetch, l)).toBe(l); // no page after the last
    l = await previousAgents(fetch, l);
    expect(names(l)[0]).toBe('agent-10');
    l = await previousAgents(fetch, l);
    expect(names(l)[0]).toBe('agent-00');
    expect(hasPrevious(l)).toBe(false);
    expect(await previousAgents(fetch, l)).toBe(l);
  });

  it('a search starts from the first page of its matches and keeps the query while paging', async () => {
    const { fetch, calls } = server([...ids, 'needle-1', 'Needle-2'], 1);
    let l = await searchAgents(fetch, '  needle ');
    expect(l.query).toBe('needle');
    expect(names(l)).toEqual(['Needle-2']);
    expect(moreLabel(l)).toBe('1 more — refine the search');
    l = await nextAgents(fetch, l);
    expect(names(l)).toEqual(['needle-1']);
    expect(calls.every(([q]) => q === 'needle')).toBe(true);
    expect(moreLabel(await searchAgents(fetch, 'needle-1'))).toBe('');
    expect(rangeLabel(await searchAgents(fetch, 'nothing'), 1)).toBe('No agents match');
    expect(rangeLabel(emptyAgentListing(), 1)).toBe('No agents');
  });
});

describe('debouncer', () => {
  it('calls once with the latest value after the quiet period', () => {
    let pending: (() => void) | null = null;
    let cleared = 0;
    const timers = { set: (fn: () => void) => (pending = fn), clear: () => cleared++ };
    const seen: string[] = [];
    const d = debouncer((v: string) => seen.push(v), 250, timers);
    d('a');
    d('ab');
    d('abc');
    expect(seen).toEqual([]);
    expect(cleared).toBe(2);
    (pending as unknown as () => void)();
    expect(seen).toEqual(['abc']);
  });
});

describe('labels', () => {
  it('says since when in relative time and names states', () => {
    const now = Date.parse('2026-12-02T10:00:00Z');
    expect(sinceLabel('2026-12-02T09:59:30Z', now)).toBe('just now');
    expect(sinceLabel('2026-12-02T09:55:00Z', now)).toBe('5 min ago');
    expect(sinceLabel('2026-12-02T07:00:00Z', now)).toBe('3 h ago');
    expect(sinceLabel('2026-11-25T10:00:00Z', now)).toBe('7 days ago');
    expect(sinceLabel(undefined, now)).toBe('');
    expect(sinceLabel('garbage', now)).toBe('');
    expect(stateLabel('AGENT_STATE_UNREACHABLE')).toBe('unreachable');
    expect(stateLabel(undefined)).toBe('unknown');
  });
});
