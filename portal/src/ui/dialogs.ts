// Modal dialogs on the native <dialog> element (showModal makes the rest of
// the page inert), with a Tab focus trap, Esc to cancel, and focus returned to
// where it was. Each helper resolves with the user's choice.
import { html, nothing, render, type TemplateResult } from 'lit-html';

const FOCUSABLE = 'button, [href], input, select, textarea, [tabindex]:not([tabindex="-1"])';

function focusables(root: HTMLElement): HTMLElement[] {
  return [...root.querySelectorAll<HTMLElement>(FOCUSABLE)].filter(
    (el) => !el.hasAttribute('disabled') && el.getClientRects().length > 0,
  );
}

/** An id prefix no open dialog uses (the document is the only record: no module state). */
function freeId(): string {
  let n = 1;
  while (document.querySelector(`dialog[aria-labelledby="dlg-${n}-title"]`)) n++;
  return `dlg-${n}`;
}

export interface ModalContext<T> {
  close: (v: T) => void;
  update: () => void;
  id: string;
}

export function modal<T>(
  build: (ctx: ModalContext<T>) => () => TemplateResult,
  opts: { cancelValue: T; role?: 'dialog' | 'alertdialog'; testid: string; focus?: string },
): Promise<T> {
  return new Promise<T>((resolve) => {
    const returnTo = document.activeElement as HTMLElement | null;
    const dlg = document.createElement('dialog');
    const id = freeId();
    dlg.className = 'modal';
    dlg.setAttribute('role', opts.role ?? 'dialog');
    dlg.setAttribute('aria-labelledby', `${id}-title`);
    dlg.setAttribute('aria-describedby', `${id}-body`);
    dlg.dataset['testid'] = opts.testid;
    let done = false;
    const close = (v: T) => {
      if (done) return;
      done = true;
      dlg.close();
      dlg.remove();
      if (returnTo && returnTo.isConnected) returnTo.focus();
      resolve(v);
    };
    const ctx: ModalContext<T> = { close, update: () => render(view(), dlg), id };
    const view = build(ctx);
    dlg.addEventListener('cancel', (e) => {
      e.preventDefault();
      close(opts.cancelValue);
    });
    dlg.addEventListener('keydown', (e) => {
      if (e.key !== 'Tab') return;
      const f = focusables(dlg);
      if (f.length === 0) return;
      const first = f[0]!;
      const last = f[f.length - 1]!;
      if (e.shiftKey && document.activeElement === first) {
        e.preventDefault();
        last.focus();
      } else if (!e.shiftKey && document.activeElement === last) {
        e.preventDefault();
        first.focus();
      }
    });
    document.body.append(dlg);
    ctx.update();
    dlg.showModal();
    const target = (opts.focus && dlg.querySelector<HTMLElement>(opts.focus)) || focusables(dlg)[0];
    target?.focus();
  });
}

export interface ConfirmOptions {
  title: string;
  body: (string | TemplateResult)[];
  confirmLabel: string;
  cancelLabel?: string;
  danger?: boolean;
  /** When set, the user must type exactly this text to enable the confirm button. */
  requireText?: { label: string; value: string };
  testid?: string;
}

export function confirmDialog(o: ConfirmOptions): Promise<boolean> {
  return modal<boolean>(
    ({ close, update, id }) => {
      let typed = '';
      const ok = () => !o.requireText || typed === o.requireText.value;
      return () => html`
        <form
          method="dialog"
          @submit=${(e: Event) => {
            e.preventDefault();
            if (ok()) close(true);
          }}
        >
          <h2 id="${id}-title">${o.title}</h2>
          <div id="${id}-body" class="dialog-body">${o.body.map((p) => html`<p>${p}</p>`)}</div>
          ${o.requireText
            ? html`<label class="field"
                >${o.requireText.label}
                <input
                  name="confirm"
                  autocomplete="off"
                  spellcheck="false"
                  .value=${typed}
                  @input=${(e: Event) => {
                    typed = (e.target as HTMLInputElement).value;
                    update();
                  }}
              /></label>`
            : nothing}
          <div class="dialog-actions">
            <button type="button" class="btn" data-action="cancel" @click=${() => close(false)}>
              ${o.cancelLabel ?? 'Cancel'}
            </button>
            <button type="submit" class="btn ${o.danger ? 'btn-danger' : 'btn-primary'}" data-action="confirm" ?disabled=${!ok()}>
              ${o.confirmLabel}
            </button>
          </div>
        </form>
      `;
    },
    {
      cancelValue: false,
      role: o.danger ? 'alertdialog' : 'dialog',
      testid: o.testid ?? 'confirm-dialog',
      focus: o.requireText ? 'input' : '[data-action="cancel"]',
    },
  );
}

export interface PromptOptions {
  title: string;
  label: string;
  value?: string;
  /** Selects this range of the initial value (e.g. the name without its extension). */
  select?: [number, number];
  help?: string;
  confirmLabel: string;
  /** Returns why the value is not acceptable, or null. Checked as the user types. */
  validate: (v: string) => string | null;
  suggestions?: string[];
  testid?: string;
}

export function promptDialog(o: PromptOptions): Promise<string | null> {
  const p = modal<string | null>(
    ({ close, update, id }) => {
      let value = o.value ?? '';
      let touched = false;
      return () => {
        const problem = o.validate(value);
        const show = touched && problem;
        return html`
          <form
            method="dialog"
            novalidate
            @submit=${(e: Event) => {
              e.preventDefault();
              touched = true;
              if (!o.validate(value)) close(value);
              else update();
            }}
          >
            <h2 id="${id}-title">${o.title}</h2>
            <div id="${id}-body" class="dialog-body">${o.help ? html`<p>${o.help}</p>` : nothing}</div>
            <label class="field"
              >${o.label}
              <input
                name="value"
                autocomplete="off"
                spellcheck="false"
                list=${o.suggestions ? `${id}-list` : nothing}
                aria-invalid=${show ? 'true' : 'false'}
                aria-describedby="${id}-problem"
                .value=${value}
                @input=${(e: Event) => {
                  value = (e.target as HTMLInputElement).value;
                  touched = true;
                  update();
                }}
            /></label>
            ${o.suggestions
              ? html`<datalist id="${id}-list">${o.suggestions.map((s) => html`<option value=${s}></option>`)}</datalist>`
              : nothing}
            <p id="${id}-problem" class="field-problem" role="status" aria-live="polite">${show ? problem : ''}</p>
            <div class="dialog-actions">
              <button type="button" class="btn" data-action="cancel" @click=${() => close(null)}>Cancel</button>
              <button type="submit" class="btn btn-primary" data-action="confirm" ?disabled=${!!problem}>${o.confirmLabel}</button>
            </div>
          </form>
        `;
      };
    },
    { cancelValue: null, testid: o.testid ?? 'prompt-dialog', focus: 'input' },
  );
  if (o.select) {
    const input = document.querySelector<HTMLInputElement>('dialog[open] input[name="value"]');
    input?.setSelectionRange(o.select[0], o.select[1]);
  }
  return p;
}

export interface Choice<T> {
  value: T;
  /** What the row shows. */
  body: TemplateResult;
  /** The row's button. */
  label: string;
  testid?: string;
}

/** A list to pick one row of (each row has its button); null when cancelled. */
export function choiceDialog<T>(o: { title: string; body: (string | TemplateResult)[]; choices: Choice<T>[]; empty: string; testid: string }): Promise<T | null> {
  return modal<T | null>(
    ({ close, id }) =>
      () => html`
        <h2 id="${id}-title">${o.title}</h2>
        <div id="${id}-body" class="dialog-body">${o.body.map((p) => html`<p>${p}</p>`)}</div>
        ${o.choices.length === 0
          ? html`<p class="muted" data-testid="choice-empty">${o.empty}</p>`
          : html`<ul class="choice-list">
              ${o.choices.map(
                (c) => html`<li class="choice-row" data-testid=${c.testid ?? nothing}>
                  <span class="choice-body">${c.body}</span>
                  <button type="button" class="btn btn-small" data-action="choose" @click=${() => close(c.value)}>${c.label}</button>
                </li>`,
              )}
            </ul>`}
        <div class="dialog-actions">
          <button type="button" class="btn" data-action="cancel" @click=${() => close(null)}>Close</button>
        </div>
      `,
    { cancelValue: null, testid: o.testid },
  );
}

/** Copies text to the clipboard; falls back to a hidden textarea where the API is missing. */
export async function copyText(text: string): Promise<boolean> {
  try {
    if (navigator.clipboard?.writeText) {
      await navigator.clipboard.writeText(text);
      return true;
    }
  } catch {
    // fall through
  }
  const ta = document.createElement('textarea');
  ta.value = text;
  ta.setAttribute('readonly', '');
  ta.style.position = 'fixed';
  ta.style.opacity = '0';
  (document.querySelector('dialog[open]') ?? document.body).append(ta);
  ta.select();
  let ok = false;
  try {
    ok = document.execCommand('copy');
  } catch {
    ok = false;
  }
  ta.remove();
  return ok;
}

export interface SignInOptions {
  /** Why sign-in is asked for; the work on the page stays as it is. */
  message: string;
  /** Tries a token: null when signed in, else the problem to show. */
  submit: (token: string) => Promise<string | null>;
}

/** Signs in again in place (the session ended while there is work on the page). Resolves true once signed in. */
export function signInDialog(o: SignInOptions): Promise<boolean> {
  return modal<boolean>(
    ({ close, update, id }) => {
      let problem = '';
      let busy = false;
      return () => html`
        <form
          method="dialog"
          @submit=${async (e: Event) => {
            e.preventDefault();
            const input = (e.target as HTMLFormElement).elements.namedItem('token') as HTMLInputElement;
            const token = input.value.trim();
            if (!token || busy) return;
            busy = true;
            problem = '';
            update();
            const p = await o.submit(token);
            busy = false;
            if (p === null) return close(true);
            problem = p;
            update();
            input.select();
          }}
        >
          <h2 id="${id}-title">Sign in again</h2>
          <div id="${id}-body" class="dialog-body"><p>${o.message}</p></div>
          <label class="field"
            >Access token <input name="token" type="password" autocomplete="off" required ?disabled=${busy}
          /></label>
          <p class="field-problem" role="alert">${problem}</p>
          <div class="dialog-actions">
            <button type="button" class="btn" data-action="cancel" @click=${() => close(false)}>Not now</button>
            <button type="submit" class="btn btn-primary" data-action="confirm" ?disabled=${busy}>${busy ? 'Signing in…' : 'Sign in'}</button>
          </div>
        </form>
      `;
    },
    { cancelValue: false, testid: 'signin-dialog', focus: 'input' },
  );
}
