import { describe, expect, it } from 'vitest';
import { parseFrontMatter, skillFolderOf, skillNameProblem, skillProblems } from './skills';

describe('skillNameProblem', () => {
  it.each(['review-prs', 'a', 'pdf2text', 'a-b-c', 'x'.repeat(64)])('accepts %s', (n) => {
    expect(skillNameProblem(n)).toBeNull();
  });
  it.each([
    ['', 'Enter'],
    ['Review PRs', 'lowercase'],
    ['review_prs', 'lowercase'],
    ['Review', 'lowercase'],
    ['-review', 'start or end'],
    ['review-', 'start or end'],
    ['review--prs', '"--"'],
    ['x'.repeat(65), 'at most 64'],
    ['ré', 'lowercase'],
  ])('refuses %j', (n, why) => {
    expect(skillNameProblem(n)).toContain(why);
  });
});

describe('skillProblems', () => {
  const md = (fm: string) => `---\n${fm}\n---\n\n# body\n`;
  it('accepts a valid SKILL.md', () => {
    expect(skillProblems('review-prs', md('name: review-prs\ndescription: Reviews pull requests.'))).toEqual([]);
    expect(skillProblems('a', md('name: "a"\ndescription: \'quoted\''))).toEqual([]);
  });
  it('names each problem and says Codex would skip it', () => {
    const p = skillProblems('review-prs', md('name: Review PRs\ndescription: x'));
    expect(p[0]).toContain('lowercase');
    expect(p.at(-1)).toContain('Codex would skip');
    expect(skillProblems('review-prs', md('name: other\ndescription: x'))[0]).toContain('differs from its folder');
    expect(skillProblems('a', md('name: a'))[0]).toContain('no description');
    expect(skillProblems('a', md(`name: a\ndescription: ${'d'.repeat(1025)}`))[0]).toContain('1025 characters');
    expect(skillProblems('a', md(`name: a\ndescription: ${'d'.repeat(1024)}`))).toEqual([]);
    expect(skillProblems('a', '# no front matter\n')[0]).toContain('no front matter');
  });
  it('reads CRLF front matter', () => {
    expect(parseFrontMatter('---\r\nname: a\r\ndescription: b\r\n---\r\n')).toEqual({ name: 'a', description: 'b' });
  });
  it('finds the skill folder of a SKILL.md path', () => {
    expect(skillFolderOf('skills/review-prs/SKILL.md')).toBe('review-prs');
    expect(skillFolderOf('skills/a/b/SKILL.md')).toBeNull();
    expect(skillFolderOf('skills/a/README.md')).toBeNull();
  });
});
