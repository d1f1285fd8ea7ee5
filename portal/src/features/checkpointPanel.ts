// The Checkpoints panel (issue #15): a modal over the file view for one
// workspace (a project or Global). Create a checkpoint with a label, list
// them, compare one with the current state (file by file, with text diffs),
// restore all, a folder or one file after a confirmation that lists what
// will change, and delete one. Text from the server (labels, paths, diffs)
// is only ever rendered as text.
import { html, nothing, render, type TemplateResult } from 'lit-html';
import type { Checkpoint, CheckpointApi, CheckpointChange, CompareResponse } from '../api/checkpoints';
import type { WorkspaceRef } from '../api/types';
import { diffLines, diffStateText, holdingList, kindLabel, modeText, reasonLabel, restoreEffect, restorePlan } from '../state/checkpoints';
import { confirmDialog } from '../ui/dialogs';
import './checkpoints.css';

export interface CheckpointPanelOptions {
  api: CheckpointApi;
  agentId: string;
  ws: WorkspaceRef;
  /** "project demo" or "Global". */
  title: string;
  /** Open comparing this file with the newest checkpoint. */
  comparePath?: string;
  notify: (kind: 'info' | 'error', text: string) => void;
  describeError: (err: unknown) => string;
  /** After a restore changed the workspace. */
  onRestored: () => void | Promise<void>;
}

interface Comparison {
  checkpoint: Checkpoint;
  result: CompareResponse;
  selected: string;
}

function size(n: number | string | undefined): string {
  const b = Number(n ?? 0);
  if (b < 1024) return `${b} B`;
  if (b < 1 << 20) return `${(b / 1024).toFixed(1)} KiB`;
  return `${(b / (1 << 20)).toFixed(1)} MiB`;
}

function when(c: Checkpoint): string {
  return c.created_at ? new Date(c.created_at).toLocaleString() : '';
}

function name(c: Checkpoint): string {
  return c.label ? `“${c.label}”` : `of ${when(c)}`;
}

/** Opens the panel; resolves when it is closed. */
export function openCheckpoints(o: CheckpointPanelOptions): Promise<void> {
  return new Promise((resolve) => {
    const returnTo = document.activeElement as HTMLElement | null;
    const dlg = document.createElement('dialog');
    dlg.className = 'modal checkpoints-panel';
    dlg.dataset['testid'] = 'checkpoints-panel';
    dlg.setAttribute('aria-labelledby', 'ckpt-title');
    let list: Checkpoint[] = [];
    // What holdingList says of the listing (with comparePath: whether older
    // checkpoints were left unsearched).
    let note = '';
    let none = '';
    let loading = true;
    let error = '';
    let label = '';
    let busy = false;
    let cmp: Comparison | null = null;
    let done = false;

    const close = () => {
      if (done) return;
      done = true;
      dlg.close();
      dlg.remove();
      if (returnTo?.isConnected) returnTo.focus();
      resolve();
    };
    const update = () => render(view(), dlg);
    const fail = (err: unknown, prefix: string) => o.notify('error', `${prefix} ${o.describeError(err)}`);

    async function load(): Promise<void> {
      loading = true;
      update();
      try {
        // From a file: the checkpoints and per-file versions that hold it.
        ({ list, note, none } = holdingList(await o.api.list(o.agentId, o.ws, o.comparePath ?? '')));
        error = '';
      } catch (err) {
        error = o.describeError(err);
      }
      loading = false;
      update();
    }

    async function create(): Promise<void> {
      busy = true;
      update();
      try {
        const c = await o.api.create(o.agentId, o.ws, label.trim());
        label = '';
        o.notify('info', `Checkpoint ${name(c)} was created (${c.file_count ?? 0} files).`);
        await load();
      } catch (err) {
        fail(err, 'The checkpoint was not created.');
      }
      busy = false;
      update();
    }

    async function compare(c: Checkpoint, path = '', select = ''): Promise<Comparison | null> {
      busy = true;
      update();
      try {
        const result = await o.api.compare(o.agentId, o.ws, c.id ?? '', { path, diffs: true });
        const changes = result.changes ?? [];
        cmp = { checkpoint: c, result, selected: select || (changes[0]?.path ?? '') };
      } catch (err) {
        fail(err, 'The comparison failed.');
      }
      busy = false;
      update();
      return cmp;
    }

    async function restore(c: Checkpoint, path: string): Promise<void> {
      // The confirmation shows what this restore changes: from a fresh
      // comparison of exactly this path (never one shown earlier, which
      // may be stale or of another part), whose plan token the server
      // requires and checks again under its lock.
      busy = true;
      update();
      let fresh: CompareResponse;
      try {
        fresh = await o.api.compare(o.agentId, o.ws, c.id ?? '', { path });
      } catch (err) {
        fail(err, 'The comparison failed; nothing was restored.');
        busy = false;
        update();
        return;
      }
      busy = false;
      update();
      const plan = restorePlan(fresh);
      if (plan.total === 0) {
        o.notify('info', `Nothing to restore: ${path ? path + ' is' : 'the workspace is'} as in the checkpoint.`);
        return;
      }
      if (!plan.token) {
        o.notify('error', 'The comparison returned no plan; nothing was restored.');
        return;
      }
      const ok = await confirmDialog({
        title: path ? `Restore ${path}?` : `Restore everything from checkpoint ${name(c)}?`,
        body: [
          html`<span data-testid="restore-total" data-total=${plan.total}>${plan.total === 1 ? 'This entry changes' : `These ${plan.total} entries change`}:</span>
            <ul class="ckpt-effects" data-testid="restore-effects">
              ${plan.shown.map((ch) => html`<li><code>${ch.path}</code> is ${restoreEffect(ch)}</li>`)}
              ${plan.more > 0 ? html`<li>… and ${plan.more} more</li>` : nothing}
            </ul>`,
          html`A checkpoint of the current state is taken first (when automatic checkpoints are on), so this restore can be undone.`,
        ],
        confirmLabel: 'Restore',
        danger: true,
        testid: 'restore-checkpoint-dialog',
      });
      if (!ok) return;
      busy = true;
      update();
      try {
        const r = await o.api.restore(o.agentId, o.ws, c.id ?? '', path, plan.token);
        o.notify(
          'info',
          `Restored ${path || 'the workspace'} from checkpoint ${name(c)}.` +
            (r.undo_checkpoint_id ? ' The state before it was kept as a checkpoint.' : ''),
        );
        cmp = null;
        await o.onRestored();
        await load();
      } catch (err) {
        fail(err, 'Nothing was restored.');
      }
      busy = false;
      update();
    }

    async function remove(c: Checkpoint): Promise<void> {
      const ok = await confirmDialog({
        title: `Delete checkpoint ${name(c)}?`,
        body: ['The checkpoint is removed; files no other checkpoint shares are freed. The workspace itself does not change.'],
        confirmLabel: 'Delete checkpoint',
        danger: true,
        testid: 'delete-checkpoint-dialog',
      });
      if (!ok) return;
      try {
        await o.api.remove(o.agentId, o.ws, c.id ?? '');
        if (cmp?.checkpoint.id === c.id) cmp = null;
        o.notify('info', `Checkpoint ${name(c)} was deleted.`);
        await load();
      } catch (err) {
        fail(err, 'The checkpoint was not deleted.');
      }
    }

    function changeRow(ch: CheckpointChange, c: Comparison): TemplateResult {
      const p = ch.path ?? '';
      const dir = ch.type === 'ENTRY_TYPE_DIRECTORY';
      return html`<li>
        <button
          class="ckpt-change ${c.selected === p ? 'selected' : ''}"
          data-testid="ckpt-change"
          data-path=${p}
          data-kind=${kindLabel(ch)}
          aria-pressed=${c.selected === p ? 'true' : 'false'}
          @click=${() => {
            c.selected = p;
            update();
          }}
        >
          <span class="ckpt-kind ckpt-${kindLabel(ch)}">${kindLabel(ch)}</span>
          <span class="ckpt-path">${p}${dir ? '/' : ''}</span>
        </button>
      </li>`;
    }

    function diffView(c: Comparison): TemplateResult {
      const ch = (c.result.changes ?? []).find((x) => x.path === c.selected);
      if (!ch) return html`<p class="muted">Select a file to see its changes.</p>`;
      const p = ch.path ?? '';
      const folder = p.includes('/') ? p.slice(0, p.lastIndexOf('/')) : '';
      const modes =
        ch.kind === 'CHANGE_KIND_MODIFIED' && ch.old_mode !== ch.new_mode
          ? html`<p class="muted">Permissions ${modeText(ch.old_mode)} → ${modeText(ch.new_mode)}</p>`
          : nothing;
      return html`<div class="ckpt-diff-head">
          <code>${ch.path}</code>
          <span class="head-actions">
            <button class="btn btn-small" data-testid="ckpt-restore-path" ?disabled=${busy} @click=${() => void restore(c.checkpoint, ch.path ?? '')}>
              Restore this ${ch.type === 'ENTRY_TYPE_DIRECTORY' ? 'folder' : 'file'}…
            </button>
            ${folder && folder !== (c.result.path ?? '')
              ? html`<button class="btn btn-small" data-testid="ckpt-restore-folder" ?disabled=${busy} @click=${() => void restore(c.checkpoint, folder)}>
                  Restore folder ${folder}…
                </button>`
              : nothing}
          </span>
        </div>
        ${modes}
        ${ch.diff_state === 'DIFF_STATE_INCLUDED'
          ? html`<p class="muted" data-testid="ckpt-diff-legend">Lines marked − are only in the checkpoint, + only in the current files.</p><pre class="ckpt-diff" data-testid="ckpt-diff">${diffLines(ch.diff ?? '').map(
              (l) => html`<span class="d-${l.kind}">${l.text}\n</span>`,
            )}</pre>`
          : html`<p class="muted" data-testid="ckpt-no-diff">${diffStateText(ch)}</p>`}`;
    }

    function compareView(c: Comparison): TemplateResult {
      const changes = c.result.changes ?? [];
      return html`<section class="ckpt-compare" data-testid="ckpt-compare-view" aria-label="Comparison">
        <div class="section-head">
          <h3>Changes since checkpoint ${name(c.checkpoint)}${c.result.path ? html` in <code>${c.result.path}</code>` : nothing}</h3>
          <span class="head-actions">
            ${changes.length
              ? html`<button class="btn btn-small btn-danger" data-testid="ckpt-restore-all" ?disabled=${busy} @click=${() => void restore(c.checkpoint, c.result.path ?? '')}>
                  Restore ${c.result.path ? 'this' : 'all'}…
                </button>`
              : nothing}
            <button class="btn btn-small" @click=${() => ((cmp = null), update())}>Close comparison</button>
          </span>
        </div>
        ${changes.length === 0
          ? html`<p class="muted" data-testid="ckpt-no-changes">No differences: the files are as in the checkpoint.</p>`
          : html`<div class="ckpt-split">
              <ul class="ckpt-changes" aria-label="Changed entries">
                ${changes.map((ch) => changeRow(ch, c))}
              </ul>
              <div class="ckpt-diff-pane">${diffView(c)}</div>
            </div>
            ${c.result.truncated ? html`<p class="muted">Showing ${changes.length} of ${c.result.total_changes} changes.</p>` : nothing}`}
      </section>`;
    }

    function view(): TemplateResult {
      return html`
        <div class="section-head">
          <h2 id="ckpt-title">Checkpoints of ${o.title}</h2>
          <button class="btn btn-small" data-testid="ckpt-close" @click=${close}>Close</button>
        </div>
        <p class="muted">
          A checkpoint keeps every file of the workspace as it is now (links, special files and denied folders such as .git are
          left out). Compare it with the current files, and restore all of it, a folder or one file.
        </p>
        <form
          class="ckpt-create"
          @submit=${(e: Event) => {
            e.preventDefault();
            if (!busy) void create();
          }}
        >
          <label class="field"
            >Label (optional)
            <input
              data-testid="ckpt-label"
              maxlength="200"
              .value=${label}
              @input=${(e: Event) => {
                label = (e.target as HTMLInputElement).value;
              }}
          /></label>
          <button type="submit" class="btn btn-primary" data-testid="ckpt-create" ?disabled=${busy}>Create checkpoint</button>
        </form>
        ${error ? html`<p class="inline-error" role="alert" data-testid="ckpt-error">${error}</p>` : nothing}
        ${loading
          ? html`<p class="muted">Loading…</p>`
          : list.length === 0
            ? html`<p class="muted" data-testid="ckpt-empty">No checkpoints yet.</p>`
            : html`<table class="ckpt-list" aria-label="Checkpoints">
                <thead>
                  <tr><th>Taken</th><th>Label</th><th>By</th><th>Files</th><th>Size</th><th></th></tr>
                </thead>
                <tbody>
                  ${list.map(
                    (c) => html`<tr data-testid="ckpt-row" data-id=${c.id ?? ''} class=${cmp?.checkpoint.id === c.id ? 'selected' : ''}>
                      <td>${when(c)}</td>
                      <td>
                        ${c.label ?? ''}${reasonLabel(c) ? html` <span class="muted">(${reasonLabel(c)})</span>` : nothing}
                        ${c.root_path ? html`<span class="muted"> — <code>${c.root_path}</code></span>` : nothing}
                      </td>
                      <td>${c.operator ?? ''}</td>
                      <td>${c.file_count ?? 0}</td>
                      <td>${size(c.size)}</td>
                      <td class="ckpt-actions">
                        <button class="btn btn-small" data-testid="ckpt-compare" ?disabled=${busy} @click=${() => void compare(c)}>Compare</button>
                        <button class="btn btn-small" data-testid="ckpt-restore" ?disabled=${busy} @click=${() => void restore(c, '')}>Restore…</button>
                        <button class="btn btn-small btn-ghost" data-testid="ckpt-delete" ?disabled=${busy} @click=${() => void remove(c)}>Delete</button>
                      </td>
                    </tr>`,
                  )}
                </tbody>
              </table>`}
        ${!loading && note ? html`<p class="muted" data-testid="ckpt-older-note">${note}</p>` : nothing}
        ${cmp ? compareView(cmp) : nothing}
      `;
    }

    dlg.addEventListener('cancel', (e) => {
      e.preventDefault();
      close();
    });
    document.body.append(dlg);
    update();
    dlg.showModal();
    dlg.querySelector<HTMLElement>('[data-testid="ckpt-label"]')?.focus();
    void load().then(async () => {
      if (o.comparePath && list[0]) await compare(list[0], o.comparePath, o.comparePath);
      else if (o.comparePath) o.notify('info', none);
    });
  });
}
