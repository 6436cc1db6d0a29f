/**
 * The house's rules, checked on the code itself: the headless core (src/core) imports nothing of
 * the shells (src/cli, src/worker, src/ui), and its modules import one another without a cycle
 * (static, type-only and literal dynamic imports all count: a cycle through any of them makes the
 * modules impossible to read, or load, one at a time).
 */
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../../..');
const core = path.join(root, 'src/core');

function files(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(path.join(dir, e.name)) : /\.(ts|mjs)$/.test(e.name) ? [path.join(dir, e.name)] : []);
}

/** Relative specifiers a module imports: `import … from`, `export … from`, `import('…')` with a literal. */
export function importsOf(source: string): string[] {
  const out: string[] = [];
  const re = /(?:^|[\s;])(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/gm;
  for (const m of source.matchAll(re)) {
    const spec = m[1] ?? m[2];
    if (spec.startsWith('.')) out.push(spec);
  }
  return out;
}

/**
 * Relative specifiers a module imports as values (what runs when it loads): `import type`, `export type`
 * and braces of nothing but `type` names are left out; a side-effect import and a literal `import('…')` count.
 */
export function valueImportsOf(source: string): string[] {
  const file = ts.createSourceFile('x.ts', source, ts.ScriptTarget.Latest, true);
  const out: string[] = [];
  const typeOnly = (names: ts.NamedImportBindings | ts.NamedExportBindings | undefined) =>
    names !== undefined && (ts.isNamedImports(names) || ts.isNamedExports(names)) && names.elements.length > 0 && names.elements.every((e) => e.isTypeOnly);
  const visit = (n: ts.Node) => {
    if (ts.isImportDeclaration(n) && ts.isStringLiteral(n.moduleSpecifier)) {
      const c = n.importClause;
      if (!c || (!c.isTypeOnly && !(c.name === undefined && typeOnly(c.namedBindings)))) out.push(n.moduleSpecifier.text);
    } else if (ts.isExportDeclaration(n) && n.moduleSpecifier && ts.isStringLiteral(n.moduleSpecifier)) {
      if (!n.isTypeOnly && !typeOnly(n.exportClause)) out.push(n.moduleSpecifier.text);
    } else if (ts.isCallExpression(n) && n.expression.kind === ts.SyntaxKind.ImportKeyword && n.arguments[0] && ts.isStringLiteral(n.arguments[0])) {
      out.push(n.arguments[0].text);
    }
    ts.forEachChild(n, visit);
  };
  visit(file);
  return out.filter((s) => s.startsWith('.'));
}

const graph = new Map<string, string[]>(files(core).map((f) => [f, importsOf(fs.readFileSync(f, 'utf8')).map((s) => path.resolve(path.dirname(f), s))]));
const rel = (f: string) => path.relative(root, f);

/**
 * The files of src/core that `start` loads, following value imports only, leaving out the folders
 * `skip` matches (the engine, the tools, the statistics and the kernels: what the method runs on).
 */
function valueClosure(start: string, skip: RegExp): string[] {
  const seen = new Set([path.join(root, start)]);
  const todo = [...seen];
  while (todo.length) {
    const f = todo.pop()!;
    for (const s of valueImportsOf(fs.readFileSync(f, 'utf8'))) {
      const d = path.resolve(path.dirname(f), s);
      if (!d.startsWith(core + path.sep) || skip.test(rel(d)) || seen.has(d)) continue;
      seen.add(d);
      todo.push(d);
    }
  }
  return [...seen].map(rel).sort();
}

describe('the import graph of src/core', () => {
  it('reads imports the way the checks need (a worked example)', () => {
    const example = `import { a } from './a.ts';\nimport type { B } from "../b.ts";\nexport { c } from './c.ts';\nconst d = import('./d.ts');\nimport x from 'pkg';\n` +
      `import { type E, f } from './ef.ts';\nimport { type G } from './g.ts';\nexport type { H } from './h.ts';\nimport './i.ts';`;
    expect(importsOf(example)).toEqual(['./a.ts', '../b.ts', './c.ts', './d.ts', './ef.ts', './g.ts', './h.ts']);
    expect(valueImportsOf(example)).toEqual(['./a.ts', './c.ts', './d.ts', './ef.ts', './i.ts']);
  });

  it('imports nothing from the shells (src/cli, src/worker, src/ui)', () => {
    const bad = [...graph].flatMap(([f, deps]) => deps.filter((d) => !d.startsWith(core + path.sep)).map((d) => `${rel(f)} -> ${rel(d)}`));
    expect(bad).toEqual([]);
  });

  it('has no import cycle', () => {
    const state = new Map<string, 'open' | 'done'>();
    const cycles: string[] = [];
    const visit = (f: string, trail: string[]) => {
      if (state.get(f) === 'done') return;
      if (state.get(f) === 'open') {
        cycles.push([...trail.slice(trail.indexOf(f)), f].map(rel).join(' -> '));
        return;
      }
      state.set(f, 'open');
      for (const d of graph.get(f) ?? []) visit(d, [...trail, f]);
      state.set(f, 'done');
    };
    for (const f of graph.keys()) visit(f, []);
    expect(cycles).toEqual([]);
  });
});

describe('the algorithm apart from the scheduling', () => {
  // Where work runs (this thread, lane threads) is compute/'s business: the loop and the update declare
  // what they need (loop/train.ts Compute, rl/update.ts Gradients), the caller passes it in, and they
  // never import compute/, lanes, pools, workers or message plumbing.
  const threads = /compute\/|worker|\/cli\//;
  const importsOfFile = (f: string) => graph.get(path.join(root, f)) ?? [];
  const src = (f: string) => fs.readFileSync(path.join(root, f), 'utf8');

  /** One iteration, in reading order (docs/design.md). */
  const READING_ORDER = [
    'src/core/loop/train.ts', 'src/core/loop/curriculum.ts', 'src/core/loop/rollout.ts', 'src/core/loop/agents.ts',
    'src/core/loop/rewards.ts', 'src/core/coach/coach.ts', 'src/core/rl/update.ts', 'src/core/rl/ppo.ts',
  ];
  /**
   * What one iteration loads besides what it runs on (the engine, the tools, the statistics, the kernels):
   * the value imports of every file of the reading order, so that the files the loop reaches through an
   * interface (rollout.ts, agents.ts, coach.ts: it is handed a Compute, a Coach) count as well as those it imports.
   */
  const ITERATION = [...new Set(READING_ORDER.flatMap((f) => valueClosure(f, /^src\/core\/(engine|tools|stats|kernels)\//)))].sort();
  const BUDGET = 20;

  it(`one iteration (the reading order and its value imports within src/core, but the engine, tools, stats and kernels) is at most ${BUDGET} files, none a team's`, () => {
    expect(ITERATION.length, ITERATION.join('\n')).toBeLessThanOrEqual(BUDGET);
    expect(ITERATION.filter((f) => f.startsWith('src/core/domains/'))).toEqual([]);
    for (const f of READING_ORDER) expect(ITERATION).toContain(f);
    // The figure docs/design.md gives is the one measured here, and it lists every one of the files.
    const design = fs.readFileSync(path.join(root, 'docs/design.md'), 'utf8');
    expect(design).toMatch(new RegExp(`loads? ${ITERATION.length} files`));
    expect(ITERATION.filter((f) => !design.includes(f.replace('src/core/', '')))).toEqual([]);
  });

  it('docs/design.md names the reading order in that order', () => {
    const design = fs.readFileSync(path.join(root, 'docs/design.md'), 'utf8');
    const at = READING_ORDER.map((f) => design.indexOf(f.replace('src/core/', '')));
    expect(at.every((i) => i >= 0), READING_ORDER.filter((_, k) => at[k] < 0).join(', ')).toBe(true);
    expect([...at].sort((a, b) => a - b)).toEqual(at);
  });

  it.each(READING_ORDER)('%s imports nothing of compute/ and speaks of no lane, worker, thread, spare or beside', (f) => {
    expect(importsOfFile(f).length).toBeGreaterThan(0); // the file is where the rule says
    expect(importsOfFile(f).filter((d) => threads.test(d)).map(rel)).toEqual([]);
    expect(src(f).match(/\b(lanes?|workers?|threads?|spare|beside)\b/gi) ?? []).toEqual([]);
  });

  it('no file of src/core/loop or src/core/rl imports anything about threads', () => {
    const bad = [...graph].filter(([f]) => /src\/core\/(loop|rl)\//.test(f))
      .flatMap(([f, deps]) => deps.filter((d) => threads.test(d)).map((d) => `${rel(f)} -> ${rel(d)}`));
    expect(bad).toEqual([]);
  });

  it('compute/ holds no rollout runner and no loss: it calls playPass and ppoGradient', () => {
    const dir = path.join(core, 'compute');
    for (const f of files(dir)) {
      const text = fs.readFileSync(f, 'utf8');
      expect(text, rel(f)).not.toMatch(/\b(runRollouts|ppoLoss|variableGrads|EngineAgents)\b/);
    }
    expect(src('src/core/compute/local.ts')).toMatch(/playPass\(/);
    expect(src('src/core/compute/local.ts')).toMatch(/ppoGradient\(/);
  });
});

describe('a team is one folder', () => {
  // The loop receives its team (loop/team.ts declares what it needs); the callers resolve it from the registry.
  it('loop/, coach/ and rl/ import nothing from domains/ (not even a type) and never name it', () => {
    const bad = [...graph].filter(([f]) => /src\/core\/(loop|coach|rl)\//.test(f))
      .flatMap(([f, deps]) => deps.filter((d) => /src\/core\/domains\//.test(d)).map((d) => `${rel(f)} -> ${rel(d)}`));
    expect(bad).toEqual([]);
    const named = files(path.join(core, 'loop')).filter((f) => fs.readFileSync(f, 'utf8').includes('domains/')).map(rel);
    expect(named).toEqual([]);
  });
});

describe('the shells and the benchmarks', () => {
  // The benchmarks sit above the CLI: `mappa bench` runs bench/run.ts in a child process, never imports it.
  it('no file of src/cli imports bench/', () => {
    const cli = path.join(root, 'src/cli');
    const bad = files(cli).flatMap((f) => importsOf(fs.readFileSync(f, 'utf8')).map((s) => path.resolve(path.dirname(f), s))
      .filter((d) => d.startsWith(path.join(root, 'bench') + path.sep)).map((d) => `${rel(f)} -> ${rel(d)}`));
    expect(bad).toEqual([]);
  });
});

describe('the page (src/ui)', () => {
  const ui = path.join(root, 'src/ui');
  const uiFiles = (dir: string): string[] => fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? uiFiles(path.join(dir, e.name)) : /\.(ts|svelte)$/.test(e.name) ? [path.join(dir, e.name)] : []);
  // Model work (a backend, a model, a coach that loads one) happens in the training worker only:
  // the page reaches it through the worker client, so the main thread never loads tfjs or web-llm.
  const workerOnly = [/src\/core\/engine\//, /webllm-coach\.ts$/, /src\/core\/loop\/(train|session)\.ts$/, /src\/core\/lab\/(lab|shelf|runs|tabs)\.ts$/, /src\/core\/lab\/experiments\/.*-run\.ts$/, /^@tensorflow\//, /^@mlc-ai\//];

  it('imports no model work except as types', () => {
    const bad: string[] = [];
    for (const f of uiFiles(ui)) {
      const src = fs.readFileSync(f, 'utf8');
      const re = /(?:^|[\s;])import\s+(?!type\s)[^'"]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/gm;
      for (const m of src.matchAll(re)) {
        const spec = m[1] ?? m[2];
        const target = spec.startsWith('.') ? path.resolve(path.dirname(f), spec) : spec;
        if (workerOnly.some((r) => r.test(target))) bad.push(`${rel(f)} -> ${spec}`);
      }
    }
    expect(bad).toEqual([]);
  });

  // The core owns the maths and the bookkeeping: the page computes no advantage (core/lab/credit-per-action.ts
  // does, with the trainer's functions) and reads a run's team from the core, never from its id.
  it('computes no advantage and parses no run id', () => {
    const bad: string[] = [];
    for (const f of uiFiles(ui)) {
      const src = fs.readFileSync(f, 'utf8');
      if (/from\s*['"][^'"]*rl\/advantages(\.ts)?['"]/.test(src)) bad.push(`${rel(f)} imports rl/advantages`);
      // The views come ready from core/lab/credit-per-action.ts (creditTable, estimatedAdvantages): no advantage maths here.
      if (/\b(batchAdvantages|computeAdvantages)\b/.test(src)) bad.push(`${rel(f)} computes advantages`);
      if (/runId\s*\.\s*(startsWith|split|match|indexOf|replace)\(/.test(src)) bad.push(`${rel(f)} parses a run id`);
    }
    expect(bad).toEqual([]);
  });

  it('names files that exist (a move must not empty the rule)', () => {
    const all = files(core);
    for (const r of workerOnly.filter((x) => x.source.includes('src'))) expect(all.some((f) => r.test(f)), String(r)).toBe(true);
  });
});

describe('the shells that run a training', () => {
  // The run's life is the core's (core/loop/session.ts, core/lab/lab.ts); the shells only parse,
  // print and pass messages. Thin, and with no run state of their own at module level.
  const shells = ['src/worker/trainer-worker.ts', 'src/cli/train.ts'];

  it.each(shells)('%s is under 150 lines', (file) => {
    expect(fs.readFileSync(path.join(root, file), 'utf8').split('\n').length).toBeLessThan(150);
  });

  it('the training worker keeps no mutable state at module level', () => {
    const src = fs.readFileSync(path.join(root, 'src/worker/trainer-worker.ts'), 'utf8');
    expect(src.match(/^(?:let|var)\s+\w+/gm) ?? []).toEqual([]);
  });
});
