/**
 * The pure half of `npm run -s bench -- scale` (bench/scale.ts runs the relay; this reads its runs and
 * writes the report): the options, a run's record as the report needs it, rollouts to the step target
 * from the training rollouts' own step accuracy, and the per-N rows with their intervals.
 *
 * Rollouts to the target are read from the training rollouts (T = 1, every step checked by the rubric in
 * its context whatever the coach, `quality.stepAccuracy` of each iteration): the first iteration whose
 * trailing mean over `window` iterations reaches the target. They cost nothing extra, where a held-out
 * evaluation of the relay of 128 costs 128 generations a task; the held-out set (T = 1, min(200, ceil(
 * evalSteps / N)) tasks, about evalSteps steps a run) gives the untrained and the final accuracies.
 * With --recipe every N runs the shipped relay recipe (relayScaleRecipe: 64 rollouts an iteration, the
 * per-agent update, greedy evaluations) on every core, and the held-out set is evaluated greedily every
 * --eval-every iterations: rollouts to the team-accuracy target are read from those evaluations.
 * Example: rolloutsToTarget([0.55, 0.6, 0.7, 0.72], 0.65, 2, 16) -> 48 (iterations 2-3 average 0.65)
 */
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { IterationMetrics } from '../src/core/loop/records.ts';
import { RELAY_MAX_AGENTS } from '../src/core/domains/relay/tasks.ts';

export const ARMS = ['judge', 'rule', 'outcome', 'groups'] as const;
export type Arm = (typeof ARMS)[number];
export const ARM_WORDS: Record<Arm, string> = { judge: 'process, AI judge', rule: 'process, rubric', outcome: 'outcome', groups: 'state groups (no coach)' };
/** Rollouts (trajectories) an iteration: the relay config's 8 prompts x 2 samples; with --recipe, the scale recipe's 32 x 2. */
export const PER_ITERATION = 16;
export const RECIPE_PER_ITERATION = 64;
export const perIteration = (o: Pick<ScaleOptions, 'recipe'>) => (o.recipe ? RECIPE_PER_ITERATION : PER_ITERATION);

export interface ScaleOptions {
  agents: number[];
  arms: Arm[];
  seeds: number[];
  /** From a team size on, only these seeds (e.g. {64: [0]}: N >= 64 runs seed 0 alone). */
  seedsFrom: { n: number; seeds: number[] } | null;
  rollouts: number;
  /** Held-out steps a run's evaluation aims at: min(200, ceil(evalSteps / N)) tasks. */
  evalSteps: number;
  target: number;
  /** Greedy team accuracy a run must reach on the held-out set (the mean of two evaluations in a row, or its only one). */
  teamTarget: number;
  /** Iterations in the trailing mean of the training step accuracy that must reach the target. */
  window: number;
  /** Rows a micro-batch of the batched update (the relay's config: 16). */
  microBatch: number;
  /** No run starts that would end after this many minutes (the report says which were left out); 0: no limit. */
  maxMinutes: number;
  /** Every N on the shipped scale recipe (relayScaleRecipe), on `threads` cores, evaluated every `evalEvery` iterations. */
  recipe: boolean;
  threads: number;
  evalEvery: number;
  /** Run nothing: the report from the finished runs in --out (the others listed as not run). */
  reportOnly: boolean;
  out: string;
  results: string;
}

export const SCALE_DEFAULTS: ScaleOptions = {
  agents: [2, 4, 8, 16, 32, 64, 128], arms: [...ARMS], seeds: [0, 1, 2], seedsFrom: { n: 64, seeds: [0] }, rollouts: 160, evalSteps: 800,
  target: 0.65, teamTarget: 0.5, window: 3, microBatch: 16, maxMinutes: 48, recipe: false, threads: 1, evalEvery: 0, reportOnly: false,
  out: 'runs/scale', results: 'bench/results',
};

/**
 * --recipe's defaults: the process and outcome arms at 3 seeds at every N, 30 iterations of 64 rollouts (relay-32's and
 * relay-64's shipped budget), 100-200 held-out tasks every 5 iterations, a step target of 80 % at T = 1 (the recipe's
 * runs end near 85 % at T = 1, 99.5 % greedy) and a greedy team target of 50 %.
 */
export const RECIPE_DEFAULTS: Partial<ScaleOptions> = {
  arms: ['judge', 'outcome'], seedsFrom: null, rollouts: 30 * RECIPE_PER_ITERATION, evalSteps: 12800, evalEvery: 5, target: 0.8,
  microBatch: 64, maxMinutes: 90, threads: os.availableParallelism(), out: 'runs/scale-recipe',
};

export function parseScaleArgs(argv: string[]): ScaleOptions {
  const recipe = argv.includes('--recipe');
  const d = { ...SCALE_DEFAULTS, ...(recipe ? RECIPE_DEFAULTS : {}), recipe };
  const o: ScaleOptions = { ...d, agents: [...d.agents], arms: [...d.arms], seeds: [...d.seeds] };
  const ints = (v: string, flag: string, lo: number, hi: number) => v.split(',').map((s) => {
    const n = Number(s.trim());
    if (!Number.isInteger(n) || n < lo || n > hi) throw new Error(`bench scale: ${flag} takes whole numbers in ${lo}..${hi}, got "${s}"`);
    return n;
  });
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    if (flag === '--recipe') continue; // read above: it sets the defaults
    if (flag === '--report-only') {
      o.reportOnly = true;
      continue;
    }
    const v = argv[++i];
    if (v === undefined || v.startsWith('--')) throw new Error(`bench scale: ${flag} needs a value`);
    if (flag === '--agents') o.agents = ints(v, flag, 1, RELAY_MAX_AGENTS);
    else if (flag === '--arms') {
      o.arms = v.split(',').map((s) => s.trim()) as Arm[];
      if (!o.arms.length || o.arms.some((a) => !ARMS.includes(a))) throw new Error(`bench scale: --arms takes ${ARMS.join(',')}, got "${v}"`);
    } else if (flag === '--seeds') o.seeds = ints(v, flag, 0, 1e6);
    else if (flag === '--seeds-from') {
      const m = /^(\d+)=([\d,]+)$/.exec(v.trim());
      if (!m && v !== 'none') throw new Error(`bench scale: --seeds-from takes N=SEEDS (e.g. 64=0: from 64 agents on, seed 0 alone) or none, got "${v}"`);
      o.seedsFrom = m ? { n: ints(m[1], flag, 1, RELAY_MAX_AGENTS)[0], seeds: ints(m[2], flag, 0, 1e6) } : null;
    } else if (flag === '--rollouts') {
      o.rollouts = ints(v, flag, perIteration(o), 1e6)[0];
      if (o.rollouts % perIteration(o)) throw new Error(`bench scale: --rollouts must be a multiple of ${perIteration(o)} (rollouts an iteration), got ${v}`);
    } else if (flag === '--eval-every') o.evalEvery = ints(v, flag, 1, 1e6)[0];
    else if (flag === '--threads') o.threads = ints(v, flag, 1, 64)[0];
    else if (flag === '--team-target') {
      o.teamTarget = Number(v);
      if (!(o.teamTarget > 0 && o.teamTarget <= 1)) throw new Error(`bench scale: --team-target is a team accuracy in (0, 1], e.g. 0.5, got "${v}"`);
    } else if (flag === '--eval-steps') o.evalSteps = ints(v, flag, 1, 1e6)[0];
    else if (flag === '--window') o.window = ints(v, flag, 1, 1000)[0];
    else if (flag === '--micro-batch') o.microBatch = ints(v, flag, 1, 4096)[0];
    else if (flag === '--max-minutes') o.maxMinutes = ints(v, flag, 0, 1e5)[0];
    else if (flag === '--target') {
      o.target = Number(v);
      if (!(o.target > 0 && o.target <= 1)) throw new Error(`bench scale: --target is a step accuracy in (0, 1], e.g. 0.65, got "${v}"`);
    } else if (flag === '--out') o.out = v;
    else if (flag === '--results') o.results = v;
    else throw new Error(`bench scale: unknown option "${flag}". Options: --agents 2,8,32 --arms ${ARMS.join(',')} --seeds 0,1,2 --seeds-from 64=0 `
      + '--rollouts N --eval-steps N --target 0.65 --team-target 0.5 --window N --micro-batch N --max-minutes M --recipe --eval-every N --threads N '
      + '--report-only --out DIR --results DIR');
  }
  return o;
}

/** The seeds a team of n runs. */
export function seedsFor(n: number, o: Pick<ScaleOptions, 'seeds' | 'seedsFrom'>): number[] {
  return o.seedsFrom && n >= o.seedsFrom.n ? o.seeds.filter((s) => o.seedsFrom!.seeds.includes(s)) : o.seeds;
}

/** Held-out tasks for a team of n: about evalSteps steps, at most the 200 held-out tasks. Example: evalTasksFor(128, 1600) -> 13 */
export function evalTasksFor(n: number, evalSteps: number): number {
  return Math.max(1, Math.min(200, Math.ceil(evalSteps / n)));
}

/**
 * Rollouts at the first held-out evaluation where the mean greedy team accuracy of it and the one before reaches the
 * target (a run's only evaluation alone); null: never. Example: evaluations at iterations 3, 6, 9 with 0.3, 0.55, 0.6
 * and target 0.5, 64 rollouts an iteration -> 576 (iterations 6 and 9 average 0.575; 3 and 6 only 0.425).
 */
export function rolloutsToTeamTarget(evals: { iteration: number; team: number }[], target: number, perIt: number): number | null {
  for (let i = 0; i < evals.length; i++) {
    const w = evals.slice(Math.max(0, i - 1), i + 1);
    if (w.length === Math.min(2, evals.length) && w.reduce((a, e) => a + e.team, 0) / w.length >= target - 1e-9) return evals[i].iteration * perIt;
  }
  return null;
}

/** Rollouts at the first iteration whose trailing mean over `window` iterations (fewer at the start) reaches the target; null: never. */
export function rolloutsToTarget(steps: number[], target: number, window: number, perIteration = PER_ITERATION): number | null {
  for (let i = 0; i < steps.length; i++) {
    const w = steps.slice(Math.max(0, i + 1 - window), i + 1);
    if (w.length === Math.min(window, steps.length) && w.reduce((a, b) => a + b, 0) / w.length >= target - 1e-9) return (i + 1) * perIteration;
  }
  return null;
}

/** One finished run, as the report reads it. */
export interface ScaleRun {
  n: number;
  arm: Arm;
  seed: number;
  /** Training step accuracy of each iteration (T = 1, rubric-checked). */
  steps: number[];
  /** Team accuracy at each held-out evaluation after the untrained one (greedy under --recipe). */
  evals: { iteration: number; team: number }[];
  /** Rollouts an iteration. */
  perIteration: number;
  baseline: { step: number; greedyStep: number; team: number; tasks: number };
  final: { step: number; greedyStep: number; team: number; tasks: number };
  /** Mean seconds an iteration: rollouts, coach, update. */
  seconds: { rollout: number; coach: number; update: number };
  /** Seconds of the final held-out evaluation. */
  evalSeconds: number;
  coachCalls: number;
  wallSeconds: number;
}

export async function readScaleRun(dir: string, n: number, arm: Arm, seed: number): Promise<ScaleRun> {
  const lines = (await readFile(path.join(dir, 'metrics.jsonl'), 'utf8')).split('\n').filter(Boolean).map((l) => JSON.parse(l) as IterationMetrics);
  const summary = JSON.parse(await readFile(path.join(dir, 'summary.json'), 'utf8')) as { seconds: number };
  const its = lines.filter((m) => m.iteration > 0);
  const base = lines.find((m) => m.iteration === 0 && m.eval)?.eval;
  const last = its.filter((m) => m.eval).at(-1)?.eval;
  if (!base || !last) throw new Error(`bench scale: ${dir}/metrics.jsonl lacks the untrained or the final evaluation; remove the folder and run again`);
  const ev = (e: NonNullable<typeof base>) => ({ step: e.sampledMetrics?.stepAccuracy ?? NaN, greedyStep: e.metrics?.stepAccuracy ?? NaN, team: e.sampled, tasks: e.tasks });
  const mean = (f: (m: IterationMetrics) => number) => its.reduce((a, m) => a + f(m), 0) / Math.max(1, its.length);
  return {
    n, arm, seed, steps: its.map((m) => m.quality?.stepAccuracy ?? NaN), baseline: ev(base), final: ev(last),
    evals: its.filter((m) => m.eval).map((m) => ({ iteration: m.iteration, team: m.eval!.sampled })), perIteration: its[0]?.trajectories ?? PER_ITERATION,
    seconds: { rollout: mean((m) => m.seconds?.rollout ?? 0), coach: mean((m) => m.seconds?.coach ?? 0), update: mean((m) => m.seconds?.update ?? 0) },
    evalSeconds: its.at(-1)?.seconds?.eval ?? 0, coachCalls: its.reduce((a, m) => a + (m.coach?.calls ?? 0) + (m.coach?.cached ?? 0), 0),
    wallSeconds: summary.seconds,
  };
}

/** Least-squares slope and intercept of y on x. Example: fitLine([1, 2, 3], [2, 4, 6]) -> {slope: 2, intercept: 0} */
export function fitLine(xs: number[], ys: number[]): { slope: number; intercept: number } {
  const mx = xs.reduce((a, b) => a + b, 0) / xs.length;
  const my = ys.reduce((a, b) => a + b, 0) / ys.length;
  const sxx = xs.reduce((a, x) => a + (x - mx) ** 2, 0);
  const slope = sxx > 0 ? xs.reduce((a, x, i) => a + (x - mx) * (ys[i] - my), 0) / sxx : NaN;
  return { slope, intercept: my - slope * mx };
}
