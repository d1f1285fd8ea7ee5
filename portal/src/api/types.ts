// Names for the generated contract types (contracts/gen/ts/workspace.d.ts,
// produced by `make generate`). Aliases only: no protocol type is written by
// hand here.
import type { components, paths } from '../../../contracts/gen/ts/workspace';

type S = components['schemas'];
export type { paths };
export type Agent = S['v1Agent'];
export type Project = S['v1Project'];
export type Entry = S['v1Entry'];
export type EntryType = S['v1EntryType'];
export type NonEditableReason = S['v1NonEditableReason'];
export type WorkspaceRef = S['v1WorkspaceRef'];
export type WorkspaceScope = S['v1WorkspaceScope'];
export type ListEntriesResponse = S['v1ListEntriesResponse'];
export type ListProjectsResponse = S['v1ListProjectsResponse'];
export type GetUsageResponse = S['v1GetUsageResponse'];
export type WorkspaceUsage = S['v1WorkspaceUsage'];
export type GetFileResponse = S['v1GetFileResponse'];
export type RpcStatus = S['rpcStatus'];
export type SearchMatch = S['v1SearchMatch'];
export type SearchSummary = S['v1SearchSummary'];
export type SearchResult = S['v1SearchResult'];
