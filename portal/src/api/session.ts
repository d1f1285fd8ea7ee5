// The portal login session (gateway: /api/v1/agent-gateway/session). This
// endpoint belongs to the gateway's auth layer, not to the workspace
// contract, so it has no generated type; SessionInfo is the small shape the
// gateway documents: {operator, role, csrf_token}, with sso and
// sign_out_url when the identity comes from the single sign-on proxy
// (oauth2-proxy, docs/sso.md): then there is no token login and no CSRF
// token, and signing out is the proxy's.
import { ApiError } from './errors';

export interface SessionInfo {
  operator: string;
  role: string;
  csrf_token: string;
  sso?: boolean;
  sign_out_url?: string;
}

export type SessionState =
  | { kind: 'signed-in'; session: SessionInfo }
  | { kind: 'signed-out' }
  | { kind: 'no-access'; operator: string; signOutUrl?: string };

const SESSION_URL = '/api/v1/agent-gateway/session';

async function send(method: string, init: RequestInit = {}): Promise<Response> {
  try {
    return await fetch(SESSION_URL, { credentials: 'same-origin', ...init, method });
  } catch {
    throw ApiError.network();
  }
}

async function body(r: Response): Promise<unknown> {
  try {
    return await r.json();
  } catch {
    return null;
  }
}

function toState(r: Response, b: unknown): SessionState {
  if (r.ok) {
    const s = (b ?? {}) as Partial<SessionInfo>;
    const session: SessionInfo = { operator: s.operator ?? '', role: s.role ?? '', csrf_token: s.csrf_token ?? '' };
    if (s.sso) Object.assign(session, { sso: true, sign_out_url: sameOrigin(s.sign_out_url) ? s.sign_out_url : '' });
    if (session.role && session.role !== 'admin') return { kind: 'no-access', operator: session.operator, ...proxySignOut(session) };
    return { kind: 'signed-in', session };
  }
  if (r.status === 401) return { kind: 'signed-out' };
  if (r.status === 403) {
    const s = (b ?? {}) as Partial<SessionInfo>;
    return { kind: 'no-access', operator: typeof s.operator === 'string' ? s.operator : '', ...proxySignOut(s) };
  }
  throw ApiError.from(r.status, b);
}

/** The proxy's sign-out, with its rd parameter back to the portal's start page. */
export function signOutUrl(signOut: string, back = '/'): string {
  return `${signOut}?rd=${encodeURIComponent(back)}`;
}

/** Only a path on the portal's own origin is followed. */
function sameOrigin(p: unknown): p is string {
  return typeof p === 'string' && p.startsWith('/') && !p.startsWith('//') && !p.includes('\\');
}

function proxySignOut(s: Partial<SessionInfo>): { signOutUrl?: string } {
  return s.sso && sameOrigin(s.sign_out_url) ? { signOutUrl: signOutUrl(s.sign_out_url) } : {};
}

export async function currentSession(): Promise<SessionState> {
  const r = await send('GET');
  return toState(r, await body(r));
}

/** Signs in with a static token. Returns signed-out when the token is refused. */
export async function login(token: string): Promise<SessionState> {
  const r = await send('POST', {
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ token }),
  });
  return toState(r, await body(r));
}

export async function logout(csrf: string): Promise<void> {
  const r = await send('DELETE', { headers: { 'X-CSRF-Token': csrf } });
  if (!r.ok && r.status !== 401) throw ApiError.from(r.status, await body(r));
}
