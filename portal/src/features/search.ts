// Search: quick open (Ctrl+P: files of the open workspace by a fuzzy match
// of their name, keyboard navigation) and the content search panel
// (Ctrl+Shift+F: literal or regex, case, include/exclude globs). Each
// keystroke aborts the request before it (AbortController), so only the
// latest query's results are shown and the gateway cancels the walk of the
// ones given up. Choosing a result opens the file at its line in the editor.
import { html, nothing, type TemplateResult } from 'lit-html';
import { describeError } from '../api/errors';
import { search, type SearchParams } from '../api/search';
import type { SearchMatch, WorkspaceRef } from '../api/types';
import { GLOBAL, project, type AgentState } from '../state/appState';
import { workspaceKey } from '../state/tree';
import { modal, type ModalContext } from '../ui/dialogs';
import type { FilesPort, Shell } from './ports';

/** What search needs of the page (a narrow part of context.ts, ports.ts). */
export interface SearchContext extends Pick<Shell, 'state' | 'editor' | 'notify'> {
  readonly files: Pick<FilesPort, 'openFile'>;
}

/** The search dialogs' own state while one is open. */
interface Panel {
  query: string;
  regex: boolean;
  caseSensitive: boolean;
  include: string;
  exclude: string;
  results: SearchMatch[];
  active: number;
  busy: boolean;
  error: string;
  truncated: string;
  ctrl: AbortController | null;
  timer: ReturnType<typeof setTimeout> | null;
}

const globs = (s: string) =>
  s
    .split(',')
    .map((g) => g.trim())
    .filter(Boolean);

export class Search {
  readonly #c: SearchContext;

  constructor(c: SearchContext) {
    this.#c = c;
  }

  /** The open workspace: Global, or the selected project; null when none is open. */
  #target(): { agentId: string; ws: WorkspaceRef } | null {
    const scope = this.#c.state.scopes.current;
    if (!scope) return null;
    const st: AgentState = scope.state;
    if (st.tab === 'global') return { agentId: scope.agentId, ws: GLOBAL };
    return st.selectedProject ? { agentId: scope.agentId, ws: project(st.selectedProject) } : null;
  }

  quickOpen(): Promise<void> {
    return this.#open('name');
  }

  contentSearch(): Promise<void> {
    return this.#open('content');
  }

  async #open(mode: SearchParams['mode']): Promise<void> {
    const t = this.#target();
    if (!t) {
      this.#c.notify('info', 'Open a project (or Global) to search it.');
      return;
    }
    const p: Panel = { query: '', regex: false, caseSensitive: false, include: '', exclude: '', results: [], active: 0, busy: false, error: '', truncated: '', ctrl: null, timer: null };
    const chosen = await modal<SearchMatch | null>((ctx) => () => this.#view(mode, t, p, ctx), {
      cancelValue: null,
      testid: mode === 'name' ? 'quick-open' : 'content-search',
      focus: 'input[name="query"]',
    });
    p.ctrl?.abort();
    if (p.timer) clearTimeout(p.timer);
    if (!chosen?.path) return;
    await this.#c.files.openFile(t.ws, chosen.path);
    // Only when that file is open now (not when unsaved text kept another one).
    const f = this.#c.state.scopes.current?.state.file;
    if (mode === 'content' && chosen.line && f?.path === chosen.path && f.workspaceKey === workspaceKey(t.ws)) this.#c.editor.gotoLine(chosen.line);
  }

  /** Starts the search of the panel's query, aborting the one before. */
  #run(mode: SearchParams['mode'], t: { agentId: string; ws: WorkspaceRef }, p: Panel, update: () => void): void {
    p.ctrl?.abort();
    p.results = [];
    p.active = 0;
    p.error = '';
    p.truncated = '';
    if (!p.query) {
      p.busy = false;
      update();
      return;
    }
    const ctrl = new AbortController();
    p.ctrl = ctrl;
    p.busy = true;
    update();
    const params: SearchParams = { ws: t.ws, query: p.query, mode, regex: p.regex, caseSensitive: p.caseSensitive, include: globs(p.include), exclude: globs(p.exclude), maxResults: mode === 'name' ? 50 : 500 };
    search(t.agentId, params, ctrl.signal, (m) => {
      if (p.ctrl !== ctrl) return;
      p.results.push(m);
      update();
    }).then(
      (sum) => {
        if (p.ctrl !== ctrl) return;
        p.busy = false;
        p.truncated = sum?.truncated ?? '';
        update();
      },
      (err) => {
        if (p.ctrl !== ctrl || ctrl.signal.aborted) return;
        p.busy = false;
        p.error = describeError(err);
        update();
      },
    );
  }

  #schedule(mode: SearchParams['mode'], t: { agentId: string; ws: WorkspaceRef }, p: Panel, update: () => void): void {
    if (p.timer) clearTimeout(p.timer);
    p.ctrl?.abort(); // typing on: the request before is given up at once
    p.timer = setTimeout(() => this.#run(mode, t, p, update), mode === 'name' ? 60 : 200);
  }

  #keydown(e: KeyboardEvent, p: Panel, ctx: ModalContext<SearchMatch | null>): void {
    const n = p.results.length;
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      e.preventDefault();
      if (n) p.active = (p.active + (e.key === 'ArrowDown' ? 1 : n - 1)) % n;
      ctx.update();
      document.getElementById(`${ctx.id}-opt-${p.active}`)?.scrollIntoView({ block: 'nearest' });
    } else if (e.key === 'Enter') {
      e.preventDefault();
      const m = p.results[p.active];
      if (m) ctx.close(m);
    }
  }

  #view(mode: SearchParams['mode'], t: { agentId: string; ws: WorkspaceRef }, p: Panel, ctx: ModalContext<SearchMatch | null>): TemplateResult {
    const again = () => this.#schedule(mode, t, p, ctx.update);
    const where = t.ws.scope === 'GLOBAL' ? 'Global' : t.ws.project_name;
    return html`
      <form method="dialog" class="search-panel" @submit=${(e: Event) => e.preventDefault()}>
        <h2 id="${ctx.id}-title">${mode === 'name' ? 'Go to file' : 'Search in files'} <span class="muted">(${where})</span></h2>
        <input
          name="query"
          type="search"
          autocomplete="off"
          spellcheck="false"
          role="combobox"
          aria-expanded="true"
          aria-controls="${ctx.id}-list"
          aria-activedescendant=${p.results.length ? `${ctx.id}-opt-${p.active}` : ''}
          placeholder=${mode === 'name' ? 'File name' : 'Text or regular expression'}
          data-testid="search-query"
          .value=${p.query}
          @input=${(e: Event) => {
            p.query = (e.target as HTMLInputElement).value;
            again();
          }}
          @keydown=${(e: KeyboardEvent) => this.#keydown(e, p, ctx)}
        />
        ${mode === 'content' ? this.#options(p, again) : nothing}
        <div id="${ctx.id}-body" class="search-status" role="status" data-testid="search-status">
          ${p.error ? html`<span class="inline-error">${p.error}</span>` : p.busy ? 'Searching…' : p.query ? `${p.results.length} result${p.results.length === 1 ? '' : 's'}${p.truncated ? ` (stopped: ${p.truncated.replace('_', ' ')})` : ''}` : ''}
        </div>
        <ul id="${ctx.id}-list" class="search-results" role="listbox" data-testid="search-results">
          ${p.results.map(
            (m, i) => html`<li
              id="${ctx.id}-opt-${i}"
              role="option"
              aria-selected=${i === p.active ? 'true' : 'false'}
              data-testid="search-result"
              data-path=${m.path ?? ''}
              data-line=${String(m.line ?? 0)}
              @mousedown=${(e: Event) => e.preventDefault()}
              @click=${() => ctx.close(m)}
            >
              <span class="search-path">${m.path}${m.line ? html`<span class="muted">:${m.line}</span>` : nothing}</span>
              ${m.line ? preview(m) : nothing}
            </li>`,
          )}
        </ul>
        <div class="dialog-actions"><button type="button" class="btn" data-action="cancel" @click=${() => ctx.close(null)}>Close</button></div>
      </form>
    `;
  }

  #options(p: Panel, again: () => void): TemplateResult {
    const box = (label: string, get: () => boolean, set: (v: boolean) => void, testid: string) =>
      html`<label class="search-toggle"
        ><input
          type="checkbox"
          data-testid=${testid}
          .checked=${get()}
          @change=${(e: Event) => {
            set((e.target as HTMLInputElement).checked);
            again();
          }}
        />${label}</label
      >`;
    const field = (label: string, get: () => string, set: (v: string) => void, testid: string) =>
      html`<label class="field search-glob"
        >${label}<input
          autocomplete="off"
          spellcheck="false"
          placeholder="*.go, src/**"
          data-testid=${testid}
          .value=${get()}
          @input=${(e: Event) => {
            set((e.target as HTMLInputElement).value);
            again();
          }}
      /></label>`;
    return html`<div class="search-options">
      ${box('Regex', () => p.regex, (v) => (p.regex = v), 'search-regex')}
      ${box('Match case', () => p.caseSensitive, (v) => (p.caseSensitive = v), 'search-case')}
      ${field('Include', () => p.include, (v) => (p.include = v), 'search-include')}
      ${field('Exclude', () => p.exclude, (v) => (p.exclude = v), 'search-exclude')}
    </div>`;
  }
}

/** The line's preview with the match marked (offsets are UTF-8 bytes of the preview). */
function preview(m: SearchMatch): TemplateResult {
  const bytes = new TextEncoder().encode(m.preview ?? '');
  const dec = new TextDecoder();
  const s = Math.max(0, m.match_start ?? 0);
  const e = Math.max(s, m.match_end ?? 0);
  return html`<code class="search-preview">${dec.decode(bytes.slice(0, s))}<mark>${dec.decode(bytes.slice(s, e))}</mark>${dec.decode(bytes.slice(e))}</code>`;
}
