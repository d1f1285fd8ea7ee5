// The session gate: start-up, sign-in and sign-out, and what a lost session
// does. A lost session with unsaved text on the page asks to sign in again in
// place (nothing on the page is dropped); without unsaved text the page goes
// back to the login form. The screens are in views/login.ts.
import { describeError, isUnauthenticated } from '../api/errors';
import { currentSession, login, logout, signOutUrl, type SessionState } from '../api/session';
import type { AgentsPort, FilesPort, SessionPort, Shell } from './ports';
import * as ed from '../state/editorState';
import { isStale } from '../state/scope';
import { signInDialog } from '../ui/dialogs';

/** What the session needs of the page (a narrow part of context.ts, ports.ts). */
export interface SessionContext extends Pick<Shell, 'state' | 'update' | 'notify'> {
  readonly files: Pick<FilesPort, 'flushDraft' | 'confirmDiscard'>;
  readonly agents: Pick<AgentsPort, 'load'>;
}

export class Session implements SessionPort {
  readonly #c: SessionContext;
  /** An open sign-in-again dialog, shared by every request that found the session gone. */
  #reauth: Promise<boolean> | null = null;

  constructor(c: SessionContext) {
    this.#c = c;
  }

  async start(): Promise<void> {
    const s = this.#c.state;
    s.screen = { kind: 'loading' };
    this.#c.update();
    try {
      await this.#enter(await currentSession());
    } catch (err) {
      s.screen = { kind: 'error', message: describeError(err) };
      this.#c.update();
    }
  }

  async #enter(ss: SessionState, loginMessage = ''): Promise<void> {
    const s = this.#c.state;
    if (ss.kind === 'signed-out') {
      s.session = null;
      s.scopes.clear();
      s.screen = { kind: 'login', message: loginMessage, busy: false };
      this.#c.update();
      return;
    }
    if (ss.kind === 'no-access') {
      s.session = null;
      s.scopes.clear();
      s.screen = { kind: 'no-access', operator: ss.operator, signOutUrl: ss.signOutUrl };
      this.#c.update();
      return;
    }
    s.session = ss.session;
    s.screen = { kind: 'app' };
    await this.#c.agents.load();
  }

  async login(token: string): Promise<void> {
    const s = this.#c.state;
    if (s.screen.kind !== 'login') return;
    s.screen = { kind: 'login', message: '', busy: true };
    this.#c.update();
    try {
      const ss = await login(token);
      await this.#enter(ss, ss.kind === 'signed-out' ? 'That token was not accepted. Check it and try again.' : '');
    } catch (err) {
      s.screen = { kind: 'login', message: describeError(err), busy: false };
      this.#c.update();
    }
  }

  async logout(): Promise<void> {
    if (!(await this.#c.files.confirmDiscard('Signing out'))) return;
    const s = this.#c.state;
    if (s.session?.sso && s.session.sign_out_url) {
      // Signed in by the single sign-on proxy: it signs out (its cookie)
      // and sends the browser back to the portal, where it signs in again.
      location.assign(signOutUrl(s.session.sign_out_url));
      return;
    }
    const csrf = s.session?.csrf_token ?? '';
    try {
      await logout(csrf);
    } catch {
      // The cookie may already be gone; the login form is what matters.
    }
    s.session = null;
    s.scopes.clear();
    s.agents = [];
    s.agentCache.clear();
    s.agentsPage = null;
    s.screen = { kind: 'login', message: 'You are signed out.', busy: false };
    this.#c.update();
  }

  /** Central error handling (SessionContext.fail). */
  fail(err: unknown, prefix = ''): void {
    if (isStale(err)) return;
    if (isUnauthenticated(err)) {
      if (this.#c.state.session?.sso) {
        // The proxy passed no identity: its session ended. A reload goes
        // through its sign-in (no token login here); drafts stay stored.
        this.#c.files.flushDraft();
        location.reload();
        return;
      }
      if (ed.isDirty(this.#c.state.scopes.current?.state.file)) void this.reauthenticate();
      else this.#sessionEnded();
      return;
    }
    this.#c.notify('error', (prefix ? prefix + ' ' : '') + describeError(err));
  }

  #sessionEnded(): void {
    this.#c.files.flushDraft(); // unsaved text stays in the browser's storage for the next sign-in
    const s = this.#c.state;
    s.session = null;
    s.scopes.clear();
    s.screen = { kind: 'login', message: 'Your session has ended. Sign in again.', busy: false };
    this.#c.update();
  }

  /** Signs in again without leaving the page; true once signed in. Declined: the login form (drafts stay stored). */
  reauthenticate(): Promise<boolean> {
    if (!this.#reauth) {
      this.#c.files.flushDraft();
      this.#reauth = signInDialog({
        message:
          'Your session has ended. Sign in again to carry on: your unsaved changes are kept, and a save that was refused is tried again once you are signed in.',
        submit: async (token) => {
          try {
            const ss = await login(token);
            if (ss.kind === 'signed-in') {
              this.#c.state.session = ss.session;
              return null;
            }
            return ss.kind === 'no-access' ? 'That token has no admin access.' : 'That token was not accepted. Check it and try again.';
          } catch (err) {
            return describeError(err);
          }
        },
      }).then((ok) => {
        this.#reauth = null;
        if (ok) this.#c.update();
        else this.#sessionEnded();
        return ok;
      });
    }
    return this.#reauth;
  }
}
