import { describe, expect, it } from 'vitest';
import { ApiError } from '../api/errors';
import { freshAgentState, freshAppState, GLOBAL, project, shownTree } from './appState';
import { placeOf } from './route';
import { newTree, workspaceKey } from './tree';

describe('the one app state', () => {
  it('starts loading, signed out, with no agent selected', () => {
    const a = freshAppState();
    expect(a).toMatchObject({ screen: { kind: 'loading' }, session: null, agents: [], notice: null, routing: 0 });
    expect(a.scopes.current).toBeNull();
    // Each agent selection gets its own, unshared state.
    const one = a.scopes.switchTo('codex-a').state;
    const two = a.scopes.switchTo('codex-a').state;
    expect(one).not.toBe(two);
    expect(one.trees).not.toBe(two.trees);
  });

  it('shows Global\u2019s tree on the Global tab and the selected project\u2019s on Projects', () => {
    const st = freshAgentState();
    const g = newTree(GLOBAL);
    const p = newTree(project('demo'));
    st.trees.set(workspaceKey(GLOBAL), g);
    st.trees.set(workspaceKey(project('demo')), p);
    expect(shownTree(st)).toBeUndefined(); // no project selected
    st.selectedProject = 'demo';
    expect(shownTree(st)).toBe(p);
    st.tab = 'global';
    expect(shownTree(st)).toBe(g);
  });
});

describe('placeOf (the URL of what is shown)', () => {
  it('names the tab, the selected project and the open, opening or failed file', () => {
    const st = freshAgentState();
    expect(placeOf('a', st)).toEqual({ agent: 'a', tab: 'projects', project: '', path: '' });
    st.fileLoading = 'x.md'; // no project selected: no file in the URL
    expect(placeOf('a', st)).toEqual({ agent: 'a', tab: 'projects', project: '', path: '' });
    st.selectedProject = 'demo';
    expect(placeOf('a', st)).toEqual({ agent: 'a', tab: 'projects', project: 'demo', path: 'x.md' });
    st.fileLoading = null;
    st.fileError = { path: 'gone.md', ws: project('demo'), error: new ApiError(404, 5, '', 'not found') };
    expect(placeOf('a', st).path).toBe('gone.md');
    st.tab = 'global';
    expect(placeOf('a', st)).toEqual({ agent: 'a', tab: 'global', project: '', path: 'gone.md' });
  });
});
