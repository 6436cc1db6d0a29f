/**
 * "Scale the team", the maths (pure, tested on hand-made results): the relay team of 8, 16 and 32
 * agents trained under process reward (the AI judge, relayConfig's coach) and outcome reward, each
 * measured untrained and after its run on the same held-out problems. `scaleView` turns the runs'
 * evaluations into what the page draws: per size, the team accuracy (Wilson) and the mean step accuracy
 * (Wilson over the pooled steps) of the untrained team and of each mode, each mode's team accuracy against
 * the untrained team and the process - outcome team gap (both paired over the problems), the unpaired step
 * gap, the theory's lines, each agent's step accuracy, and the words the run ends in. The runner that
 * trains the runs is scale-run.ts; the page only draws (Scale.svelte).
 *
 * The theory (docs/credit.md, domains/relay/luck.ts), with p the untrained team's mean step accuracy at
 * that size and lambda = (10 p - 1) / 9:
 *   - a chain has every step right p^N of the time (`chance`), but the team's answer is a digit, so a chain
 *     whose errors cancel on the dial ends right too: outcome reward rewards 1/10 + 9/10 lambda^N of the
 *     rollouts (`rewarded`, the luck floor: never below 10 %), and that is the team accuracy the untrained
 *     team's steps predict;
 *   - its expected push on a step is lambda^(N-1) of process reward's, so its predicted step accuracy is
 *     untrained + lambda^(N-1) x (process's step accuracy - untrained) (`predictedOutcomeStep`);
 *   - the same formula with a mode's trained mean step accuracy is the team accuracy its steps predict
 *     (`predictedTeam`): the words say whether the measured interval holds it (if not, its steps do not
 *     err independently, and the model does not hold).
 *
 * Example (hand-worked, test/unit/lab/scale.test.ts): at 8 agents, untrained 160 of 200 steps right
 *   (p = 0.8, lambda = 7/9), process 180 of 200, outcome 162 of 200: chance = 0.8^8 = 16.8 %, rewarded =
 *   0.1 + 0.9 x (7/9)^8 = 22.1 %, predicted outcome step = 0.8 + (7/9)^7 x 0.1 = 81.7 %; step gap +9.0 pts
 *   [+2.1, +15.9] (Newcombe), beyond the noise, so the words say "process reward's mean step accuracy ended
 *   above outcome reward's beyond the noise at 8 agents"; process's steps (p = 0.9, lambda = 8/9) predict team
 *   accuracy 0.1 + 0.9 x (8/9)^8 = 45.1 %.
 */
import { relayConfig } from '../../../domains/relay/team.ts';
import { outcomePush, rewardedShare } from '../../../domains/relay/luck.ts';
import type { EvalResult } from '../../../loop/records.ts';
import { stepTotals } from '../../../measure/held-out-change.ts';
import { usesCoach } from '../../../loop/rewards.ts';
import { accuracyInterval, unpairedDifference, wilson, type Interval } from '../../../stats/intervals.ts';
import { PAIR_MODES, pairedGap, type StoredRunData } from '../run-maths.ts';

export type ScaleMode = StoredRunData['mode'];
/** Process vs outcome, as the lesson trains them (the one pair: run-maths.ts PAIR_MODES). */
export const SCALE_MODES: readonly ScaleMode[] = PAIR_MODES;

/**
 * The experiment's budget, sized to take about 5 minutes on 2 cores (wasm; 300 s measured in the page): each run trains
 * `iterations` iterations of `promptsPerIteration` prompts x 2 samples through the fast path measured in
 * docs/performance.md ("Speed at scale": each chain step one batch of 64 rows, the judge scoring 64 actions at
 * once, the update sharing each agent's prompt prefix), and is measured on `evalTasks` held-out problems
 * untrained (the process run; the outcome run reads it) and at its end. Long enough that team accuracy at
 * 8-32 agents moves beyond the noise under process reward: docs/results.md, "Scale the team", has the
 * measured run (`npm run -s bench -- scale-page`).
 */
export const SCALE_PLAN = {
  sizes: [8, 16, 32],
  iterations: 6,
  promptsPerIteration: 32,
  evalTasks: 50,
  seed: 0,
  /** relayConfig's learning rate raised so that a few iterations move the agents. */
  lr: 0.006,
} as const;
export type ScalePlan = { sizes: readonly number[]; iterations: number; promptsPerIteration: number; evalTasks: number; seed: number; lr: number };

/** The fast path (docs/performance.md, "Speed at scale"): the same training, fewer and wider calls. */
const FAST = { rolloutPasses: 1, rolloutBatch: 64, update: { microBatchSize: 64, sharedPrefix: true } } as const;

/** The config patch of one run: the relay of `n` with the plan's budget; outcome reward loads no judge (it reads no coach). */
export function scalePatch(n: number, mode: ScaleMode, plan: ScalePlan = SCALE_PLAN): Record<string, unknown> {
  const relay = relayConfig(n);
  return {
    ...relay, ...FAST, update: { ...(relay.update as object | undefined), ...FAST.update },
    iterations: plan.iterations, promptsPerIteration: plan.promptsPerIteration, evalEvery: plan.iterations, evalTasks: plan.evalTasks,
    checkpointEvery: plan.iterations, seed: plan.seed, lr: plan.lr, rewards: { mode },
    coach: usesCoach(mode) ? { ...(relay.coach as object | undefined), batch: 64 } : { kind: 'rule' },
  };
}

/** What one run holds so far (its finished evaluations), as the runner and the read-back keep it: the lab's stored run. */
export type ScaleRunData = StoredRunData;

/** One measurement of a team: its team accuracy and mean step accuracy with their 95 % intervals, and the step counts. */
export interface ScalePoint {
  team: Interval;
  step: Interval;
  right: number;
  judged: number;
  /** Per agent (index 0 = agent 1): its greedy step accuracy, or null when it was never judged. */
  agents: (number | null)[];
}

export interface ScaleRow {
  n: number;
  untrained: ScalePoint | null;
  final: Record<ScaleMode, ScalePoint | null>;
  /** Process - outcome team accuracy, paired over the same held-out problems. */
  teamGap: (Interval & { n: number }) | null;
  /** Process - outcome mean step accuracy (Newcombe, unpaired over the pooled steps). */
  stepGap: Interval | null;
  /** The chance of a right chain (every step right): p^N, p the untrained mean step accuracy. */
  chance: number | null;
  /** Outcome reward's chance of a rewarded rollout, with the luck floor: 1/10 + 9/10 lambda^N (luck.ts); the untrained team's predicted team accuracy. */
  rewarded: number | null;
  /** Each mode's mean step accuracy less the untrained team's (Newcombe, unpaired over the pooled steps). */
  stepGain: Record<ScaleMode, Interval | null>;
  /** Each mode's team accuracy less the untrained team's, paired over the same held-out problems. */
  teamGain: Record<ScaleMode, (Interval & { n: number }) | null>;
  /** The team accuracy each mode's trained steps predict, 1/10 + 9/10 lambda^N with its final mean step accuracy (luck.ts). */
  predictedTeam: Record<ScaleMode, number | null>;
  /** docs/credit.md: untrained + lambda^(N-1) x process's step gain. */
  predictedOutcomeStep: number | null;
  /** Seconds each run took here (stored with it). */
  seconds: Record<ScaleMode, number | null>;
  words: string;
}

export interface ScaleView {
  /** 'idle': nothing stored; 'done' / 'paused' may be read back from storage (`readBack`). */
  status: 'idle' | 'running' | 'paused' | 'done' | 'failed';
  readBack?: boolean;
  plan: ScalePlan;
  rolloutsPerIteration: number;
  rows: ScaleRow[];
  /** The sentence the experiment ends in (scaleWords). */
  words: string;
  /** The run training now ("32 agents, outcome reward, iteration 2 of 3"), null when none. */
  current: { n: number; mode: ScaleMode; iteration: number; iterations: number } | null;
  /** Work done and in all, in agent generations (training rollouts and evaluations): the progress bar. */
  progress: { done: number; total: number };
  elapsed: number;
  /** Seconds left at the pace measured so far (null until known). */
  remaining: number | null;
  /** A finished experiment: its runs' stored seconds, summed, and when the last finished. */
  trained: { seconds: number; finishedAt: number } | null;
  message?: string;
}

// ---- the maths ---------------------------------------------------------------------------------

/** A finished evaluation as a point: team accuracy (Wilson, from its per-problem results) and pooled step accuracy (Wilson). */
export function pointOf(r: EvalResult | null | undefined): ScalePoint | null {
  if (!r || r.of !== undefined || !(r.tasks > 0) || !r.agentSteps) return null;
  const { right, judged } = stepTotals(r)!;
  return {
    team: accuracyInterval(r.greedy, r.tasks, r.perTask?.greedy), step: wilson(right, judged), right, judged,
    agents: r.agentSteps.right.map((k, i) => (r.agentSteps!.judged[i] > 0 ? k / r.agentSteps!.judged[i] : null)),
  };
}

const evalAt = (run: ScaleRunData | undefined, iteration: number) =>
  run?.evals.find((e) => e.iteration === iteration && e.result.of === undefined)?.result ?? null;

/** One size's row from its two runs (the untrained team is the process run's iteration 0, else the outcome run's). */
export function scaleRow(n: number, process: ScaleRunData | undefined, outcome: ScaleRunData | undefined, plan: ScalePlan): ScaleRow {
  const base = evalAt(process, 0) ?? evalAt(outcome, 0);
  const lastP = process?.done ? evalAt(process, plan.iterations) : null;
  const lastO = outcome?.done ? evalAt(outcome, plan.iterations) : null;
  const untrained = pointOf(base);
  const final = { process: pointOf(lastP), outcome: pointOf(lastO) };
  const p = untrained ? untrained.step.p : null;
  const stepGap = final.process && final.outcome
    ? unpairedDifference(final.process.right, final.process.judged, final.outcome.right, final.outcome.judged) : null;
  const gain = (f: ScalePoint | null) => (f && untrained ? unpairedDifference(f.right, f.judged, untrained.right, untrained.judged) : null);
  const row: Omit<ScaleRow, 'words'> = {
    n, untrained, final, teamGap: pairedGap(lastP, lastO), stepGap, stepGain: { process: gain(final.process), outcome: gain(final.outcome) },
    teamGain: { process: pairedGap(lastP, base), outcome: pairedGap(lastO, base) },
    predictedTeam: {
      process: final.process ? rewardedShare(final.process.step.p, n) : null, outcome: final.outcome ? rewardedShare(final.outcome.step.p, n) : null,
    },
    chance: p === null ? null : p ** n,
    rewarded: p === null ? null : rewardedShare(p, n),
    predictedOutcomeStep: p === null || !final.process ? null : p + outcomePush(p, n) * (final.process.step.p - p),
    seconds: { process: process?.done ? process.seconds ?? null : null, outcome: outcome?.done ? outcome.seconds ?? null : null },
  };
  return { ...row, words: rowWords(row) };
}

const pct1 = (x: number) => `${(x * 100).toFixed(1)} %`;
const pts = (x: number) => `${x > 0.0005 ? '+' : ''}${(Math.abs(x) < 0.0005 ? 0 : x * 100).toFixed(1)}`;
const gapText = (i: Interval) => `${pts(i.p)} pts [${pts(i.low)}, ${pts(i.high)}]`;

/**
 * A chance in words a class reads aloud: "16.8 %", "0.025 %" (two figures below 0.1 %), then odds: "1 in 1.6
 * million", "1 in 71 billion", "1 in 10^17" (no "1.7e-7 %").
 */
export function chanceText(x: number): string {
  if (x >= 0.001) return pct1(x);
  if (x >= 1e-5) return `${Number((x * 100).toPrecision(2))} %`;
  if (!(x > 0)) return '0 %';
  const odds = 1 / x;
  const figures = (v: number) => (v >= 10 ? String(Math.round(v)) : v.toPrecision(2));
  for (const [v, word] of [[1e12, 'trillion'], [1e9, 'billion'], [1e6, 'million']] as const) {
    if (odds >= v && odds < v * 1000) return `1 in ${figures(odds / v)} ${word}`;
  }
  return odds < 1e6 ? `1 in ${Math.round(odds).toLocaleString('en-US')}` : `1 in 10^${Math.round(Math.log10(odds))}`;
}

/** Whether an interval of a difference lies above 0, below it, or holds it (no difference shown). */
export function side(i: Interval | null): 'above' | 'below' | 'level' | null {
  return i === null ? null : i.low > 0 ? 'above' : i.high < 0 ? 'below' : 'level';
}

/**
 * One size in words: both modes' team and mean step accuracy, the gaps with their intervals, and the theory.
 * Example: "8 agents: team accuracy process 20.0 % vs outcome 10.0 %, +10.0 pts [-3.1, +22.6] (paired, within the noise); mean step
 *   accuracy 90.0 % vs 81.0 %, +9.0 pts [+2.1, +15.9] (beyond the noise); untrained 80.0 %, so a chain is right 16.8 % of the time (p^8)
 *   but outcome reward is rewarded on 22.1 % (a chain whose errors cancel ends right too), and docs/credit.md predicts its step
 *   accuracy at 81.7 %."
 */
export function rowWords(row: Omit<ScaleRow, 'words'>): string {
  const { final, untrained } = row;
  if (!final.process || !final.outcome) return `${row.n} agents: not finished yet`;
  const noise = (i: Interval | null) => (side(i) === 'level' ? 'within the noise' : 'beyond the noise');
  let s = `${row.n} agents: team accuracy process ${pct1(final.process.team.p)} vs outcome ${pct1(final.outcome.team.p)}`;
  if (row.teamGap) s += `, ${gapText(row.teamGap)} (paired, ${noise(row.teamGap)})`;
  if (untrained && row.teamGain.process && row.teamGain.outcome) {
    s += `; against the untrained team's ${pct1(untrained.team.p)}, process ${gapText(row.teamGain.process)} (${noise(row.teamGain.process)}), `
      + `outcome ${gapText(row.teamGain.outcome)} (${noise(row.teamGain.outcome)})`;
  }
  s += `; mean step accuracy ${pct1(final.process.step.p)} vs ${pct1(final.outcome.step.p)}`;
  if (row.stepGap) s += `, ${gapText(row.stepGap)} (${noise(row.stepGap)})`;
  if (row.predictedTeam.process !== null) s += `, which predict team accuracy ${pct1(row.predictedTeam.process)} for process (1/10 + 9/10 λ^${row.n})`;
  if (untrained && row.chance !== null) {
    s += `; untrained ${pct1(untrained.step.p)}, so a chain is right ${oftenText(row.chance)} (p^${row.n})`;
    if (row.rewarded !== null) s += ` but outcome reward is rewarded on ${chanceText(row.rewarded)} (a chain whose errors cancel ends right too)`;
    if (row.predictedOutcomeStep !== null) s += `, and docs/credit.md predicts its step accuracy at ${pct1(row.predictedOutcomeStep)}`;
  }
  return `${s}.`;
}

/** How often, in words: "16.8 % of the time", "1 time in 71 million". */
function oftenText(x: number): string {
  const t = chanceText(x);
  return t.startsWith('1 in ') ? `1 time in ${t.slice(5)}` : `${t} of the time`;
}

/** "8 agents", "8 and 16 agents", "8, 16 and 32 agents". */
export function sizesText(ns: readonly number[]): string {
  return `${ns.length > 1 ? `${ns.slice(0, -1).join(', ')} and ${ns.at(-1)}` : ns[0]} agents`;
}

/**
 * What the run showed, in words, from the finished sizes: where process reward's mean step accuracy ended
 * above outcome reward's beyond the noise, where the two intervals overlap (no difference shown), where it
 * ended below; the same for team accuracy; and how outcome reward's rewarded rollouts fell toward the luck floor while right
 * chains all but vanished. Empty
 * until a size is finished. Example: see the file's head.
 */
export function scaleWords(rows: readonly Omit<ScaleRow, 'words'>[]): string {
  const done = rows.filter((r) => r.stepGap);
  if (!done.length) return '';
  const by = (key: 'stepGap' | 'teamGap', s: 'above' | 'below' | 'level') => done.filter((r) => side(r[key]) === s).map((r) => r.n);
  const clauses = (key: 'stepGap' | 'teamGap') => [
    by(key, 'above').length ? `ended above outcome reward's beyond the noise at ${sizesText(by(key, 'above'))}` : '',
    by(key, 'level').length
      ? `was within the noise of outcome reward's at ${sizesText(by(key, 'level'))} (the interval of the difference holds 0: no difference shown)` : '',
    by(key, 'below').length ? `ended below outcome reward's beyond the noise at ${sizesText(by(key, 'below'))}` : '',
  ].filter(Boolean).join(', and ');
  const rose = (key: 'stepGain' | 'teamGain', mode: ScaleMode) => {
    const up = done.filter((r) => side(r[key][mode]) === 'above').map((r) => r.n);
    const down = done.filter((r) => side(r[key][mode]) === 'below').map((r) => r.n);
    const parts = [up.length ? `rose beyond the noise at ${sizesText(up)}` : '', down.length ? `fell beyond the noise at ${sizesText(down)}` : ''];
    return parts.filter(Boolean).join(' and ') || 'did not move beyond the noise';
  };
  let s = '';
  if (done.some((r) => r.teamGain.process || r.teamGain.outcome)) {
    s += `Against the untrained team, on the same held-out problems, process reward's team accuracy ${rose('teamGain', 'process')}; `
      + `outcome reward's ${rose('teamGain', 'outcome')}. `;
  }
  s += `Process reward's mean step accuracy ${clauses('stepGap')}.`;
  if (done.some((r) => r.teamGap)) s += ` Its team accuracy ${clauses('teamGap')}.`;
  if (done.some((r) => r.untrained)) {
    s += ` Against the untrained team, process reward's step accuracy ${rose('stepGain', 'process')}; outcome reward's ${rose('stepGain', 'outcome')}.`;
  }
  const explained = done.filter((r) => r.predictedTeam.process !== null && r.final.process);
  if (explained.length) {
    const inside = (r: Omit<ScaleRow, 'words'>) => {
      const t = r.final.process!.team;
      return r.predictedTeam.process! >= t.low && r.predictedTeam.process! <= t.high;
    };
    const fits = explained.filter(inside).map((r) => r.n);
    const misses = explained.filter((r) => !inside(r)).map((r) => r.n);
    s += ' A chain ends right when its errors cancel on the dial, 1/10 + 9/10 λᴺ of the time if its steps err independently: process'
      + ` reward's trained steps predict team accuracy ${explained.map((r) => `${pct1(r.predictedTeam.process!)} at ${r.n}`).join(', ')} agents, against`
      + ` ${explained.map((r) => `${pct1(r.final.process!.team.p)} [${pct1(r.final.process!.team.low)}, ${pct1(r.final.process!.team.high)}]`).join(', ')}`
      + ' measured';
    const outside = `${fits.length ? ', and' : ':'} outside it at ${sizesText(misses)} (the model of independent steps does not hold there)`;
    s += [fits.length ? `: inside the measured interval at ${sizesText(fits)}` : '', misses.length ? outside : ''].join('') + '.';
  }
  const withChance = done.filter((r) => r.chance !== null && r.rewarded !== null);
  if (withChance.length >= 2) {
    const a = withChance[0];
    const b = withChance.at(-1)!;
    s += ` Outcome reward's share of rewarded rollouts fell from ${chanceText(a.rewarded!)} at ${a.n} agents to ${chanceText(b.rewarded!)} at `
      + `${b.n}, toward its floor of 10 % (a chain whose errors cancel on the dial still ends right), while right chains, p^N, fell from `
      + `${chanceText(a.chance!)} to ${chanceText(b.chance!)}: at ${b.n} agents ${chanceText(b.chance! / b.rewarded!)} of its rewards come from a right chain, the rest is luck.`;
  }
  const level = by('stepGap', 'level');
  if (level.length === done.length) s += ' At this budget the run shows no difference between the two rewards.';
  return s;
}

/** Agent generations a run plays: its training rollouts and its evaluations (greedy and sampled, N steps a problem). */
export function runGenerations(n: number, mode: ScaleMode, plan: ScalePlan, rolloutsPerIteration: number): number {
  const evaluations = mode === 'process' ? 2 : 1; // the outcome run reads the untrained team from the process run
  return n * (plan.iterations * rolloutsPerIteration + evaluations * 2 * plan.evalTasks);
}

/** The finished experiment's training time and end, or null unless every run is done with its time recorded. */
export function scaleTrained(runs: readonly ScaleRunData[], plan: ScalePlan): { seconds: number; finishedAt: number } | null {
  const all = plan.sizes.flatMap((n) => SCALE_MODES.map((mode) => runs.find((r) => r.n === n && r.mode === mode)));
  if (!all.every((r) => r?.done && r.seconds !== undefined && r.finishedAt !== undefined)) return null;
  return { seconds: all.reduce((t, r) => t + r!.seconds!, 0), finishedAt: Math.max(...all.map((r) => r!.finishedAt!)) };
}

/** Everything the page draws, from the runs so far. */
export function scaleView(runs: readonly ScaleRunData[], plan: ScalePlan, rolloutsPerIteration: number,
  now: Pick<ScaleView, 'status' | 'current' | 'elapsed' | 'remaining' | 'progress' | 'message'>): ScaleView {
  const find = (n: number, mode: ScaleMode) => runs.find((r) => r.n === n && r.mode === mode);
  const rows = plan.sizes.map((n) => scaleRow(n, find(n, 'process'), find(n, 'outcome'), plan));
  return { ...now, plan, rolloutsPerIteration, rows, words: scaleWords(rows), trained: scaleTrained(runs, plan) };
}
