// The Agent Skills rules Codex applies when it loads skills/<folder>/SKILL.md:
// a skill whose front matter breaks them is skipped. Checked as the user
// types a new skill's name and before a SKILL.md is saved.

export const SKILL_NAME_MAX = 64;
export const SKILL_DESCRIPTION_MAX = 1024;

/** Returns why name is not a valid skill name, or null when it is. */
export function skillNameProblem(name: string): string | null {
  if (name === '') return 'Enter a skill name.';
  if (name.length > SKILL_NAME_MAX) return `Use at most ${SKILL_NAME_MAX} characters.`;
  if (!/^[a-z0-9-]+$/.test(name)) return 'Use only lowercase letters a-z, digits and "-" (e.g. review-prs).';
  if (name.startsWith('-') || name.endsWith('-')) return 'A skill name cannot start or end with "-".';
  if (name.includes('--')) return 'A skill name cannot contain "--".';
  return null;
}

/** The front matter of a SKILL.md: its name and description, as Codex reads them. */
export interface SkillFrontMatter {
  name?: string;
  description?: string;
}

/** Reads the YAML front matter's top-level scalars (name, description); null when there is none. */
export function parseFrontMatter(text: string): SkillFrontMatter | null {
  const m = /^---\r?\n([\s\S]*?)\r?\n---[ \t]*(\r?\n|$)/.exec(text);
  if (!m) return null;
  const out: SkillFrontMatter = {};
  for (const line of (m[1] ?? '').split(/\r?\n/)) {
    const kv = /^(name|description):[ \t]*(.*)$/.exec(line);
    if (!kv) continue;
    out[kv[1] as keyof SkillFrontMatter] = unquote((kv[2] ?? '').trim());
  }
  return out;
}

function unquote(v: string): string {
  if (v.length >= 2 && ((v.startsWith('"') && v.endsWith('"')) || (v.startsWith("'") && v.endsWith("'")))) return v.slice(1, -1);
  return v;
}

/** True when path is a skill's SKILL.md in Global: skills/<folder>/SKILL.md. */
export function skillFolderOf(path: string): string | null {
  const m = /^skills\/([^/]+)\/SKILL\.md$/.exec(path);
  return m?.[1] ?? null;
}

/** What Codex would object to in the SKILL.md text of folder: [] when it loads it. */
export function skillProblems(folder: string, text: string): string[] {
  const fm = parseFrontMatter(text);
  if (!fm) return ['SKILL.md has no front matter (a first line "---", name and description, then "---"): Codex would skip this skill.'];
  const out: string[] = [];
  if (fm.name === undefined || fm.name === '') out.push('The front matter has no name.');
  else {
    const p = skillNameProblem(fm.name);
    if (p) out.push(`name "${fm.name}": ${p}`);
    else if (fm.name !== folder) out.push(`name "${fm.name}" differs from its folder "${folder}".`);
  }
  if (fm.description === undefined || fm.description === '') out.push('The front matter has no description.');
  else if (fm.description.length > SKILL_DESCRIPTION_MAX) out.push(`The description has ${fm.description.length} characters; at most ${SKILL_DESCRIPTION_MAX}.`);
  if (out.length) out.push('Codex would skip this skill.');
  return out;
}
