// Typed REST client for the gateway's CheckpointManagementService (issue
// #15), built like client.ts: openapi-fetch over the generated contract
// types, the session's CSRF token on every state-changing request.
import createClient from 'openapi-fetch';
import { unwrap, wsQuery } from './client';
import type { components, paths } from '../../../contracts/gen/ts/workspace';
import type { WorkspaceRef } from './types';

type S = components['schemas'];
export type Checkpoint = S['v1Checkpoint'];
export type CheckpointChange = S['v1CheckpointChange'];
export type ListResponse = S['v1ListCheckpointsResponse'];
export type CompareResponse = S['v1CompareCheckpointResponse'];
export type RestoreResponse = S['v1RestoreCheckpointResponse'];
export type DeletedProject = S['v1DeletedProject'];

export type CheckpointApi = ReturnType<typeof createCheckpointApi>;

/**
 * observe, if set, hears the outcome of every call (null: success), so the
 * page can show when the agent's checkpoints are unavailable (state/features.ts).
 */
export function createCheckpointApi(opts: {
  csrf: () => string;
  fetch?: typeof fetch;
  baseUrl?: string;
  observe?: (agentId: string, err: unknown | null) => void;
}) {
  const client = createClient<paths>({
    baseUrl: opts.baseUrl ?? '',
    credentials: 'same-origin',
    ...(opts.fetch ? { fetch: opts.fetch } : {}),
  });
  client.use({
    onRequest({ request }) {
      const csrf = opts.csrf();
      if (csrf && request.method !== 'GET' && request.method !== 'HEAD') request.headers.set('X-CSRF-Token', csrf);
      return request;
    },
  });
  const base = '/api/v1/agent-gateway/agents/{agent_id}/checkpoints' as const;
  const seen = <T>(agentId: string, p: Promise<T>): Promise<T> =>
    p.then(
      (v) => (opts.observe?.(agentId, null), v),
      (e: unknown) => {
        opts.observe?.(agentId, e);
        throw e;
      },
    );
  return {
    /** Newest first; with path, only the checkpoints (and per-file versions) that hold it. */
    list: (agentId: string, ws: WorkspaceRef, path = '') =>
      seen(
        agentId,
        unwrap(client.GET(base, { params: { path: { agent_id: agentId }, query: { ...wsQuery(ws), ...(path ? { path } : {}) } } })),
      ),

    create: (agentId: string, ws: WorkspaceRef, label: string, path = '') =>
      seen(
        agentId,
        unwrap(client.POST(base, { params: { path: { agent_id: agentId } }, body: { workspace: ws, label, path } })),
      ),

    compare: (agentId: string, ws: WorkspaceRef, id: string, o: { against?: string; path?: string; diffs?: boolean } = {}) =>
      seen(
        agentId,
        unwrap(
          client.GET('/api/v1/agent-gateway/agents/{agent_id}/checkpoints/{checkpoint_id}/compare', {
            params: {
              path: { agent_id: agentId, checkpoint_id: id },
              query: {
                ...wsQuery(ws),
                ...(o.against ? { against_checkpoint_id: o.against } : {}),
                ...(o.path ? { path: o.path } : {}),
                ...(o.diffs ? { include_diffs: true } : {}),
              },
            },
          }),
        ),
      ),

    restore: (agentId: string, ws: WorkspaceRef, id: string, path: string, planToken: string) =>
      seen(
        agentId,
        unwrap(
          client.POST('/api/v1/agent-gateway/agents/{agent_id}/checkpoints/{checkpoint_id}:restore', {
            params: { path: { agent_id: agentId, checkpoint_id: id } },
            body: { workspace: ws, path, plan_token: planToken },
          }),
        ),
      ),

    /** The agent's deleted projects that their automatic checkpoints can bring back, newest first. */
    listDeleted: (agentId: string) =>
      seen(agentId, unwrap(client.GET('/api/v1/agent-gateway/agents/{agent_id}/deleted-projects', { params: { path: { agent_id: agentId } } }))),

    /** Brings a deleted project back, as name or restoreAs (409 ALREADY_EXISTS when that project exists). */
    restoreDeleted: (agentId: string, name: string, o: { checkpointId?: string; restoreAs?: string } = {}) =>
      seen(
        agentId,
        unwrap(
          client.POST('/api/v1/agent-gateway/agents/{agent_id}/deleted-projects/{project_name}:restore', {
            params: { path: { agent_id: agentId, project_name: name } },
            body: { ...(o.checkpointId ? { checkpoint_id: o.checkpointId } : {}), ...(o.restoreAs ? { restore_as: o.restoreAs } : {}) },
          }),
        ),
      ),

    remove: (agentId: string, ws: WorkspaceRef, id: string) =>
      seen(
        agentId,
        unwrap(
          client.DELETE('/api/v1/agent-gateway/agents/{agent_id}/checkpoints/{checkpoint_id}', {
            params: { path: { agent_id: agentId, checkpoint_id: id }, query: wsQuery(ws) },
          }),
        ),
      ),
  };
}
