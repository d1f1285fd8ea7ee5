import { describe, expect, it } from 'vitest';
import { emptyRoute, formatRoute, parseRoute, type Route } from './route';

describe('routes', () => {
  const cases: [string, Route][] = [
    ['/', emptyRoute()],
    ['/agents/codex-a', { agent: 'codex-a', tab: 'projects', project: '', path: '' }],
    ['/agents/codex-a/projects/demo', { agent: 'codex-a', tab: 'projects', project: 'demo', path: '' }],
    ['/agents/codex-a/projects/demo/files/src/main.go', { agent: 'codex-a', tab: 'projects', project: 'demo', path: 'src/main.go' }],
    ['/agents/codex-a/global', { agent: 'codex-a', tab: 'global', project: '', path: '' }],
    ['/agents/codex-a/global/files/skills/review/SKILL.md', { agent: 'codex-a', tab: 'global', project: '', path: 'skills/review/SKILL.md' }],
    ['/agents/a.b/projects/p/files/with%20space/%23hash%3F.md', { agent: 'a.b', tab: 'projects', project: 'p', path: 'with space/#hash?.md' }],
  ];
  for (const [url, route] of cases) {
    it(`${url} round-trips`, () => {
      expect(parseRoute(url)).toEqual(route);
      expect(formatRoute(route)).toBe(url);
    });
  }
  it('refuses what is not a place', () => {
    expect(parseRoute('/dav/codex-a/')).toEqual(emptyRoute());
    expect(parseRoute('/agents/%E0%A4%A')).toEqual(emptyRoute());
    expect(parseRoute('/agents/a/projects/p/files/../x').path).toBe('');
    expect(parseRoute('/agents/a/projects/p/files/a%2Fb').path).toBe('');
    expect(parseRoute('/agents/a/projects/p/').project).toBe('p');
  });
});
