// The Agents page: every agent the gateway lists, searched (server-side,
// debounced) and paged with cursors (Previous / Next), each with its state,
// since when, source and whether project management is enabled. Opening one
// is the same as picking it. The view is views/agentList.ts.
import { asApiError, isUnauthenticated } from '../api/errors';
import type { AgentsPagePort, AgentsPort, Shell } from './ports';
import { debouncer, emptyAgentListing, nextAgents, previousAgents, searchAgents, type AgentListing } from '../state/agentList';

/** What the Agents page needs of the page (a narrow part of context.ts, ports.ts). */
export interface AgentsPageContext extends Pick<Shell, 'state' | 'update' | 'fail'> {
  readonly agents: Pick<AgentsPort, 'pages'>;
}

export const AGENTS_PAGE = 50;
const SEARCH_DELAY_MS = 250;

export class AgentsPage implements AgentsPagePort {
  readonly #c: AgentsPageContext;
  readonly #search: (q: string) => void;
  #serial = 0;

  constructor(c: AgentsPageContext) {
    this.#c = c;
    this.#search = debouncer((q: string) => void this.#load((f) => searchAgents(f, q)), SEARCH_DELAY_MS, {
      set: (fn, ms) => setTimeout(fn, ms),
      clear: (h) => clearTimeout(h as ReturnType<typeof setTimeout>),
    });
  }

  async show(): Promise<void> {
    const s = this.#c.state;
    s.agentsPage = emptyAgentListing();
    await this.#load((f) => searchAgents(f, ''));
  }

  hide(): void {
    this.#serial++;
    this.#c.state.agentsPage = null;
    this.#c.state.agentsPageLoading = false;
    this.#c.update();
  }

  search(query: string): void {
    this.#search(query);
  }

  async next(): Promise<void> {
    const l = this.#c.state.agentsPage;
    if (l) await this.#load((f) => nextAgents(f, l));
  }

  async previous(): Promise<void> {
    const l = this.#c.state.agentsPage;
    if (l) await this.#load((f) => previousAgents(f, l));
  }

  /** Runs one step of the listing; a later step (or leaving the page) drops an earlier one's answer. */
  async #load(step: (f: ReturnType<AgentsPageContext['agents']['pages']>) => Promise<AgentListing>): Promise<void> {
    const s = this.#c.state;
    if (!s.agentsPage) return;
    const serial = ++this.#serial;
    s.agentsPageLoading = true;
    this.#c.update();
    try {
      const l = await step(this.#c.agents.pages(AGENTS_PAGE));
      if (serial !== this.#serial || !s.agentsPage) return;
      s.agentsPage = l;
    } catch (err) {
      if (serial !== this.#serial) return;
      if (isUnauthenticated(err)) return this.#c.fail(err);
      this.#c.fail(asApiError(err), 'The agent list could not be loaded: ');
    } finally {
      if (serial === this.#serial) {
        s.agentsPageLoading = false;
        this.#c.update();
      }
    }
  }
}
