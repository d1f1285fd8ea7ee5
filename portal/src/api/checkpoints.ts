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

export type CheckpointApi = ReturnType<typeof createCheckpointApi>;

export function createCheckpointApi(opts: { csrf: () => string; fetch?: typeof fetch; baseUrl?: string }) {
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
  return {
    /** Newest first; with path, only the checkpoints (and per-file versions) that hold it. */
    list: (agentId: string, ws: WorkspaceRef, path = '') =>
      unwrap(client.GET(base, { params: { path: { agent_id: agentId }, query: { ...wsQuery(ws), ...(path ? { path } : {}) } } })),

    create: (agentId: string, ws: WorkspaceRef, label: string, path = '') =>
      unwrap(client.POST(base, { params: { path: { agent_id: agentId } }, body: { workspace: ws, label, path } })),

    compare: (agentId: string, ws: WorkspaceRef, id: string, o: { against?: string; path?: string; diffs?: boolean } = {}) =>
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

    restore: (agentId: string, ws: WorkspaceRef, id: string, path: string, planToken: string) =>
      unwrap(
        client.POST('/api/v1/agent-gateway/agents/{agent_id}/checkpoints/{checkpoint_id}:restore', {
          params: { path: { agent_id: agentId, checkpoint_id: id } },
          body: { workspace: ws, path, plan_token: planToken },
        }),
      ),

    remove: (agentId: string, ws: WorkspaceRef, id: string) =>
      unwrap(
        client.DELETE('/api/v1/agent-gateway/agents/{agent_id}/checkpoints/{checkpoint_id}', {
          params: { path: { agent_id: agentId, checkpoint_id: id }, query: wsQuery(ws) },
        }),
      ),
  };
}
