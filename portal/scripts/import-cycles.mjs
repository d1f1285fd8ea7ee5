// Fails (exit 1) when the portal's own modules import each other in a circle,
// counting type-only and dynamic imports too, or when a feature module
// (src/features/) imports the page's composition (context.ts, app.ts) or
// another feature: each feature is handed a narrow context
// (src/features/ports.ts) instead.
// Usage: node scripts/import-cycles.mjs [srcDir]
import { readdirSync, readFileSync, statSync, existsSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(process.argv[2] ?? join(dirname(fileURLToPath(import.meta.url)), '..', 'src'));
const SPEC = /(?:\bfrom\s*|\bimport\s*\(?\s*)['"](\.{1,2}\/[^'"]+)['"]/g;
const COMPOSITION = new Set(['context.ts', 'app.ts']);
// Within features/, a module imports only ports.ts and the other half of
// its own feature: features reach one another through their context.
const SAME_FEATURE = new Map([
  ['features/liveHooks.ts', ['features/live.ts']],
  ['features/checkpoints.ts', ['features/checkpointPanel.ts']],
]);

function sources(dir) {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return sources(p);
    return /\.ts$/.test(name) && !/\.test\.ts$/.test(name) ? [p] : [];
  });
}

function resolveSpec(from, spec) {
  const base = resolve(dirname(from), spec.replace(/\.js$/, ''));
  for (const c of [base, `${base}.ts`, join(base, 'index.ts')]) {
    if (c.endsWith('.ts') && existsSync(c)) return c;
  }
  return null; // CSS and other assets
}

export function importGraph(files) {
  const graph = new Map();
  for (const f of files) {
    const text = readFileSync(f, 'utf8');
    const deps = new Set();
    for (const m of text.matchAll(SPEC)) {
      const d = resolveSpec(f, m[1]);
      if (d) deps.add(d);
    }
    graph.set(f, [...deps]);
  }
  return graph;
}

export function cycles(graph) {
  const found = [];
  const state = new Map(); // 1 on the stack, 2 done
  const stack = [];
  const visit = (n) => {
    state.set(n, 1);
    stack.push(n);
    for (const d of graph.get(n) ?? []) {
      if (state.get(d) === 1) found.push([...stack.slice(stack.indexOf(d)), d]);
      else if (!state.has(d)) visit(d);
    }
    stack.pop();
    state.set(n, 2);
  };
  for (const n of graph.keys()) if (!state.has(n)) visit(n);
  return found;
}

const graph = importGraph(sources(root));
const rel = (p) => relative(root, p);
const problems = cycles(graph).map((c) => `import circle: ${c.map(rel).join(' -> ')}`);
for (const [f, deps] of graph) {
  if (!rel(f).startsWith('features/')) continue;
  for (const d of deps) {
    if (COMPOSITION.has(rel(d))) problems.push(`${rel(f)} imports ${rel(d)}: a feature gets a narrow context (features/ports.ts)`);
    const peer = rel(d).startsWith('features/') && rel(d) !== 'features/ports.ts';
    if (peer && !(SAME_FEATURE.get(rel(f)) ?? []).includes(rel(d))) {
      problems.push(`${rel(f)} imports ${rel(d)}: features reach one another through their context (features/ports.ts)`);
    }
  }
}
if (problems.length) {
  for (const p of problems) console.error(p);
  process.exit(1);
}
console.log(`import graph: ${graph.size} modules, no circle`);
