// Agent scoping: every piece of loaded state belongs to exactly one agent
// selection. Switching agents starts a new scope; responses that arrive for an
// older scope are dropped, so the previous agent's data can never be shown.

export class StaleScopeError extends Error {
  constructor() {
    super('response belongs to a previous agent selection');
    this.name = 'StaleScopeError';
  }
}

export class AgentScope<S> {
  readonly agentId: string;
  readonly serial: number;
  /** The state that belongs to this agent selection only. */
  readonly state: S;
  #alive = true;

  constructor(agentId: string, serial: number, state: S) {
    this.agentId = agentId;
    this.serial = serial;
    this.state = state;
  }

  get alive(): boolean {
    return this.#alive;
  }

  end(): void {
    this.#alive = false;
  }

  /** Resolves like p while this scope is current; rejects with StaleScopeError otherwise. */
  async guard<T>(p: Promise<T>): Promise<T> {
    try {
      const v = await p;
      if (!this.#alive) throw new StaleScopeError();
      return v;
    } catch (err) {
      if (!this.#alive) throw new StaleScopeError();
      throw err;
    }
  }
}

export class ScopeManager<S> {
  #serial = 0;
  #current: AgentScope<S> | null = null;
  readonly #fresh: (agentId: string) => S;

  /** fresh builds the empty per-agent state; it must not share objects between calls. */
  constructor(fresh: (agentId: string) => S) {
    this.#fresh = fresh;
  }

  get current(): AgentScope<S> | null {
    return this.#current;
  }

  /** Ends the current scope and starts an empty one for agentId (even when it is the same agent). */
  switchTo(agentId: string): AgentScope<S> {
    this.#current?.end();
    this.#current = new AgentScope(agentId, ++this.#serial, this.#fresh(agentId));
    return this.#current;
  }

  clear(): void {
    this.#current?.end();
    this.#current = null;
  }
}

export function isStale(err: unknown): boolean {
  return err instanceof StaleScopeError;
}
