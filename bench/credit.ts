/**
 * Credit methods side by side (`npm run bench -- credit`): outcome reward, process reward from the
 * rubric (the coach), counterfactual replays (C3: a tree of replays, leave-one-out) and state groups
 * (GiGPO: same agent, same input), on the relay team of N agents, at one budget of agent generations.
 *
 * For: a table and a plot in bench/results/ (credit-relay.md, credit-relay.svg):
 *   per N and method, 3 seeds: generations until the held-out step accuracy (T = 1, 200 tasks) reaches
 *   --target (default 0.65), each method's ratio to outcome reward's with its 95 % log-scale t interval
 *   (a run that never reaches it counts its whole budget: the ratio is then a bound); the same in wall
 *   seconds; final team accuracy pooled over seeds with its Wilson interval; coach calls; and for state
 *   groups, how the steps grouped. Beside them the theory's prediction for process vs outcome.
 * Budget: every method gets about 640 x N agent generations (the relay bench's 640 rollouts). Outcome,
 * process and groups play 8 prompts x 2 samples an iteration (16 N generations); counterfactual plays
 * --cf-prompts prompts an iteration (default: the number nearest 16 N generations, at least 1) as
 * binary trees (every agent replies twice to each frozen input: 2^(N+1) - 2 generations a prompt), for
 * as many iterations as the budget holds; every method is evaluated about every 80 N generations.
 * Runs go to --out (default runs/credit), one folder each, laid out as `mappa train` writes them; a
 * finished run is reused, so an interrupted sweep resumes.
 *
 * Example: npm run -s bench -- credit > bench/results/credit-relay.md
 *          npm run -s bench -- credit --methods outcome,counterfactual --agents 2 --seeds 0 --iterations 2   (a smoke run)
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describeBackend, initBackend } from '../src/core/engine/backend.ts';
import { relayConfig, relayRuleCoach } from '../src/core/domains/relay/team.ts';
import { cachedCoach } from '../src/core/coach/coach.ts';
import { type TrainConfig } from '../src/core/loop/config.ts';
import { resolveTrainConfig, teamOf } from '../src/core/domains/index.ts';
import type { RewardMode } from '../src/core/loop/rewards.ts';
import { evaluateTeam } from '../src/core/loop/eval-queue.ts';
import { LocalCompute } from '../src/core/compute/local.ts';
import type { EvalResult, IterationMetrics } from '../src/core/loop/records.ts';
import type { LoadedModel } from '../src/core/engine/model/load.ts';
import { treeCost } from '../src/core/rl/counterfactual.ts';
import { formatRatio, logRatioInterval, mean, wilson } from '../src/core/stats/intervals.ts';
import { openModel } from '../src/cli/common.ts';
import { finishedRun, runOne } from './rollouts.ts';
import { predictedRatio } from './relay.ts';
import { svgPanels, type PlotSeries } from './plot.ts';

const METHODS = ['outcome', 'process', 'counterfactual', 'groups'] as const;
type Method = (typeof METHODS)[number];

export interface CreditBenchOptions {
  methods: Method[];
  agents: number[];
  seeds: number[];
  target: number;
  out: string;
  results: string;
  /** Cap on iterations (a smoke run); default: the budget's. */
  iterations?: number;
  /** Counterfactual prompts per iteration (default: nearest the others' generations an iteration). */
  cfPrompts?: number;
  /** State groups' samples per prompt (default 2, as outcome and process); prompts shrink to keep 16 N generations an iteration. */
  groupSamples?: number;
}

export function parseCreditArgs(argv: string[]): CreditBenchOptions {
  const o: CreditBenchOptions = { methods: [...METHODS], agents: [2, 4, 6], seeds: [0, 1, 2], target: 0.65, out: 'runs/credit', results: 'bench/results' };
  const ints = (v: string, flag: string, lo: number, hi: number) => v.split(',').map((s) => {
    const n = Number(s.trim());
    if (!Number.isInteger(n) || n < lo || n > hi) throw new Error(`bench credit: ${flag} takes integers in ${lo}..${hi} like 2,4,6, got "${s}"`);
    return n;
  });
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = () => {
      const v = argv[++i];
      if (v === undefined || v.startsWith('--')) throw new Error(`bench credit: ${flag} needs a value`);
      return v;
    };
    if (flag === '--methods') {
      o.methods = value().split(',').map((m) => m.trim()) as Method[];
      const bad = o.methods.filter((m) => !METHODS.includes(m));
      if (bad.length || !o.methods.length) throw new Error(`bench credit: --methods takes ${METHODS.join(',')}, got "${argv[i]}"`);
    } else if (flag === '--agents') o.agents = ints(value(), flag, 1, 6);
    else if (flag === '--seeds') o.seeds = ints(value(), flag, 0, 1e6);
    else if (flag === '--iterations') o.iterations = ints(value(), flag, 1, 1e4)[0];
    else if (flag === '--cf-prompts') o.cfPrompts = ints(value(), flag, 1, 64)[0];
    else if (flag === '--group-samples') o.groupSamples = ints(value(), flag, 1, 16)[0];
    else if (flag === '--target') {
      o.target = Number(value());
      if (!(o.target > 0 && o.target <= 1)) throw new Error(`bench credit: --target is a step accuracy in (0, 1], e.g. 0.65, got "${argv[i]}"`);
    } else if (flag === '--out') o.out = value();
    else if (flag === '--results') o.results = value();
    else throw new Error(`bench credit: unknown option "${flag}". Options: --methods ${METHODS.join(',')} --agents 2,4,6 --seeds 0,1,2 --target 0.65 --iterations N --cf-prompts N --group-samples N --out DIR --results DIR`);
  }
  return o;
}

const log = (msg: string) => process.stderr.write(`[bench credit ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

/** The config of one method's run on the relay of n: the same budget of generations for every method. */
export function creditConfig(n: number, method: Method, seed: number, o: Pick<CreditBenchOptions, 'iterations' | 'cfPrompts' | 'groupSamples'>): TrainConfig {
  const base = resolveTrainConfig(relayConfig(n));
  const perIteration = base.promptsPerIteration * base.samplesPerPrompt * n; // 16 N
  const budget = base.iterations * perIteration; // 640 N
  const evalGenerations = base.evalEvery * perIteration; // 80 N
  const mode: RewardMode = method;
  // Process reward comes from the rubric here (the rater itself), whatever the team's default coach.
  const coach = { kind: 'rule' };
  if (method !== 'counterfactual') {
    const samples = method === 'groups' && o.groupSamples ? o.groupSamples : base.samplesPerPrompt;
    const shape = samples === base.samplesPerPrompt ? {} : { samplesPerPrompt: samples, promptsPerIteration: Math.max(1, Math.round(perIteration / (n * samples))) };
    return resolveTrainConfig({ ...relayConfig(n), seed, coach, rewards: { mode }, ...shape, ...(o.iterations ? { iterations: o.iterations } : {}) });
  }
  const fanOut = new Array(n).fill(2);
  const perPrompt = treeCost(fanOut).generations;
  const prompts = o.cfPrompts ?? Math.max(1, Math.round(perIteration / perPrompt));
  const iterations = Math.max(1, Math.round(budget / (prompts * perPrompt)));
  return resolveTrainConfig({
    ...relayConfig(n), seed, coach, rewards: { mode, fanOut }, promptsPerIteration: prompts, samplesPerPrompt: 1, rolloutPasses: 1,
    iterations: o.iterations ?? iterations, evalEvery: Math.max(1, Math.round(evalGenerations / (prompts * perPrompt))),
  });
}

/** One evaluation of a run: generations and seconds spent so far, team and step accuracy at T = 1. */
export interface CreditPoint {
  generations: number;
  seconds: number;
  team: number;
  step: number;
  tasks: number;
}

export interface CreditRun {
  n: number;
  method: Method;
  seed: number;
  budget: number;
  budgetSeconds: number;
  baseline: CreditPoint;
  evals: CreditPoint[];
  coachCalls: number;
  /** State groups: the mean size of a step's group and the share of steps in a group of two or more. */
  groups?: { meanGroupSize: number; sharedShare: number };
}

const point = (e: EvalResult, generations: number, seconds: number): CreditPoint =>
  ({ generations, seconds, team: e.sampled, step: e.sampledMetrics?.stepAccuracy ?? NaN, tasks: e.tasks });

/** A finished run's curve from its metrics.jsonl: generations (distinct actions) and training seconds at each evaluation. */
export async function readCreditRun(dir: string, n: number, method: Method, seed: number): Promise<CreditRun> {
  const lines = (await readFile(path.join(dir, 'metrics.jsonl'), 'utf8')).split('\n').filter(Boolean).map((l) => JSON.parse(l) as IterationMetrics);
  let generations = 0;
  let seconds = 0;
  let coachCalls = 0;
  let baseline: CreditPoint | null = null;
  const evals: CreditPoint[] = [];
  const groups: { meanGroupSize: number; sharedShare: number }[] = [];
  for (const m of lines) {
    if (m.iteration === 0 && m.eval && !m.perAgent) {
      baseline = point(m.eval, 0, 0);
      continue;
    }
    generations += m.generations ?? m.trajectories * n;
    seconds += m.seconds ? m.seconds.rollout + m.seconds.coach + m.seconds.update : 0;
    coachCalls += method === 'process' ? (m.coach?.calls ?? 0) + (m.coach?.cached ?? 0) : 0;
    if (m.groups) groups.push(m.groups);
    if (m.eval) evals.push(point(m.eval, generations, seconds));
  }
  if (!baseline) throw new Error(`bench credit: ${dir}/metrics.jsonl has no iteration-0 evaluation`);
  return {
    n, method, seed, budget: generations, budgetSeconds: seconds, baseline, evals, coachCalls,
    ...(groups.length ? { groups: { meanGroupSize: mean(groups.map((g) => g.meanGroupSize)), sharedShare: mean(groups.map((g) => g.sharedShare)) } } : {}),
  };
}

/** Generations (or seconds) at the first evaluation reaching `target`; null: not within the budget. */
export function costToTarget(run: CreditRun, target: number, by: 'generations' | 'seconds'): number | null {
  if (run.baseline.step >= target) return 0;
  return run.evals.find((e) => e.step >= target - 1e-9)?.[by] ?? null;
}

function reach(runs: CreditRun[], target: number, by: 'generations' | 'seconds'): { values: number[]; censored: number; text: string } {
  const r = runs.map((run) => ({ v: costToTarget(run, target, by), budget: by === 'generations' ? run.budget : run.budgetSeconds }));
  const fmt = (x: number) => (by === 'seconds' ? x.toFixed(0) : String(x));
  return { values: r.map((x) => x.v ?? x.budget), censored: r.filter((x) => x.v === null).length, text: r.map((x) => (x.v === null ? `>${fmt(x.budget)}` : fmt(x.v))).join(' / ') };
}

const pct = (x: number) => `${(100 * x).toFixed(1)} %`;

function pooledFinal(runs: CreditRun[]): string {
  const finals = runs.map((r) => r.evals.at(-1) ?? r.baseline);
  const w = wilson(finals.reduce((s, f) => s + Math.round(f.team * f.tasks), 0), finals.reduce((s, f) => s + f.tasks, 0));
  return `${pct(w.p)} [${(100 * w.low).toFixed(1)}, ${(100 * w.high).toFixed(1)}]`;
}

/** The ratio of a method's cost to outcome reward's (outcome / method: above 1 = the method needs less), with its interval and bound mark. */
function ratioText(method: { values: number[]; censored: number }, outcome: { values: number[]; censored: number }): { text: string; p: number; low?: number; high?: number; atLeast: boolean } {
  const r = logRatioInterval(method.values, outcome.values);
  const bound = outcome.censored > 0 && method.censored === 0 ? '>= ' : method.censored > 0 && outcome.censored === 0 ? '<= ' : outcome.censored && method.censored ? '~ ' : '';
  if (r) return { text: `${bound}${formatRatio(r)}`, p: r.p, low: r.low, high: r.high, atLeast: bound === '>= ' };
  const p = mean(outcome.values) / mean(method.values);
  return { text: `${bound}${p.toFixed(2)} (one seed: no interval)`, p, atLeast: bound === '>= ' };
}

async function runMethod(n: number, method: Method, seed: number, o: CreditBenchOptions, model: LoadedModel, baseline: EvalResult): Promise<CreditRun> {
  const config = creditConfig(n, method, seed, o);
  const dir = path.join(o.out, `n${n}-${method}-seed${seed}`);
  if (!(await finishedRun(config, dir, true))) {
    log(`N=${n} ${method} seed ${seed}: ${config.iterations} iterations x ${config.promptsPerIteration} prompts -> ${dir}`);
    await runOne(config, { team: teamOf(config.workflow), agentModel: model, coach: cachedCoach(relayRuleCoach()), tools: {} }, baseline, dir,
      (it, e) => log(`  iter ${it}: step ${(100 * (e.sampledMetrics?.stepAccuracy ?? NaN)).toFixed(1)} %, team ${(100 * e.sampled).toFixed(1)} %`));
  } else log(`N=${n} ${method} seed ${seed}: finished run found in ${dir}, reused`);
  return readCreditRun(dir, n, method, seed);
}

const COLORS: Record<Method, string> = { process: '#1f77b4', outcome: '#d62728', counterfactual: '#2ca02c', groups: '#9467bd' };

export async function main(argv: string[]): Promise<void> {
  const o = parseCreditArgs(argv);
  const info = await initBackend({ force: 'wasm' });
  const backend = describeBackend(info);
  const spec = resolveTrainConfig(relayConfig(2)).agentModel;
  if (!existsSync(spec)) throw new Error(`bench credit: "${spec}" does not exist; build it with: npx tsx scripts/pretrain-relay.ts --seed 0`);
  const model = await openModel(spec, { tokenizer: 'required' });
  const started = performance.now();
  const rows = ['| agents N | method | generations to target (seeds) | outcome / method, generations [95 %] | seconds to target (seeds) | outcome / method, seconds [95 %] | coach calls a run | final team accuracy, pooled [95 %] |',
    '|---:|---|---|---|---|---|---:|---|'];
  const notes: string[] = [];
  const ratioSeries: PlotSeries[] = o.methods.filter((m) => m !== 'outcome').map((m) => ({ label: `${m} (measured; triangle: a bound)`, points: [], color: COLORS[m] }));
  const predicted: PlotSeries = { label: 'process, the theory\'s prediction for the untrained p', points: [], dashed: true, color: '#7f7f7f' };
  const panels = [];
  try {
    for (const n of o.agents) {
      const config = resolveTrainConfig(relayConfig(n));
      log(`N=${n}: the untrained team, once for every method and seed`);
      const baseline = (await evaluateTeam(config, teamOf(config.workflow), LocalCompute.forTeam({ team: teamOf(config.workflow), agentModel: model, tools: {} }))).result;
      const runs = new Map<Method, CreditRun[]>();
      for (const seed of o.seeds) for (const m of o.methods) runs.set(m, [...(runs.get(m) ?? []), await runMethod(n, m, seed, o, model, baseline)]);
      const out = runs.get('outcome');
      const outG = out && reach(out, o.target, 'generations');
      const outS = out && reach(out, o.target, 'seconds');
      for (const m of o.methods) {
        const rs = runs.get(m)!;
        const g = reach(rs, o.target, 'generations');
        const s = reach(rs, o.target, 'seconds');
        const rg = outG && m !== 'outcome' ? ratioText(g, outG) : null;
        const rsec = outS && m !== 'outcome' ? ratioText(s, outS) : null;
        const calls = Math.round(rs.reduce((a, r) => a + r.coachCalls, 0) / rs.length);
        rows.push(`| ${n} | ${m} | ${g.text} | ${rg ? rg.text : '1'} | ${s.text} | ${rsec ? rsec.text : '1'} | ${calls} | ${pooledFinal(rs)} |`);
        if (rg) ratioSeries.find((x) => x.label.startsWith(m))!.points.push({ x: n, y: rg.p, low: rg.low, high: rg.high, atLeast: rg.atLeast });
        const gs = rs.filter((r) => r.groups);
        if (gs.length) notes.push(`- N = ${n}, state groups: a step's group holds ${(gs.reduce((a, r) => a + r.groups!.meanGroupSize, 0) / gs.length).toFixed(2)} steps on average; ${pct(gs.reduce((a, r) => a + r.groups!.sharedShare, 0) / gs.length)} of steps are in a group of two or more.`);
      }
      const p = baseline.sampledMetrics?.stepAccuracy ?? NaN;
      predicted.points.push({ x: n, y: predictedRatio(n, p) });
      notes.push(`- N = ${n}: untrained step accuracy p = ${pct(p)}, team ${pct(baseline.sampled)}; predicted outcome / process ratio P (1 - P) / (p (1 - p) lambda^(2(N-1))) (docs/credit.md) = ${predictedRatio(n, p).toFixed(1)}.`);
      const meanCurve = (rs: CreditRun[]) => {
        const xs = [0, ...rs[0].evals.map((e) => e.generations)];
        return xs.map((x, i) => ({ x, y: rs.reduce((a, r) => a + (i === 0 ? r.baseline.step : r.evals[i - 1]?.step ?? NaN), 0) / rs.length }));
      };
      panels.push({
        title: `N = ${n}: held-out step accuracy (T = 1)`, xLabel: 'agent generations', yLabel: 'share of steps right', yMin: 0.4, yMax: 1,
        series: o.methods.map((m) => ({ label: `${m} (mean of seeds)`, points: meanCurve(runs.get(m)!), color: COLORS[m], dashed: m === 'outcome' })),
      });
    }
  } finally {
    model.model.dispose();
  }
  await mkdir(o.results, { recursive: true });
  await writeFile(path.join(o.results, 'credit-relay.svg'), svgPanels([
    { title: 'Generations to the target: outcome / method', xLabel: 'agents in the relay (N)', yLabel: 'ratio (log scale)', logY: true, series: [...ratioSeries, predicted] },
    ...panels,
  ], 'Credit methods on the relay: outcome, process (rubric), counterfactual replays, state groups'));
  const cfg = creditConfig(o.agents[0], 'counterfactual', 0, o);
  process.stdout.write([
    '# Credit methods on the relay team, at one budget of agent generations', '',
    `- backend: ${backend}; machine: ${os.cpus()[0]?.model ?? 'unknown CPU'}, ${os.cpus().length} cores, Node ${process.version}, 1 thread; model ${resolveTrainConfig(relayConfig(2)).agentModel}; ${((performance.now() - started) / 60000).toFixed(1)} min`,
    `- methods: ${o.methods.join(', ')}; process reward from the relay rubric (the rule coach); counterfactual and groups read outcomes only`,
    `- budget per run: about 640 x N agent generations; outcome, process and groups: 8 prompts x 2 samples an iteration; counterfactual: binary trees, e.g. N = ${o.agents[0]}: ${cfg.promptsPerIteration} prompt(s) x ${treeCost(cfg.rewards.fanOut).generations} generations an iteration for ${cfg.iterations} iterations`,
    `- target: held-out step accuracy (T = 1, 200 tasks) >= ${pct(o.target)}; seeds ${o.seeds.join(', ')}; runs in ${o.out}`, '',
    ...rows, '', ...notes, '',
    'Ratios: outcome reward\'s generations (or training seconds: rollouts, coaching and updates, evaluations left out) to the target over the method\'s, ' +
      'ratio of geometric means across seeds with its 95 % t interval on the log scale; above 1, the method needs fewer. >= (<=): outcome (the method) never reached the target in some run and counts its whole budget, so the ratio is a lower (upper) bound; ~: both did. ' +
      'A ratio whose interval holds 1 is no difference. Final team accuracy: every seed\'s last evaluation pooled (seeds x 200 tasks), Wilson interval. Plot: credit-relay.svg.', '',
  ].join('\n'));
}
