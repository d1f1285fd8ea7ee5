// The agent selector: the picker (a search, server-side and debounced, over
// the agent list's first page), which agent is selected first (the URL's,
// else the default), and switching agents (a fresh scope: nothing of the
// previous agent stays on the page). The top bar is views/agents.ts.
import { asApiError, isUnauthenticated } from '../api/errors';
import type { Agent } from '../api/types';
import type { AgentsPort, FilesPort, ProjectsPort, RoutingPort, Shell } from './ports';
import { initialAgent } from '../state/agents';
import { debouncer, searchAgents, type AgentPage, type FetchAgents } from '../state/agentList';
import { parseRoute } from '../state/route';
import { closeMenu } from '../ui/menu';

/** What the agent selector needs of the page (a narrow part of context.ts, ports.ts). */
export interface AgentsContext extends Pick<Shell, 'state' | 'update' | 'fail' | 'editor' | 'api' | 'notify'> {
  readonly routing: Pick<RoutingPort, 'syncUrl' | 'apply'>;
  readonly projects: Pick<ProjectsPort, 'load'>;
  readonly files: Pick<FilesPort, 'loadEditor' | 'confirmDiscard'>;
}

/** The picker's page: what a search shows at once. */
export const PICKER_PAGE = 50;
const SEARCH_DELAY_MS = 250;

export class Agents implements AgentsPort {
  readonly #c: AgentsContext;
  readonly #search: (q: string) => void;
  #searchSerial = 0;

  constructor(c: AgentsContext) {
    this.#c = c;
    this.#search = debouncer((q: string) => void this.#runSearch(q), SEARCH_DELAY_MS, {
      set: (fn, ms) => setTimeout(fn, ms),
      clear: (h) => clearTimeout(h as ReturnType<typeof setTimeout>),
    });
  }

  /** The selected agent. */
  get current(): Agent | undefined {
    const id = this.#c.state.scopes.current?.agentId;
    return id === undefined ? undefined : this.#c.state.agentCache.get(id);
  }

  /** A page fetcher of size pageSize that remembers every agent it saw. */
  pages(pageSize: number): FetchAgents {
    return async (query, cursor): Promise<AgentPage> => {
      const r = await this.#c.api.listAgents({ query, cursor, pageSize });
      const agents = r.agents ?? [];
      for (const a of agents) if (a.agent_id) this.#c.state.agentCache.set(a.agent_id, a);
      return { agents, nextCursor: r.next_cursor ?? '', total: r.total ?? agents.length };
    };
  }

  /** The agent with exactly this ID, from the cache or a search ('' query never). */
  async #find(id: string): Promise<Agent | undefined> {
    if (!id) return undefined;
    const cached = this.#c.state.agentCache.get(id);
    if (cached) return cached;
    const l = await searchAgents(this.pages(PICKER_PAGE), id);
    return l.page.agents.find((a) => a.agent_id === id);
  }

  async load(): Promise<void> {
    const s = this.#c.state;
    s.agentsError = null;
    this.#c.update();
    try {
      s.picker = await searchAgents(this.pages(PICKER_PAGE), '');
      s.agents = s.picker.page.agents;
      void this.#c.editor.preload().catch(() => {}); // an admin: fetch CodeMirror while the projects load
      // The URL's agent when there is one (a deep link, a reload; maybe not on the first page), else the default.
      const wanted = parseRoute(location.pathname);
      const linked = await this.#find(wanted.agent);
      const first = linked ?? initialAgent(s.agents);
      if (first?.agent_id) await this.#selectFirst(first.agent_id, wanted);
      else this.#c.update();
      // A link to an agent this gateway does not have: say so rather than show another one without a word.
      if (wanted.agent && !linked) {
        const shown = first?.agent_id ? `; showing ${first.agent_id} instead` : '';
        this.#c.notify('error', `The link names agent ${wanted.agent}, which this gateway does not have (or you cannot see)${shown}.`);
      }
    } catch (err) {
      if (isUnauthenticated(err)) return this.#c.fail(err);
      if (asApiError(err).status === 403) {
        s.screen = { kind: 'no-access', operator: s.session?.operator ?? '' };
        this.#c.update();
        return;
      }
      s.agentsError = asApiError(err);
      this.#c.update();
    }
  }

  async #selectFirst(id: string, wanted: ReturnType<typeof parseRoute>): Promise<void> {
    const s = this.#c.state;
    s.routing++;
    try {
      this.select(id);
      if (id === wanted.agent) await this.#c.routing.apply(wanted);
      this.#c.routing.syncUrl(true);
    } finally {
      s.routing--;
    }
  }

  /** The picker's search box changed: searches once typing pauses. */
  search(query: string): void {
    this.#search(query);
  }

  async #runSearch(query: string): Promise<void> {
    const s = this.#c.state;
    const serial = ++this.#searchSerial;
    try {
      const l = await searchAgents(this.pages(PICKER_PAGE), query);
      if (serial !== this.#searchSerial) return; // a later search answered, or will
      s.picker = l;
      s.agents = l.page.agents;
      this.#c.update();
    } catch (err) {
      if (serial !== this.#searchSerial) return;
      this.#c.fail(err, 'The agent search failed: ');
    }
  }

  select(agentId: string): void {
    closeMenu();
    const s = this.#c.state;
    s.notice = null;
    s.agentsPage = null;
    const scope = s.scopes.switchTo(agentId);
    this.#c.files.loadEditor('', 'plain'); // nothing of the previous agent stays in the editor
    const agent = s.agentCache.get(agentId);
    this.#c.update();
    if (agent?.project_management_enabled) void this.#c.projects.load(scope);
  }

  /** Opens agentId (the picker, the Agents page): asks first when unsaved text would be lost. */
  async open(agentId: string): Promise<boolean> {
    const s = this.#c.state;
    const current = s.scopes.current?.agentId ?? '';
    if (agentId === current) {
      s.agentsPage = null;
      this.#c.update();
      return true;
    }
    if (!(await this.#c.files.confirmDiscard('Switching the agent'))) return false;
    this.select(agentId);
    return true;
  }

  /** The selector changed: asks first when unsaved text would be lost (and puts the selector back if declined). */
  async change(select: HTMLSelectElement): Promise<void> {
    const current = this.#c.state.scopes.current?.agentId ?? '';
    if (select.value === current) return;
    if (!(await this.open(select.value))) select.value = current;
  }
}
