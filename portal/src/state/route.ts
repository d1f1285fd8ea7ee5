// Deep links: the page's URL names the agent, the tab, the project and the
// open file, so a reload, Back and Forward (and a link someone sent) come
// back to the same place.
//
//   /agents/{agent}                                  Projects tab
//   /agents/{agent}/projects/{project}               a project
//   /agents/{agent}/projects/{project}/files/{path}  a file in it
//   /agents/{agent}/global                           the Global tab
//   /agents/{agent}/global/files/{path}              a Global file
//
// Every name is percent-encoded segment by segment; {path} keeps its "/".
import type { AgentState } from './appState';

export type RouteTab = 'projects' | 'global';

export interface Route {
  agent: string;
  tab: RouteTab;
  project: string;
  /** The open file's path inside the workspace; '' for none. */
  path: string;
}

export const emptyRoute = (): Route => ({ agent: '', tab: 'projects', project: '', path: '' });

const enc = (s: string) => encodeURIComponent(s);
const encPath = (p: string) => p.split('/').map(enc).join('/');

export function formatRoute(r: Route): string {
  if (!r.agent) return '/';
  let out = `/agents/${enc(r.agent)}`;
  if (r.tab === 'global') {
    out += '/global';
    if (r.path) out += `/files/${encPath(r.path)}`;
    return out;
  }
  if (r.project) {
    out += `/projects/${enc(r.project)}`;
    if (r.path) out += `/files/${encPath(r.path)}`;
  }
  return out;
}

function dec(s: string): string | null {
  try {
    return decodeURIComponent(s);
  } catch {
    return null;
  }
}

/** Parses a pathname; anything that is not a route is the empty route. */
export function parseRoute(pathname: string): Route {
  const seg = pathname.split('/').slice(1);
  const r = emptyRoute();
  if (seg[0] !== 'agents' || !seg[1]) return r;
  const agent = dec(seg[1]);
  if (!agent) return r;
  r.agent = agent;
  let rest = seg.slice(2).filter((s, i, a) => s !== '' || i < a.length - 1);
  if (rest[0] === 'global') {
    r.tab = 'global';
    rest = rest.slice(1);
  } else if (rest[0] === 'projects' && rest[1]) {
    const project = dec(rest[1]);
    if (!project) return r;
    r.project = project;
    rest = rest.slice(2);
  } else {
    return r;
  }
  if (rest[0] === 'files' && rest.length > 1) {
    const parts = rest.slice(1).map(dec);
    if (parts.every((p): p is string => !!p && p !== '.' && p !== '..' && !p.includes('/'))) r.path = parts.join('/');
  }
  return r;
}

export function sameRoute(a: Route, b: Route): boolean {
  return formatRoute(a) === formatRoute(b);
}

/** Where the page is when agent agentId shows st: the tab, the selected project and the open (or opening) file. */
export function placeOf(agentId: string, st: AgentState): Route {
  const path = st.file?.path ?? st.fileLoading ?? st.fileError?.path ?? '';
  if (st.tab === 'global') return { agent: agentId, tab: 'global', project: '', path };
  return { agent: agentId, tab: 'projects', project: st.selectedProject ?? '', path: st.selectedProject ? path : '' };
}
