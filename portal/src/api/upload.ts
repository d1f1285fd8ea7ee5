// Uploads (docs/transfer.md): one file's bytes by XMLHttpRequest (whose
// upload.onprogress reports what was sent, and abort() cancels it) to the
// REST upload route, and the size limit that route's OPTIONS publishes as
// X-Max-Upload-Size (the sidecar's maxUploadSize).
import { agentRouteUrl } from './client';
import { ApiError } from './errors';
import type { WorkspaceRef } from './types';

/** How an existing name is treated: fail (create only), replace, or replace that revision only. */
export type IfExists = { mode: 'fail' } | { mode: 'replace'; revision?: string };

/** The REST upload URL of path in ws of agentId. */
export function uploadUrl(agentId: string, ws: WorkspaceRef, path: string, ifExists: IfExists): string {
  const extra: Record<string, string> = { path, if_exists: ifExists.mode };
  if (ifExists.mode === 'replace' && ifExists.revision) extra['expected_revision'] = ifExists.revision;
  return agentRouteUrl(agentId, 'upload', ws, extra);
}

/** X-Max-Upload-Size as a number of bytes; null when it is missing or not a positive integer. */
export function parseLimit(v: string | null): number | null {
  if (v === null || !/^\d+$/.test(v.trim())) return null;
  const n = Number(v.trim());
  return Number.isSafeInteger(n) && n > 0 ? n : null;
}

/** The upload limit in bytes of ws (OPTIONS on the upload route); null when it is not published. */
export async function uploadLimit(agentId: string, ws: WorkspaceRef, f: typeof fetch = fetch): Promise<number | null> {
  let r: Response;
  try {
    r = await f(agentRouteUrl(agentId, 'upload', ws), { method: 'OPTIONS', credentials: 'same-origin' });
  } catch {
    throw ApiError.network();
  }
  if (!r.ok) throw ApiError.from(r.status, await r.json().catch(() => null));
  return parseLimit(r.headers.get('X-Max-Upload-Size'));
}

/** How one PUT ended: null when it succeeded, else the ApiError (status 0 and reason CANCELLED when aborted). */
export interface PutHandle {
  readonly done: Promise<ApiError | null>;
  abort(): void;
}

/** Sends body to url (csrf in X-CSRF-Token when set); onProgress hears the bytes sent so far. */
export function putFile(url: string, body: Blob, csrf: string, onProgress: (sent: number) => void): PutHandle {
  const xhr = new XMLHttpRequest();
  const done = new Promise<ApiError | null>((resolve) => {
    xhr.upload.onprogress = (e) => onProgress(e.loaded);
    xhr.onload = () => {
      if (xhr.status >= 200 && xhr.status < 300) {
        onProgress(body.size);
        return resolve(null);
      }
      let parsed: unknown = null;
      try {
        parsed = JSON.parse(xhr.responseText);
      } catch {
        parsed = null;
      }
      resolve(ApiError.from(xhr.status, parsed));
    };
    xhr.onerror = () => resolve(ApiError.network());
    xhr.onabort = () => resolve(new ApiError(0, 1, 'CANCELLED', 'cancelled'));
    xhr.open('PUT', url);
    xhr.withCredentials = true;
    xhr.setRequestHeader('Content-Type', 'application/octet-stream');
    if (csrf) xhr.setRequestHeader('X-CSRF-Token', csrf);
    xhr.send(body);
  });
  return { done, abort: () => xhr.abort() };
}
