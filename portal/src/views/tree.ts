// The lazily expanded tree of one workspace as an ARIA tree (roving
// tabindex; the keys are handled by features/tree.ts).
import { html, nothing, svg, type TemplateResult } from 'lit-html';
import { repeat } from 'lit-html/directives/repeat.js';
import type { Entry } from '../api/types';
import type { AgentState } from '../state/appState';
import { isDir, visibleRows, workspaceKey, type Row, type TreeState } from '../state/tree';
import { openMenu } from '../ui/menu';

export interface TreeHandlers {
  key: (e: KeyboardEvent) => void;
  activate: (row: Row) => void;
  menu: (entry: Entry, anchor: HTMLElement, at: { x: number; y: number }) => void;
  retry: (dir: string) => void;
  /** Files dragged onto the tree (features/upload.ts). */
  drop: { over: (e: DragEvent) => void; leave: (e: DragEvent) => void; drop: (e: DragEvent) => void };
  /** The folder a drag of files is over ('' the root), or null. */
  dropTarget: string | null;
}

const FOLDER_ICON = svg`<svg class="icon folder" viewBox="0 0 16 16" aria-hidden="true"><path d="M1.5 3.5h4.2l1.5 1.5h7.3v8.5h-13z" /></svg>`;
const FILE_ICON = svg`<svg class="icon file" viewBox="0 0 16 16" aria-hidden="true"><path d="M3.5 1.5h6l3 3v10h-9z M9.5 1.5v3h3" /></svg>`;

export function treeView(st: AgentState, tree: TreeState, label: string, h: TreeHandlers): TemplateResult {
  const rows = visibleRows(tree);
  const focusable = rows.filter((r) => r.kind !== 'status');
  if (!focusable.some((r) => r.key === tree.focusKey)) tree.focusKey = focusable[0]?.key ?? '';
  const openKey = st.file && st.file.workspaceKey === workspaceKey(tree.workspace) ? 'e:' + st.file.path : '';
  return html`<ul
    class="tree ${h.dropTarget === '' ? 'drop-target' : ''}"
    role="tree"
    aria-label=${label}
    data-testid="tree"
    @keydown=${h.key}
    @dragover=${h.drop.over}
    @dragleave=${h.drop.leave}
    @drop=${h.drop.drop}
  >
    ${repeat(rows, (row) => row.key, (row) => {
      const indent = `--level:${row.level}`;
      if (row.kind === 'status') {
        return html`<li role="none" class="tree-status ${row.error ? 'error' : ''}" style=${indent}>
          ${row.text}
          ${row.error
            ? html`<button class="btn btn-small" @click=${() => h.retry(row.dir)}>Retry</button>`
            : nothing}
        </li>`;
      }
      if (row.kind === 'more') {
        return html`<li
          role="treeitem"
          aria-level=${row.level}
          class="tree-row more"
          data-key=${row.key}
          data-testid="load-more"
          tabindex=${tree.focusKey === row.key ? 0 : -1}
          style=${indent}
          @click=${() => h.activate(row)}
        >
          <span class="twisty"></span><span class="label">Load more…</span>
        </li>`;
      }
      const e = row.entry;
      const dir = isDir(e);
      const expanded = dir && !!tree.dirs.get(e.path ?? '')?.expanded;
      return html`<li
        role="treeitem"
        aria-level=${row.level}
        aria-expanded=${dir ? (expanded ? 'true' : 'false') : nothing}
        aria-selected=${row.key === openKey ? 'true' : 'false'}
        class="tree-row ${dir ? 'dir' : 'file'} ${row.key === openKey ? 'open' : ''} ${dir && h.dropTarget === e.path ? 'drop-target' : ''}"
        data-key=${row.key}
        data-path=${e.path ?? ''}
        tabindex=${tree.focusKey === row.key ? 0 : -1}
        style=${indent}
        title=${e.path ?? ''}
        @click=${() => h.activate(row)}
        @focus=${() => (tree.focusKey = row.key)}
        @contextmenu=${(ev: MouseEvent) => {
          ev.preventDefault();
          tree.focusKey = row.key;
          h.menu(e, ev.currentTarget as HTMLElement, { x: ev.clientX, y: ev.clientY });
        }}
      >
        <span class="twisty" aria-hidden="true">${dir ? (expanded ? '▾' : '▸') : ''}</span>
        ${dir ? FOLDER_ICON : FILE_ICON}
        <span class="label">${e.name}</span>
        ${!dir && e.editable === false && e.non_editable_reason !== 'NON_EDITABLE_REASON_UNKNOWN'
          ? html`<span class="tag" title="Not editable">read-only</span>`
          : nothing}
      </li>`;
    })}
    ${rows.length === 0 ? html`<li role="none" class="tree-status">Empty</li>` : nothing}
  </ul>`;
}

/** A tree's Upload, Refresh and Checkpoints buttons (the head of both sidebars' file sections); upload opens its menu at the button. */
export function treeHeadButtons(refresh: () => void, checkpoints: () => void, checkpointsTitle: string, upload: (anchor: HTMLElement) => void): TemplateResult {
  return html`<button
      class="btn btn-small"
      data-testid="upload-button"
      title="Upload files or a folder (or drop them on the tree)"
      aria-haspopup="menu"
      @click=${(e: Event) => upload(e.currentTarget as HTMLElement)}
    >
      Upload
    </button>
    <button class="btn btn-small" data-testid="refresh-files" title="Reload the listed folders and the open file" @click=${refresh}>
      Refresh
    </button>
    <button class="btn btn-small" data-testid="open-checkpoints" title=${checkpointsTitle} @click=${checkpoints}>Checkpoints</button>`;
}

/** The Upload button's menu: files or a folder, by the browser's picker. */
export function uploadMenu(pick: (folder: boolean) => void, anchor: HTMLElement): void {
  const r = anchor.getBoundingClientRect();
  openMenu(r.left, r.bottom, [
    { label: 'Upload files…', run: () => pick(false) },
    { label: 'Upload folder…', run: () => pick(true) },
  ], anchor, 'Upload');
}
