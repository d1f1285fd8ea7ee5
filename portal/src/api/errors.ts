// Errors from the gateway, normalised: HTTP status, gRPC code and the stable
// reason from google.rpc.ErrorInfo (contracts ErrorReason). The UI only ever
// shows describeError()'s text, which is actionable and never names an
// endpoint, host or absolute path.
import type { RpcStatus } from './types';

const ERROR_INFO = 'type.googleapis.com/google.rpc.ErrorInfo';

export class ApiError extends Error {
  readonly status: number;
  readonly code: number;
  readonly reason: string;

  constructor(status: number, code: number, reason: string, message: string) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.reason = reason;
  }

  /** Builds an ApiError from an HTTP status and a (possibly non-JSON) body. */
  static from(status: number, body: unknown): ApiError {
    let code = 0;
    let reason = '';
    let message = '';
    if (body && typeof body === 'object') {
      const st = body as RpcStatus;
      code = typeof st.code === 'number' ? st.code : 0;
      message = typeof st.message === 'string' ? st.message : '';
      for (const d of st.details ?? []) {
        if (d && d['@type'] === ERROR_INFO && typeof d['reason'] === 'string') {
          reason = d['reason'];
          break;
        }
      }
    }
    return new ApiError(status, code, reason, message);
  }

  /** The request never got an HTTP answer (offline, gateway down). */
  static network(): ApiError {
    return new ApiError(0, 14, 'NETWORK', '');
  }
}

// gRPC codes (same numbers as the davfs codes).
export const Code = {
  InvalidArgument: 3,
  NotFound: 5,
  AlreadyExists: 6,
  PermissionDenied: 7,
  ResourceExhausted: 8,
  FailedPrecondition: 9,
  Aborted: 10,
  Internal: 13,
  Unavailable: 14,
  Unauthenticated: 16,
} as const;

export function asApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  return new ApiError(0, Code.Internal, 'CLIENT', '');
}

/** A save or mutation lost a race: the revision it was based on is gone. */
export function isConflict(err: unknown): boolean {
  const e = asApiError(err);
  if (e.reason === 'REVISION_MISMATCH') return true;
  return e.reason === '' && (e.status === 409 && e.code === Code.Aborted);
}

/** A directory cursor no longer applies; reload from the first page. */
export function isStaleCursor(err: unknown): boolean {
  const e = asApiError(err);
  if (e.reason === 'CURSOR_STALE') return true;
  // Aborted without a reason while paging: treat it as stale too.
  return e.reason === '' && (e.code === Code.Aborted || e.status === 409);
}

/** The agent's sidecar (or the gateway) cannot be reached right now. */
export function isUnavailable(err: unknown): boolean {
  const e = asApiError(err);
  // One feature of a sidecar that answers (state/features.ts), not the sidecar.
  if (e.reason === 'CHECKPOINTS_UNAVAILABLE' || e.reason === 'WATCH_UNAVAILABLE') return false;
  return (
    e.reason === 'SIDECAR_UNAVAILABLE' ||
    e.reason === 'NETWORK' ||
    e.status === 503 ||
    e.status === 502 ||
    e.status === 504 ||
    e.code === Code.Unavailable
  );
}

export function isUnauthenticated(err: unknown): boolean {
  const e = asApiError(err);
  return e.status === 401 || e.reason === 'UNAUTHENTICATED';
}

export function isForbidden(err: unknown): boolean {
  const e = asApiError(err);
  return e.status === 403 && (e.reason === 'FORBIDDEN' || e.reason === '');
}

const REASON_TEXT: Record<string, string> = {
  INVALID_PATH: 'That path is not allowed. Use a relative path without "." or ".." segments.',
  INVALID_NAME: 'That name is not allowed. Use letters, digits, ".", "_" or "-", and no "/".',
  INVALID_WORKSPACE: 'The workspace reference is not valid. Reload the page and try again.',
  INVALID_CURSOR: 'The listing position is no longer valid. The folder was reloaded.',
  CONFIRMATION_MISMATCH: 'The confirmation does not match the project name exactly.',
  NOT_TEXT: 'The content must be UTF-8 text without NUL characters.',
  NOT_FOUND: 'The file or folder no longer exists. Refresh the tree.',
  AGENT_NOT_FOUND: 'This agent is not configured on the gateway any more. Reload the page.',
  PROJECT_NOT_FOUND: 'The project no longer exists. Refresh the project list.',
  ALREADY_EXISTS: 'Something with that name already exists here. Choose another name.',
  DENYLISTED: 'That name is on the protected list (for example .git or node_modules) and cannot be used here.',
  SYMLINK: 'Symbolic links are not supported; this path cannot be used.',
  OUTSIDE_GLOBAL: 'Global only holds skills/ and AGENTS.md; nothing else can be created there.',
  PROTECTED: 'This item is protected and cannot be changed that way.',
  MULTIPLE_LINKS: 'This file has several hard links and cannot be changed here.',
  READ_ONLY: 'This location is read-only.',
  FORBIDDEN: 'Your account is not allowed to do this. Ask a workspace admin.',
  REVISION_MISMATCH: 'The file was changed elsewhere. Reload it and try again.',
  CURSOR_STALE: 'The folder changed while it was being listed. It was reloaded.',
  TOO_LARGE: 'The content is larger than the editable limit (1 MiB).',
  PATH_TOO_LONG: 'The path is too long.',
  PATH_TOO_DEEP: 'The path has too many levels.',
  PAGE_SIZE_TOO_LARGE: 'Too many items were requested at once.',
  NO_SPACE: 'The volume is full. Free some space and try again.',
  TOO_MANY_STREAMS: 'Too many live-change streams are open for this agent; it will retry shortly.',
  TOO_MANY_UPLOADS: 'Too many uploads to this agent are in progress. Retry in a moment.',
  LOCK_LIMIT: 'Too many WebDAV locks are held. Unlock files you no longer edit, or wait for the locks to expire.',
  NOT_A_FILE: 'That is not a file.',
  NOT_A_DIRECTORY: 'That is not a folder.',
  DIRECTORY_NOT_EMPTY: 'The folder is not empty.',
  MOVE_INTO_SELF: 'A folder cannot be moved into itself or one of its subfolders.',
  NOT_REGULAR: 'Only regular files and folders can be managed here.',
  PROJECT_MANAGEMENT_DISABLED: 'Project management is not enabled for this agent.',
  SIDECAR_UNAVAILABLE: "The agent's file service is unavailable right now. Retry in a moment.",
  CHECKPOINTS_UNAVAILABLE:
    "Checkpoints are unavailable for this agent (its checkpoint store cannot be used; see the banner). Files still work; the agent retries by itself.",
  WATCH_UNAVAILABLE: 'Live changes are unavailable for this agent right now. Files still work; the agent retries by itself.',
  GIT_INIT_FAILED: 'The project could not be initialised with Git, so it was not created. Try again or ask an operator to check the agent.',
  INTERNAL: 'The file service hit an unexpected error. Try again; if it persists, ask an operator to check the logs.',
  UNAUTHENTICATED: 'Your session has ended. Sign in again.',
  NETWORK: 'The gateway could not be reached. Check your connection and retry.',
};

const CODE_TEXT: Record<number, string> = {
  [Code.InvalidArgument]: 'The request was not valid.',
  [Code.NotFound]: 'It no longer exists. Refresh and try again.',
  [Code.AlreadyExists]: 'Something with that name already exists.',
  [Code.PermissionDenied]: 'This is not allowed.',
  [Code.ResourceExhausted]: 'A size or length limit was exceeded.',
  [Code.FailedPrecondition]: 'This cannot be done in the current state.',
  [Code.Aborted]: 'It was changed elsewhere. Refresh and try again.',
  [Code.Unavailable]: "The agent's file service is unavailable right now. Retry in a moment.",
  [Code.Internal]: 'Something went wrong. Try again; if it persists, ask an operator to check the logs.',
  [Code.Unauthenticated]: 'Your session has ended. Sign in again.',
};

// Anything that looks like an endpoint or a host path is cut from server
// messages before they are shown (defence in depth: the server already sends
// safe messages).
const UNSAFE = [
  /\b[a-z][a-z0-9+.-]*:\/\/\S+/gi, // URLs
  /\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b/g, // IPv4[:port]
  /\[[0-9a-f:]+\](?::\d+)?/gi, // [IPv6]:port
  /\blocalhost(?::\d+)?\b/gi,
  /\b[\w.-]+:\d{2,5}\b/g, // host:port
  /(?:^|[\s'"(=])\/(?:[\w.@+-]+\/)*[\w.@+-]*/g, // absolute paths
];

export function sanitize(text: string): string {
  let out = text;
  for (const re of UNSAFE) out = out.replace(re, (m) => (/^[\s'"(=]/.test(m) ? m[0] + '…' : '…'));
  return out.replace(/\s+/g, ' ').trim();
}

/** The message the UI shows for an error: actionable, never an endpoint or host path. */
export function describeError(err: unknown): string {
  const e = asApiError(err);
  const byReason = REASON_TEXT[e.reason];
  if (byReason) return byReason;
  if (e.status === 401) return REASON_TEXT['UNAUTHENTICATED']!;
  if (e.status === 403) return REASON_TEXT['FORBIDDEN']!;
  if (isUnavailable(e)) return REASON_TEXT['SIDECAR_UNAVAILABLE']!;
  const server = e.message ? sanitize(e.message) : '';
  const generic = CODE_TEXT[e.code] ?? 'Something went wrong. Try again.';
  if (server && server.length <= 300) {
    return /[.!?]$/.test(server) ? server : server + '.';
  }
  return generic;
}

/**
 * The message for a failed gateway-level call (the agent list): there is no
 * sidecar involved, so "unavailable" means the gateway (or a proxy in front of
 * it) is not answering.
 */
export function describeGatewayError(err: unknown): string {
  const e = asApiError(err);
  if (e.reason === 'NETWORK') return REASON_TEXT['NETWORK']!;
  if (e.status >= 500 && isUnavailable(e)) return 'The gateway is not answering right now; it may be restarting. Retry in a moment.';
  return describeError(e);
}
