import { afterEach, describe, expect, it, vi } from 'vitest';
import { currentSession, signOutUrl } from './session';

const answer = (status: number, body: unknown) =>
  vi.stubGlobal('fetch', async () => new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } }));

afterEach(() => vi.unstubAllGlobals());

describe('the session under single sign-on', () => {
  it('keeps sso and the sign-out of an admin signed in by the proxy', async () => {
    answer(200, { operator: 'ada', role: 'admin', sso: true, sign_out_url: '/oauth2/sign_out' });
    expect(await currentSession()).toEqual({
      kind: 'signed-in',
      session: { operator: 'ada', role: 'admin', csrf_token: '', sso: true, sign_out_url: '/oauth2/sign_out' },
    });
  });
  it('names an outsider and the proxy sign-out back to the portal', async () => {
    answer(403, { code: 7, message: 'admin role required', operator: 'otto', role: 'user', sso: true, sign_out_url: '/oauth2/sign_out' });
    expect(await currentSession()).toEqual({ kind: 'no-access', operator: 'otto', signOutUrl: '/oauth2/sign_out?rd=%2F' });
  });
  it('offers no proxy sign-out to a token session, nor one that leaves the origin', async () => {
    answer(200, { operator: 'alice', role: 'admin', csrf_token: 'c' });
    expect(await currentSession()).toEqual({ kind: 'signed-in', session: { operator: 'alice', role: 'admin', csrf_token: 'c' } });
    answer(403, { operator: 'otto', sso: true, sign_out_url: '//evil.example/' });
    expect(await currentSession()).toEqual({ kind: 'no-access', operator: 'otto' });
  });
  it('sends rd back to the portal', () => {
    expect(signOutUrl('/oauth2/sign_out')).toBe('/oauth2/sign_out?rd=%2F');
  });
});
