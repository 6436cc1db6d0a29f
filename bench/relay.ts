/**
 * The relay experiment (`npm run bench -- relay`): process vs outcome reward on the relay team of N
 * agents (src/core/domains/relay/), where credit assignment is the bottleneck, against the theory's
 * prediction (README, "The relay team"), and the final accuracy against the coach's quality.
 *
 * For: two reproducible tables with SVG plots in bench/results/:
 *   gap     for N in --agents (default 2,4,6), 3 seeds x {process, outcome}, the shipped relay model
 *           and rule coach, equal budgets: rollouts until the held-out step accuracy at T = 1 (the share
 *           of steps right in their context, over 200 tasks x N steps) reaches --target (default 0.75);
 *           the outcome / process ratio of those rollouts across seeds with its 95 % log-scale t
 *           interval (stats/intervals.ts); beside it the predicted ratio, P (1 - P) / (p (1 - p) lambda^(2(N-1)))
 *           with the luck floor (docs/credit.md, src/core/domains/relay/luck.ts), for the untrained model's measured p. A run that never reaches the target counts
 *           its whole budget, and the ratio is then a lower bound (marked >=).
 *   coach   (--coach-sweep) N = 4, process reward, the rule coach with Gaussian noise sigma 0, 1, 2, 4
 *           on its 0-10 scores and a coach that adds 3 points to agent 1, beside outcome reward: how
 *           much per-action credit a noisy or partial judge keeps.
 * Runs go to --out (default runs/relay), one folder each, laid out as `mappa train` writes them, so
 * `mappa compare` reads them; a finished run is reused, so an interrupted sweep resumes.
 * Not for: timing (bench/engine.ts, bench/update.ts).
 *
 * Example: npm run -s bench -- relay > bench/results/relay-wasm.md          (the gap table and relay-gap.svg)
 *          npm run -s bench -- relay --coach-sweep > bench/results/relay-coach-wasm.md
 *          npm run bench -- relay --agents 2 --seeds 0 --iterations 2         (a smoke run, ~1 min)
 *          npm run -s bench -- relay --agents 4 --coach model --target 0.65    (process reward from the relay
 *            team's own judge model, models/relay-judge, instead of the rubric; runs named n4-process-judge-seed0)
 *          npm run -s bench -- relay --agents 4 --judge /tmp/relay-judge-ckpt/step-500 --target 0.65
 *            (another judge folder, e.g. a checkpoint: the judge-quality axis; runs named n4-process-judge-step-500-seed0)
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describeBackend, initBackend, type BackendName } from '../src/core/engine/backend.ts';
import { relayConfig } from '../src/core/domains/relay/team.ts';
import { outcomePush, predictedRolloutRatio } from '../src/core/domains/relay/luck.ts';
import { buildCoach } from '../src/core/coach/coaches.ts';
import { type TrainConfig } from '../src/core/loop/config.ts';
import { teamOf, resolveTrainConfig } from '../src/core/domains/index.ts';
import { evaluateTeam } from '../src/core/loop/eval-queue.ts';
import { LocalCompute } from '../src/core/compute/local.ts';
import type { EvalResult, IterationMetrics } from '../src/core/loop/records.ts';
import type { LoadedModel } from '../src/core/engine/model/load.ts';
import { formatRatio, logRatioInterval, tInterval, wilson } from '../src/core/stats/intervals.ts';
import { openModel } from '../src/cli/common.ts';
import { finishedRun, runOne } from './rollouts.ts';
import { svgPanels, type PlotSeries } from './plot.ts';

type Mode = 'process' | 'outcome';

export interface RelayBenchOptions {
  agents: number[];
  seeds: number[];
  iterations?: number;
  /** Held-out step accuracy (T = 1) that counts as learnt. */
  target: number;
  out: string;
  results: string;
  coachSweep: boolean;
  backend?: BackendName;
  /** The relay model (default: the config's, models/relay). */
  model?: string;
  /** Who scores each action for process reward: the rubric ('rule', default) or the team's judge model ('model': models/relay-judge). */
  coach: 'rule' | 'model';
  /** With coach 'model': a judge folder other than the team's (e.g. a checkpoint of its training), for the judge-quality axis. */
  judge?: string;
  /** The coach template that judge was built on ('generic' for the older relay judges; default the team's own). */
  judgeTemplate?: 'team' | 'generic';
}

export function parseRelayArgs(argv: string[]): RelayBenchOptions {
  const o: RelayBenchOptions = { agents: [2, 4, 6], seeds: [0, 1, 2], target: 0.75, out: 'runs/relay', results: 'bench/results', coachSweep: false, coach: 'rule' };
  const ints = (v: string, flag: string, lo: number, hi: number) => v.split(',').map((s) => {
    const n = Number(s.trim());
    if (!Number.isInteger(n) || n < lo || n > hi) throw new Error(`bench relay: ${flag} takes integers in ${lo}..${hi} like 2,4,6, got "${s}"`);
    return n;
  });
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = () => {
      const v = argv[++i];
      if (v === undefined || v.startsWith('--')) throw new Error(`bench relay: ${flag} needs a value`);
      return v;
    };
    if (flag === '--agents') o.agents = ints(value(), flag, 1, 6);
    else if (flag === '--seeds') o.seeds = ints(value(), flag, 0, 1e6);
    else if (flag === '--iterations') o.iterations = ints(value(), flag, 1, 1e4)[0];
    else if (flag === '--target') {
      o.target = Number(value());
      if (!(o.target > 0 && o.target <= 1)) throw new Error(`bench relay: --target is a step accuracy in (0, 1], e.g. 0.9, got "${argv[i]}"`);
    } else if (flag === '--out') o.out = value();
    else if (flag === '--results') o.results = value();
    else if (flag === '--coach-sweep') o.coachSweep = true;
    else if (flag === '--backend') o.backend = value() as BackendName;
    else if (flag === '--model') o.model = value();
    else if (flag === '--judge') {
      o.judge = value();
      o.coach = 'model';
    } else if (flag === '--coach') {
      const c = value();
      if (c !== 'rule' && c !== 'model') throw new Error(`bench relay: --coach is rule or model, got "${c}"`);
      o.coach = c;
    } else throw new Error(`bench relay: unknown option "${flag}". Options: --agents 2,4,6 --seeds 0,1,2 --iterations N --target 0.75 --out DIR --results DIR --coach-sweep --coach rule|model --judge DIR --backend cpu|wasm|webgpu --model DIR`);
  }
  return o;
}

export const log = (msg: string) => process.stderr.write(`[bench relay ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

/** One held-out evaluation of a run: rollouts spent so far, team and step accuracy at T = 1. */
export interface RelayPoint {
  rollouts: number;
  team: number;
  step: number;
  tasks: number;
}

export interface RelayRun {
  label: string;
  n: number;
  mode: Mode;
  seed: number;
  budget: number;
  baseline: RelayPoint;
  evals: RelayPoint[];
}

const point = (e: EvalResult, rollouts: number): RelayPoint => ({ rollouts, team: e.sampled, step: e.sampledMetrics?.stepAccuracy ?? NaN, tasks: e.tasks });

/** Rollouts at the first evaluation whose step accuracy reaches `target`; null: never within the budget. */
export function rolloutsToTarget(run: RelayRun, target: number): number | null {
  if (run.baseline.step >= target) return 0;
  return run.evals.find((e) => e.step >= target - 1e-9)?.rollouts ?? null;
}

/**
 * The predicted outcome / process ratio of rollouts for N agents each right with probability p, the luck floor
 * included (docs/credit.md, prediction 3; luck.ts's predictedRolloutRatio). Before the floor was known this printed
 * (1 + p + ... + p^(N-1)) / p^(N-1); results written then say so.
 */
export function predictedRatio(n: number, p: number): number {
  return predictedRolloutRatio(p, n);
}

async function readRelayRun(dir: string, label: string, n: number, mode: Mode, seed: number): Promise<RelayRun> {
  const lines = (await readFile(path.join(dir, 'metrics.jsonl'), 'utf8')).split('\n').filter(Boolean).map((l) => JSON.parse(l) as IterationMetrics);
  const config = JSON.parse(await readFile(path.join(dir, 'config.json'), 'utf8')) as TrainConfig;
  let rollouts = 0;
  const evals: RelayPoint[] = [];
  let baseline: RelayPoint | null = null;
  for (const m of lines) {
    rollouts += m.trajectories ?? 0;
    if (m.iteration === 0 && m.eval) baseline = point(m.eval, 0);
    else if (m.eval) evals.push(point(m.eval, rollouts));
  }
  if (!baseline) throw new Error(`bench relay: ${dir}/metrics.jsonl has no iteration-0 evaluation`);
  return { label, n, mode, seed, budget: config.iterations * config.promptsPerIteration * config.samplesPerPrompt, baseline, evals };
}

export interface Variant {
  label: string;
  mode: Mode;
  patch: Record<string, unknown>;
}

/** Trains one run into `dir` (or reuses a finished one there) and returns its curve. */
export async function relayRun(n: number, v: Variant, seed: number, o: RelayBenchOptions, model: LoadedModel, baseline: EvalResult): Promise<RelayRun> {
  // The coach is named whatever the team's default: the rubric, or with --coach model a judge for process reward.
  const base = { ...relayConfig(n), coach: { kind: 'rule' } };
  const judged = o.coach === 'model' && v.mode === 'process';
  const config = resolveTrainConfig({
    ...base, ...v.patch, seed, ...(o.model ? { agentModel: o.model } : {}), rewards: { mode: v.mode }, ...(o.iterations ? { iterations: o.iterations } : {}),
    ...(judged ? { coach: { kind: 'model', ...(o.judge ? { model: o.judge } : {}), ...(o.judgeTemplate ? { template: o.judgeTemplate } : {}) } } : {}),
  });
  const judgeName = o.judge ? `-${path.basename(path.resolve(o.judge)).replace(/[^\w.-]/g, '_')}` : '';
  const dir = path.join(o.out, `n${n}-${v.label}${judged ? `-judge${judgeName}` : ''}-seed${seed}`);
  if (!(await finishedRun(config, dir, true))) {
    log(`N=${n} ${v.label} seed ${seed}: ${config.iterations} iterations -> ${dir}`);
    const coach = await buildCoach(config.coach, (spec) => openModel(spec, { tokenizer: 'required' }), teamOf(config.workflow));
    await runOne(config, { team: teamOf(config.workflow), agentModel: model, coach, tools: {} }, baseline, dir,
      (it, e) => log(`  iter ${it}: step ${(100 * (e.sampledMetrics?.stepAccuracy ?? NaN)).toFixed(1)} %, team ${(100 * e.sampled).toFixed(1)} %`));
  } else log(`N=${n} ${v.label} seed ${seed}: finished run found in ${dir}, reused`);
  return readRelayRun(dir, v.label, n, v.mode, seed);
}

const pct = (x: number) => `${(100 * x).toFixed(1)} %`;
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(xs.length, 1);

/** Rollouts to target per run (the budget, flagged, when not reached). */
export function reach(runs: RelayRun[], target: number): { values: number[]; censored: number; text: string } {
  const r = runs.map((run) => ({ v: rolloutsToTarget(run, target), budget: run.budget }));
  return {
    values: r.map((x) => x.v ?? x.budget),
    censored: r.filter((x) => x.v === null).length,
    text: r.map((x) => (x.v === null ? `>${x.budget}` : String(x.v))).join(' / '),
  };
}

/** Final step accuracy minus the untrained one, per seed: mean and 95 % t interval across seeds. */
export function gainOf(runs: RelayRun[]): { mean: number; low: number; high: number } {
  const i = tInterval(runs.map((r) => (r.evals[r.evals.length - 1] ?? r.baseline).step - r.baseline.step));
  return { mean: i.p, low: i.low, high: i.high };
}

const points = (x: number) => `${x >= 0 ? '+' : ''}${(100 * x).toFixed(1)}`;
export const fmtGain = (g: { mean: number; low: number; high: number }) => `${points(g.mean)} points${Number.isFinite(g.low) ? ` [${points(g.low)}, ${points(g.high)}]` : ''}`;

/** Final team accuracy pooled over seeds (each run's last evaluation), with its Wilson interval. */
export function pooledFinal(runs: RelayRun[]): string {
  const finals = runs.map((r) => r.evals[r.evals.length - 1] ?? r.baseline);
  const k = finals.reduce((s, f) => s + Math.round(f.team * f.tasks), 0);
  const n = finals.reduce((s, f) => s + f.tasks, 0);
  const w = wilson(k, n);
  return `${pct(w.p)} [${(100 * w.low).toFixed(1)}, ${(100 * w.high).toFixed(1)}]`;
}

export function header(o: RelayBenchOptions, backend: string, config: TrainConfig): string[] {
  const budget = config.iterations * config.promptsPerIteration * config.samplesPerPrompt;
  return [
    `- backend: ${backend}; machine: ${os.cpus().length} cores, Node ${process.version}; model ${config.agentModel}; ${o.coach === 'model' ? `process reward from the judge model ${o.judge ?? 'models/relay-judge'} (--coach model${o.judge ? ' --judge' : ''})` : 'rule coach (relay rubric)'}`,
    `- budget per run: ${config.iterations} iterations x ${config.promptsPerIteration} prompts x ${config.samplesPerPrompt} samples = ${budget} rollouts at T = ${config.temperature}, lr ${config.lr}; ` +
      `held-out evaluation every ${config.evalEvery} iterations on ${config.evalTasks} tasks at T = ${config.evalTemperature}`,
    `- target: held-out step accuracy (steps right given their input, T = 1) >= ${pct(o.target)}; seeds ${o.seeds.join(', ')}; runs in ${o.out}`,
    '',
  ];
}

async function gapReport(o: RelayBenchOptions, model: LoadedModel, backend: string): Promise<string> {
  const rows: string[] = ['| agents N | untrained p (step, T=1) | untrained team | rollouts to target, process (seeds) | outcome (seeds) | outcome / process, measured [95 %] | predicted, for p | final team accuracy, process [95 %] | outcome [95 %] |', '|---:|---:|---:|---|---|---|---:|---|---|'];
  const gains: string[] = ['| agents N | step accuracy gained by the budget, process [95 %] | outcome [95 %] | outcome gain / process gain | predicted signal ratio (product of the others\' p) |', '|---:|---|---|---:|---:|'];
  const gap: PlotSeries[] = [
    { label: 'measured (triangle: a lower bound, outcome never reached the target)', points: [], dotsOnly: true, color: '#9467bd' },
    { label: 'predicted for the untrained p', points: [], dashed: true, color: '#7f7f7f' },
  ];
  const gainRatio: PlotSeries[] = [
    { label: 'measured (triangle: a lower bound, outcome never reached the target)', points: [], color: '#9467bd' },
    { label: 'predicted for the untrained p', points: [], dashed: true, color: '#7f7f7f' },
  ];
  const curves = [];
  const all: RelayRun[] = [];
  for (const n of o.agents) {
    const config = resolveTrainConfig(relayConfig(n));
    log(`N=${n}: evaluating the untrained team once (the same for every seed and reward)`);
    const baseline = (await evaluateTeam(config, teamOf(config.workflow), LocalCompute.forTeam({ team: teamOf(config.workflow), agentModel: model, tools: {} }))).result;
    const runs: Record<Mode, RelayRun[]> = { process: [], outcome: [] };
    for (const seed of o.seeds) {
      for (const mode of ['process', 'outcome'] as const) runs[mode].push(await relayRun(n, { label: mode, mode, patch: {} }, seed, o, model, baseline));
    }
    all.push(...runs.process, ...runs.outcome);
    const p = runs.process[0].baseline.step;
    const pr = reach(runs.process, o.target);
    const oc = reach(runs.outcome, o.target);
    const ratio = logRatioInterval(pr.values, oc.values);
    const bound = oc.censored > 0 ? '>= ' : '';
    const measured = ratio ? `${bound}${formatRatio(ratio)}` : pr.values.length && oc.values.length ? `${bound}${(mean(oc.values) / mean(pr.values)).toFixed(2)} (one seed: no interval)` : 'n/a';
    const predicted = predictedRatio(n, p);
    rows.push(`| ${n} | ${pct(p)} | ${pct(runs.process[0].baseline.team)} | ${pr.text} | ${oc.text} | ${measured} | ${predicted.toFixed(1)} | ${pooledFinal(runs.process)} | ${pooledFinal(runs.outcome)} |`);
    const gp = gainOf(runs.process);
    const go = gainOf(runs.outcome);
    gains.push(`| ${n} | ${fmtGain(gp)} | ${fmtGain(go)} | ${(go.mean / gp.mean).toFixed(2)} | ${outcomePush(p, n).toFixed(2)} |`);
    gainRatio[0].points.push({ x: n, y: go.mean / gp.mean });
    const geo = ratio?.p ?? mean(oc.values) / mean(pr.values);
    gap[0].points.push({ x: n, y: geo, low: ratio?.low, high: ratio?.high, atLeast: oc.censored > 0 });
    curves.push({ n, runs });
  }
  const ps = all.find((r) => r.mode === 'process')?.baseline.step ?? 0.6;
  for (let n = 1; n <= Math.max(...o.agents); n++) {
    gap[1].points.push({ x: n, y: predictedRatio(n, ps) });
    gainRatio[1].points.push({ x: n, y: outcomePush(ps, n) });
  }
  const meanCurve = (runs: RelayRun[]) => {
    const xs = [0, ...runs[0].evals.map((e) => e.rollouts)];
    return xs.map((x, i) => ({ x, y: mean(runs.map((r) => (i === 0 ? r.baseline.step : r.evals[i - 1]?.step ?? NaN))) }));
  };
  await mkdir(o.results, { recursive: true });
  await writeFile(path.join(o.results, 'relay-gap.svg'), svgPanels([
    { title: 'Rollouts to the target: outcome / process', xLabel: 'agents in the relay (N)', yLabel: 'ratio (log scale)', logY: true, series: gap },
    { title: 'Step accuracy gained: outcome / process', xLabel: 'agents in the relay (N)', yLabel: 'ratio of the gains at equal rollouts', yMin: -0.4, yMax: 1.1, series: gainRatio },
    ...curves.map(({ n, runs }) => ({
      title: `N = ${n}: held-out step accuracy (T = 1)`, xLabel: 'rollouts', yLabel: 'share of steps right', yMin: 0.4, yMax: 1,
      series: [{ label: 'process reward (mean of seeds)', points: meanCurve(runs.process), color: '#1f77b4' }, { label: 'outcome reward (mean of seeds)', points: meanCurve(runs.outcome), dashed: true, color: '#d62728' }],
    })),
  ], 'The relay team: process vs outcome reward'));
  const config = resolveTrainConfig(relayConfig(o.agents[0]));
  return [
    '# Relay team: process vs outcome reward against team size', '', ...header(o, backend, config), ...rows, '', ...gains, '',
    'Gain: each seed\'s final held-out step accuracy minus the untrained one, mean of seeds with its 95 % t interval across seeds. ' +
    'The expected per-step gradient of outcome reward is that of process reward times lambda^(N-1), lambda = (10p - 1) / 9 (docs/credit.md: a wrong chain\'s errors can cancel on the dial), so at equal rollouts the outcome gain should shrink with N roughly like lambda^(N-1) at the start.', '',
    'Measured ratio: outcome rollouts / process rollouts to the target, ratio of geometric means across seeds with its 95 % t interval on the log scale (>= : some outcome run never reached the target and counts its whole budget, so the ratio is a lower bound). ' +
    'Predicted: P (1 - P) / (p (1 - p) lambda^(2(N-1))), P = 1/10 + 9/10 lambda^N, for the untrained model\'s measured step accuracy p (docs/credit.md). Final team accuracy: every seed\'s last evaluation pooled (seeds x 200 tasks), Wilson interval. Plot: relay-gap.svg.', '',
  ].join('\n');
}

async function coachReport(o: RelayBenchOptions, model: LoadedModel, backend: string): Promise<string> {
  const n = 4;
  const config = resolveTrainConfig({ ...relayConfig(n), coach: { kind: 'rule' } });
  const baseline = (await evaluateTeam(config, teamOf(config.workflow), LocalCompute.forTeam({ team: teamOf(config.workflow), agentModel: model, tools: {} }))).result;
  const coach = (m: Record<string, unknown> | null) => ({ coach: { ...config.coach, miscalibration: m } });
  const variants: Variant[] = [
    { label: 'process', mode: 'process', patch: {} },
    ...[1, 2, 4].map((s) => ({ label: `process-noise${s}`, mode: 'process' as const, patch: coach({ noise: s, seed: 0 }) })),
    { label: 'process-favour-agent1', mode: 'process', patch: coach({ favourAgent: { agentId: 'agent1', points: 3 } }) },
    { label: 'outcome', mode: 'outcome', patch: {} },
  ];
  const rows = ['| coach (N = 4) | rollouts to target (seeds) | final step accuracy, mean of seeds | final team accuracy, pooled [95 %] |', '|---|---|---:|---|'];
  const series: PlotSeries[] = [];
  for (const v of variants) {
    const runs: RelayRun[] = [];
    for (const seed of o.seeds) runs.push(await relayRun(n, v, seed, o, model, baseline));
    const r = reach(runs, o.target);
    const finals = runs.map((x) => (x.evals[x.evals.length - 1] ?? x.baseline).step);
    const name = v.label === 'process' ? 'rule coach, process reward (sigma 0)' : v.label === 'outcome' ? 'outcome reward (no coach)' :
      v.label.includes('noise') ? `noise sigma ${v.label.replace('process-noise', '')}` : 'favours agent 1 (+3 points)';
    rows.push(`| ${name} | ${r.text} | ${pct(mean(finals))} | ${pooledFinal(runs)} |`);
    const xs = [0, ...runs[0].evals.map((e) => e.rollouts)];
    series.push({ label: name, dashed: v.mode === 'outcome', points: xs.map((x, i) => ({ x, y: mean(runs.map((q) => (i === 0 ? q.baseline.step : q.evals[i - 1]?.step ?? NaN))) })) });
  }
  await mkdir(o.results, { recursive: true });
  await writeFile(path.join(o.results, 'relay-coach.svg'), svgPanels([
    { title: 'N = 4: held-out step accuracy (T = 1) by coach', xLabel: 'rollouts', yLabel: 'share of steps right', yMin: 0.4, yMax: 1, series },
  ]));
  return ['# Relay team (N = 4): final accuracy against the coach\'s quality', '', ...header(o, backend, config), ...rows, '',
    'Noise: Gaussian, added to each 0-10 score and clamped (MiscalibratedCoach). Plot: relay-coach.svg.', ''].join('\n');
}

export async function main(argv: string[]): Promise<void> {
  const o = parseRelayArgs(argv);
  const info = await initBackend(o.backend ? { force: o.backend } : {});
  const backend = describeBackend(info);
  const spec = o.model ?? resolveTrainConfig(relayConfig(2)).agentModel;
  if (!existsSync(spec)) throw new Error(`bench relay: "${spec}" does not exist; build it with: npx tsx scripts/pretrain-relay.ts --seed 0`);
  const model = await openModel(spec, { tokenizer: 'required' });
  log(`backend ${backend}; runs into ${o.out}`);
  try {
    process.stdout.write(o.coachSweep ? await coachReport(o, model, backend) : await gapReport(o, model, backend));
  } finally {
    model.model.dispose();
  }
}
