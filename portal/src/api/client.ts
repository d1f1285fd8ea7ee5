// Typed REST client for the gateway's WorkspaceManagementService (same
// origin), built with openapi-fetch over the generated contract types. Every
// state-changing request carries the session's CSRF token.
import createClient from 'openapi-fetch';
import { ApiError } from './errors';
import type { Entry, EntryType, paths, WorkspaceRef } from './types';

type Result<T> = { data?: T; error?: unknown; response: Response };

/** The answer's data, or an ApiError for a failed or unreachable request. */
export async function unwrap<T>(p: Promise<Result<T>>): Promise<T> {
  let r: Result<T>;
  try {
    r = await p;
  } catch {
    throw ApiError.network();
  }
  if (!r.response.ok) throw ApiError.from(r.response.status, r.error);
  return (r.data ?? {}) as T;
}

/** A workspace as the REST API's query parameters. */
export function wsQuery(ws: WorkspaceRef) {
  return ws.scope === 'GLOBAL'
    ? { 'workspace.scope': 'GLOBAL' as const }
    : { 'workspace.scope': 'PROJECT' as const, 'workspace.project_name': ws.project_name ?? '' };
}

/**
 * The URL of one of an agent's hand-written REST routes (download, upload,
 * search) with ws and extra as its query.
 */
export function agentRouteUrl(agentId: string, route: string, ws: WorkspaceRef, extra: Record<string, string> = {}): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries({ ...wsQuery(ws), ...extra })) if (v !== undefined) q.set(k, v);
  return `/api/v1/agent-gateway/agents/${encodeURIComponent(agentId)}/${route}?${q}`;
}

export const PAGE_SIZE = 100;

export type Api = ReturnType<typeof createApi>;

/**
 * failed, if set, hears every failed delete (whose automatic checkpoint may
 * be unavailable: state/features.ts).
 */
export function createApi(opts: {
  csrf: () => string;
  pageSize?: number;
  fetch?: typeof fetch;
  baseUrl?: string;
  failed?: (agentId: string, err: unknown) => void;
}) {
  const client = createClient<paths>({
    baseUrl: opts.baseUrl ?? '',
    credentials: 'same-origin',
    ...(opts.fetch ? { fetch: opts.fetch } : {}),
  });
  client.use({
    onRequest({ request }) {
      // Cookie sessions need the CSRF header on state-changing requests; with a
      // trusted proxy there is no session token and nothing to send.
      const csrf = opts.csrf();
      if (csrf && request.method !== 'GET' && request.method !== 'HEAD') {
        request.headers.set('X-CSRF-Token', csrf);
      }
      return request;
    },
  });
  const pageSize = opts.pageSize ?? PAGE_SIZE;
  const seen = <T>(agentId: string, p: Promise<T>): Promise<T> =>
    p.catch((e: unknown) => {
      opts.failed?.(agentId, e);
      throw e;
    });

  return {
    /** One page of agents (ListAgents pages on the server: query filters by ID, total counts the matches). */
    listAgents: (q: { query?: string; cursor?: string; pageSize?: number } = {}) =>
      unwrap(
        client.GET('/api/v1/agent-gateway/agents', {
          params: {
            query: {
              ...(q.pageSize ? { page_size: q.pageSize } : {}),
              ...(q.cursor ? { cursor: q.cursor } : {}),
              ...(q.query ? { query: q.query } : {}),
            },
          },
        }),
      ),

    listProjects: (agentId: string, cursor: string) =>
      unwrap(
        client.GET('/api/v1/agent-gateway/agents/{agent_id}/projects', {
          params: { path: { agent_id: agentId }, query: { page_size: pageSize, ...(cursor ? { cursor } : {}) } },
        }),
      ),

    /** Usage (bytes, files) of the named projects (and Global), and the volume's size and free space. */
    getUsage: (agentId: string, projectNames: string[], global = false) =>
      unwrap(
        client.GET('/api/v1/agent-gateway/agents/{agent_id}/usage', {
          params: { path: { agent_id: agentId }, query: { project_names: projectNames, ...(global ? { global: true } : {}) } },
        }),
      ),

    createProject: (agentId: string, name: string) =>
      unwrap(
        client.POST('/api/v1/agent-gateway/agents/{agent_id}/projects', {
          params: { path: { agent_id: agentId } },
          body: { name },
        }),
      ),

    /** skipCheckpoint: delete without the automatic checkpoint (a full store's override, deleteOverride.ts). */
    deleteProject: (agentId: string, name: string, confirmName: string, skipCheckpoint = false) =>
      seen(
        agentId,
        unwrap(
          client.DELETE('/api/v1/agent-gateway/agents/{agent_id}/projects/{name}', {
            params: {
              path: { agent_id: agentId, name },
              query: { confirm_name: confirmName, ...(skipCheckpoint ? { skip_checkpoint: true } : {}) },
            },
          }),
        ),
      ),

    listEntries: (agentId: string, ws: WorkspaceRef, path: string, cursor: string) =>
      unwrap(
        client.GET('/api/v1/agent-gateway/agents/{agent_id}/projects/entries', {
          params: {
            path: { agent_id: agentId },
            query: { ...wsQuery(ws), path, page_size: pageSize, ...(cursor ? { cursor } : {}) },
          },
        }),
      ),

    getFile: (agentId: string, ws: WorkspaceRef, path: string) =>
      unwrap(
        client.GET('/api/v1/agent-gateway/agents/{agent_id}/projects/files', {
          params: { path: { agent_id: agentId }, query: { ...wsQuery(ws), path } },
        }),
      ),

    createEntry: (agentId: string, ws: WorkspaceRef, parentPath: string, name: string, type: EntryType) =>
      unwrap(
        client.POST('/api/v1/agent-gateway/agents/{agent_id}/projects/entries', {
          params: { path: { agent_id: agentId } },
          body: { workspace: ws, parent_path: parentPath, name, type },
        }),
      ),

    updateFile: (agentId: string, ws: WorkspaceRef, path: string, content: string, expectedRevision: string) =>
      unwrap(
        client.PUT('/api/v1/agent-gateway/agents/{agent_id}/projects/files', {
          params: { path: { agent_id: agentId } },
          body: { workspace: ws, path, content, expected_revision: expectedRevision },
        }),
      ),

    moveEntry: (agentId: string, ws: WorkspaceRef, source: Entry, destinationPath: string) =>
      unwrap(
        client.POST('/api/v1/agent-gateway/agents/{agent_id}/projects/entries:move', {
          params: { path: { agent_id: agentId } },
          body: {
            workspace: ws,
            source_path: source.path ?? '',
            destination_path: destinationPath,
            expected_revision: source.revision ?? '',
          },
        }),
      ),

    deleteEntry: (agentId: string, ws: WorkspaceRef, entry: Entry, recursive: boolean, skipCheckpoint = false) =>
      seen(
        agentId,
        unwrap(
          client.DELETE('/api/v1/agent-gateway/agents/{agent_id}/projects/entries', {
            params: {
              path: { agent_id: agentId },
              query: {
                ...wsQuery(ws),
                path: entry.path ?? '',
                expected_revision: entry.revision ?? '',
                ...(recursive ? { recursive: true } : {}),
                ...(skipCheckpoint ? { skip_checkpoint: true } : {}),
              },
            },
          }),
        ),
      ),
  };
}
