// Unsaved editor text kept in the browser's storage, so that nothing typed is
// lost when the session ends, the gateway restarts or the tab is closed. One
// draft per agent, workspace and path, remembering the revision it was typed
// on: restored onto that revision a save goes through as usual, and if the
// file has changed since, the save takes the normal conflict path.
// A draft is removed once it is saved or the user discards it.

export interface Draft {
  agentId: string;
  workspaceKey: string;
  path: string;
  /** The revision the text was typed on (the save's expected revision). */
  baseRevision: string;
  text: string;
  savedAt: number;
}

const PREFIX = 'awf.draft.v1:';

/** The subset of Web Storage used here (tests pass a Map-backed one). */
export interface KeyValue {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

export class Drafts {
  readonly #store: KeyValue | null;

  constructor(store: KeyValue | null) {
    this.#store = store;
  }

  static key(agentId: string, workspaceKey: string, path: string): string {
    return PREFIX + JSON.stringify([agentId, workspaceKey, path]);
  }

  get(agentId: string, workspaceKey: string, path: string): Draft | null {
    try {
      const raw = this.#store?.getItem(Drafts.key(agentId, workspaceKey, path));
      if (!raw) return null;
      const d = JSON.parse(raw) as Partial<Draft>;
      if (typeof d.text !== 'string' || typeof d.baseRevision !== 'string') return null;
      return { agentId, workspaceKey, path, baseRevision: d.baseRevision, text: d.text, savedAt: Number(d.savedAt) || 0 };
    } catch {
      return null;
    }
  }

  /** Stores a draft; false when the browser refused (storage full or disabled). */
  put(d: Omit<Draft, 'savedAt'>): boolean {
    try {
      if (!this.#store) return false;
      const value = JSON.stringify({ baseRevision: d.baseRevision, text: d.text, savedAt: Date.now() });
      this.#store.setItem(Drafts.key(d.agentId, d.workspaceKey, d.path), value);
      return true;
    } catch {
      return false;
    }
  }

  remove(agentId: string, workspaceKey: string, path: string): void {
    try {
      this.#store?.removeItem(Drafts.key(agentId, workspaceKey, path));
    } catch {
      // storage disabled: nothing was kept
    }
  }
}

/** window.localStorage where the browser allows it. */
export function browserStorage(): KeyValue | null {
  try {
    return window.localStorage;
  } catch {
    return null;
  }
}
