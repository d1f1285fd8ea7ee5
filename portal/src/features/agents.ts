// The agent selector: the agent list, which agent is selected first (the
// URL's, else the default), and switching agents (a fresh scope: nothing of
// the previous agent stays on the page). The top bar is views/agents.ts.
import { asApiError, isUnauthenticated } from '../api/errors';
import type { Agent } from '../api/types';
import type { AgentsPort, FilesPort, ProjectsPort, RoutingPort, Shell } from './ports';
import { initialAgent } from '../state/agents';
import { parseRoute } from '../state/route';
import { closeMenu } from '../ui/menu';

/** What the agent selector needs of the page (a narrow part of context.ts, ports.ts). */
export interface AgentsContext extends Pick<Shell, 'state' | 'update' | 'fail' | 'editor' | 'api'> {
  readonly routing: Pick<RoutingPort, 'syncUrl' | 'apply'>;
  readonly projects: Pick<ProjectsPort, 'load'>;
  readonly files: Pick<FilesPort, 'loadEditor' | 'confirmDiscard'>;
}

export class Agents implements AgentsPort {
  readonly #c: AgentsContext;

  constructor(c: AgentsContext) {
    this.#c = c;
  }

  /** The selected agent. */
  get current(): Agent | undefined {
    const id = this.#c.state.scopes.current?.agentId;
    return this.#c.state.agents.find((a) => a.agent_id === id);
  }

  async load(): Promise<void> {
    const s = this.#c.state;
    s.agentsError = null;
    this.#c.update();
    try {
      const r = await this.#c.api.listAgents();
      s.agents = r.agents ?? [];
      void this.#c.editor.preload().catch(() => {}); // an admin: fetch CodeMirror while the projects load
      // The URL's agent when it is one of them (a deep link, a reload), else the default.
      const wanted = parseRoute(location.pathname);
      const first = s.agents.find((a) => a.agent_id === wanted.agent) ?? initialAgent(s.agents);
      if (first?.agent_id) {
        s.routing++;
        try {
          this.select(first.agent_id);
          if (first.agent_id === wanted.agent) await this.#c.routing.apply(wanted);
          this.#c.routing.syncUrl(true);
        } finally {
          s.routing--;
        }
      } else this.#c.update();
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

  select(agentId: string): void {
    closeMenu();
    const s = this.#c.state;
    s.notice = null;
    const scope = s.scopes.switchTo(agentId);
    this.#c.files.loadEditor('', 'plain'); // nothing of the previous agent stays in the editor
    const agent = s.agents.find((a) => a.agent_id === agentId);
    this.#c.update();
    if (agent?.project_management_enabled) void this.#c.projects.load(scope);
  }

  /** The selector changed: asks first when unsaved text would be lost (and puts the selector back if declined). */
  async change(select: HTMLSelectElement): Promise<void> {
    const next = select.value;
    const current = this.#c.state.scopes.current?.agentId ?? '';
    if (next === current) return;
    if (!(await this.#c.files.confirmDiscard('Switching the agent'))) {
      select.value = current;
      return;
    }
    this.select(next);
  }
}
