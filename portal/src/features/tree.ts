// The file tree of the shown workspace: listing folders (first page, "Load
// more"), expanding and collapsing, the ARIA tree's keys, and Refresh. What
// is done to entries (create, rename, move, delete, the actions menu) is in
// treeActions.ts; the rows are drawn by views/tree.ts.
import type { TemplateResult } from 'lit-html';
import { asApiError, describeError, isUnauthenticated } from '../api/errors';
import type { Entry, WorkspaceRef } from '../api/types';
import type { FilesPort, Shell, TreeActionsPort, TreePort, UploadPort } from './ports';
import type { AgentState } from '../state/appState';
import * as ed from '../state/editorState';
import { refreshedDirs } from '../state/entryActions';
import { loadFirst, loadMore, type Page } from '../state/paging';
import { isStale, type AgentScope } from '../state/scope';
import { dirState, isDir, visibleRows, workspaceKey, type Row, type TreeState } from '../state/tree';
import { treeView } from '../views/tree';

/** What the file tree needs of the page (a narrow part of context.ts, ports.ts). */
export interface TreeContext extends Pick<Shell, 'state' | 'update' | 'fail' | 'notify' | 'api'> {
  readonly treeActions: Pick<TreeActionsPort, 'menu' | 'rename' | 'delete'>;
  readonly files: Pick<FilesPort, 'openFile' | 'refreshOpenFile'>;
  readonly upload: Pick<UploadPort, 'dropHandlers' | 'dropTarget'>;
}

export class Tree implements TreePort {
  readonly #c: TreeContext;

  constructor(c: TreeContext) {
    this.#c = c;
  }

  #pages(scope: AgentScope<AgentState>, ws: WorkspaceRef, dir: string) {
    return async (cursor: string): Promise<Page<Entry>> => {
      const r = await scope.guard(this.#c.api.listEntries(scope.agentId, ws, dir, cursor));
      return { items: r.entries ?? [], nextCursor: r.next_cursor ?? '' };
    };
  }

  /** Lists dir from its first page, replacing what was shown. */
  async reloadDir(scope: AgentScope<AgentState>, tree: TreeState, dir: string): Promise<void> {
    const d = dirState(tree, dir);
    d.loading = true;
    d.error = null;
    this.#c.update();
    try {
      d.listing = await loadFirst(this.#pages(scope, tree.workspace, dir));
    } catch (err) {
      if (isStale(err)) return;
      if (isUnauthenticated(err)) return this.#c.fail(err);
      d.error = describeError(err);
      if (dir === '') tree.rootError = asApiError(err);
    } finally {
      if (scope.alive) {
        d.loading = false;
        if (!d.error && dir === '') tree.rootError = null;
        this.#c.update();
      }
    }
  }

  async #loadMoreDir(scope: AgentScope<AgentState>, tree: TreeState, dir: string): Promise<void> {
    const d = dirState(tree, dir);
    d.loading = true;
    this.#c.update();
    try {
      const r = await loadMore(d.listing, this.#pages(scope, tree.workspace, dir), (e) => e.path ?? '');
      d.listing = r.listing;
      if (r.restarted) this.#c.notify('info', 'The folder changed while it was being listed, so it was reloaded from the start.');
    } catch (err) {
      if (isStale(err)) return;
      if (isUnauthenticated(err)) return this.#c.fail(err);
      d.error = describeError(err);
    } finally {
      if (scope.alive) {
        d.loading = false;
        this.#c.update();
      }
    }
  }

  async #toggleDir(tree: TreeState, entry: Entry, open?: boolean): Promise<void> {
    const scope = this.#c.state.scopes.current;
    if (!scope) return;
    const path = entry.path ?? '';
    const d = dirState(tree, path);
    d.expanded = open ?? !d.expanded;
    this.#c.update();
    if (d.expanded && !d.listing.loaded && !d.loading) await this.reloadDir(scope, tree, path);
  }

  /** Moves the roving tabindex (and the focus, after the render) to the row key. */
  focusRow(tree: TreeState, key: string): void {
    tree.focusKey = key;
    this.#c.state.focusAfterRender = key;
    this.#c.update();
  }

  #onKey(e: KeyboardEvent, tree: TreeState): void {
    // Keys on controls inside the tree (a Retry button) keep their own meaning.
    if (!(e.target as HTMLElement).matches('[role="treeitem"]')) return;
    const rows: Row[] = visibleRows(tree).filter((r) => r.kind !== 'status');
    if (rows.length === 0) return;
    let i = rows.findIndex((r) => r.key === tree.focusKey);
    if (i < 0) i = 0;
    const row = rows[i]!;
    const entry = row.kind === 'entry' ? row.entry : null;
    const target = e.target as HTMLElement;
    const actions = this.#c.treeActions;
    switch (e.key) {
      case 'ArrowDown':
        this.focusRow(tree, rows[Math.min(i + 1, rows.length - 1)]!.key);
        break;
      case 'ArrowUp':
        this.focusRow(tree, rows[Math.max(i - 1, 0)]!.key);
        break;
      case 'Home':
        this.focusRow(tree, rows[0]!.key);
        break;
      case 'End':
        this.focusRow(tree, rows[rows.length - 1]!.key);
        break;
      case 'ArrowRight':
        if (entry && isDir(entry)) {
          const d = tree.dirs.get(entry.path ?? '');
          if (!d?.expanded) void this.#toggleDir(tree, entry, true);
          else {
            const next = rows[i + 1];
            if (next && next.kind !== 'status' && next.parent === entry.path) this.focusRow(tree, next.key);
          }
        }
        break;
      case 'ArrowLeft':
        if (entry && isDir(entry) && tree.dirs.get(entry.path ?? '')?.expanded) {
          void this.#toggleDir(tree, entry, false);
        } else if (row.kind !== 'status' && row.parent !== '') {
          this.focusRow(tree, 'e:' + row.parent);
        }
        break;
      case 'Enter':
      case ' ':
        this.#activate(tree, row);
        break;
      case 'F2':
        if (entry) void actions.rename(tree, entry);
        break;
      case 'Delete':
        if (entry) void actions.delete(tree, entry);
        break;
      case 'F10':
        if (!e.shiftKey) return;
        if (entry) actions.menu(tree, entry, target);
        break;
      case 'ContextMenu':
        if (entry) actions.menu(tree, entry, target);
        break;
      default:
        return;
    }
    e.preventDefault();
  }

  #activate(tree: TreeState, row: Row): void {
    const scope = this.#c.state.scopes.current;
    if (!scope) return;
    tree.focusKey = row.key;
    if (row.kind === 'more') {
      void this.#loadMoreDir(scope, tree, row.dir);
    } else if (row.kind === 'entry') {
      if (isDir(row.entry)) void this.#toggleDir(tree, row.entry);
      else void this.#c.files.openFile(tree.workspace, row.entry.path ?? '', false, row.entry);
    }
  }

  /** The tree's Refresh: every listed folder, and the open file when it has no unsaved changes. */
  async refresh(scope: AgentScope<AgentState>, tree: TreeState): Promise<void> {
    const f = scope.state.file;
    await Promise.all([
      ...refreshedDirs(tree).map((d) => this.reloadDir(scope, tree, d)),
      f && f.workspaceKey === workspaceKey(tree.workspace) && !ed.isDirty(f) ? this.#c.files.refreshOpenFile(scope, f) : null,
    ]);
  }

  view(scope: AgentScope<AgentState>, tree: TreeState, label: string): TemplateResult {
    return treeView(scope.state, tree, label, {
      key: (e) => this.#onKey(e, tree),
      activate: (row) => this.#activate(tree, row),
      menu: (entry, anchor, at) => this.#c.treeActions.menu(tree, entry, anchor, at),
      retry: (dir) => void this.reloadDir(scope, tree, dir),
      drop: this.#c.upload.dropHandlers(tree),
      dropTarget: this.#c.upload.dropTarget,
    });
  }
}
