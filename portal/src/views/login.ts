// The screens before the Agents page: loading, sign-in, no access, start-up error.
import { html, type TemplateResult } from 'lit-html';

export function loadingView(): TemplateResult {
  return html`<div class="center-page"><p>Loading…</p></div>`;
}

export function startErrorView(message: string, onRetry: () => void): TemplateResult {
  return html`<div class="center-page" data-testid="start-error">
    <h1>Agent Workspace Files</h1>
    <p role="alert">${message}</p>
    <button class="btn btn-primary" @click=${onRetry}>Retry</button>
  </div>`;
}

export function noAccessView(operator: string, onSignOut: () => void, sso = false): TemplateResult {
  return html`<div class="center-page" data-testid="no-access">
    <h1>No access</h1>
    <p>
      ${operator ? html`You are signed in as <strong>${operator}</strong>${sso ? ' (single sign-on)' : ''}, but` : ''}
      ${'Agent Workspace Files is only for workspace admins.'}
    </p>
    <p>
      ${sso
        ? 'Ask an administrator to add your account to a workspace admin group, or sign out and sign in with another account.'
        : 'Ask an administrator to give your account the admin role, or sign in with an admin token.'}
    </p>
    <button class="btn" @click=${onSignOut}>Sign out</button>
  </div>`;
}

export function loginView(s: { message: string; busy: boolean }, onSubmit: (token: string) => void): TemplateResult {
    return html`<div class="center-page">
    <form
      class="login"
      data-testid="login-form"
      @submit=${(e: Event) => {
        e.preventDefault();
        const input = (e.target as HTMLFormElement).elements.namedItem('token') as HTMLInputElement;
        if (input.value.trim()) onSubmit(input.value.trim());
      }}
    >
      <h1>Agent Workspace Files</h1>
      <p>Sign in with your admin access token.</p>
      <label class="field">Access token <input name="token" type="password" autocomplete="off" required ?disabled=${s.busy} /></label>
      <p class="field-problem" role="alert">${s.message}</p>
      <button class="btn btn-primary" type="submit" ?disabled=${s.busy}>${s.busy ? 'Signing in…' : 'Sign in'}</button>
    </form>
  </div>`;
}
