// Downloads (docs/transfer.md): a file as it is on disk, a folder as a .zip
// the gateway streams while it reads it. The browser fetches the URL itself
// (same origin, the session cookie), so nothing is held in the page.
import { agentRouteUrl } from './client';
import type { WorkspaceRef } from './types';

/** The REST download URL of path ('' the workspace's root) in ws of agentId. */
export function downloadUrl(agentId: string, ws: WorkspaceRef, path: string): string {
  return agentRouteUrl(agentId, 'download', ws, { path });
}

/** Starts the browser's download of url (an anchor with download, clicked). */
export function startDownload(url: string, doc: Document = document): void {
  const a = doc.createElement('a');
  a.href = url;
  a.download = '';
  a.rel = 'noopener';
  doc.body.append(a);
  a.click();
  a.remove();
}
