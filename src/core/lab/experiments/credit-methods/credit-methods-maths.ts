/**
 * The credit methods side by side, for the page (pure, tested on hand-made records): what each reward
 * mode needs, costs and gets, in words (the settings' hint), and "Compare credit methods": at the lesson's
 * 4 agents, seed and budget of agent generations (counted as bench/credit.ts counts them), the
 * counterfactual and state-group runs beside the lesson's own process and outcome runs, as one table. The
 * runner that trains them is credit-methods-run.ts; the page only draws the view (CreditMethods.svelte).
 *
 * The budget: the lesson plays 8 prompts x 2 samples an iteration, 16 N generations, for 15 iterations:
 * 240 N generations (960 at N = 4). Process, outcome and groups play exactly that. Counterfactual plays
 * binary trees (every agent replies twice to each frozen input: 2^(N+1) - 2 generations a prompt, 30 at
 * N = 4), round(16 N / 30) = 2 prompts an iteration, for round(960 / 60) = 16 iterations: 960 generations.
 * Held-out accuracy is the lesson's: greedy, on its 100 held-out problems, paired problem by problem.
 * Seconds are training time measured in this browser (rollouts, coaching, update, checkpoint; the
 * evaluations apart), from each run's own records.
 *
 * For: credit-methods-run.ts, lab.ts and the page (Settings.svelte's hint, CreditMethods.svelte). Not for: training
 * (core/loop) or the credit maths itself (rl/counterfactual.ts, rl/state-groups.ts, loop/rewards.ts).
 *
 * Example: comparePatch('counterfactual')  // -> rewards {mode: 'counterfactual', fanOut: [2, 2, 2, 2]}, 2 prompts x 1, 16 iterations
 *          methodsView(runs, ...).rows[2].words ->
 *          "counterfactual: no coach; 960 generations, 0 coach calls, 14 s of training here; 70.0 % [60.4, 78.1] held out,
 *           +7.0 pts [-4.2, +18.1] against outcome (paired, within the noise)."
 */
import { fanOutOf, REWARD_MODES, usesCoach, type RewardMode, type RewardSettings } from '../../../loop/rewards.ts';
import { treeCost } from '../../../rl/counterfactual.ts';
import { accuracyInterval, mean, type Interval } from '../../../stats/intervals.ts';
import type { CoachQuality } from '../../coach-quality.ts';
import { LESSON_PLAN, lessonPatch, type LessonPlan } from '../lesson/lesson-maths.ts';
import { PAIR_MODES, pairedGap } from '../run-maths.ts';
import { iterationSeconds, type EvalResult, type TimedIteration } from '../../../loop/records.ts';

/** The credit methods compared: every reward mode but 'mixed' (a blend of two of them), in the settings' order. */
export type CreditMethod = Exclude<RewardMode, 'mixed'>;
export const CREDIT_METHODS = REWARD_MODES.filter((m): m is CreditMethod => m !== 'mixed');
/** The methods the lesson trains already (their runs are the lesson's own, reused); the comparison trains the others. */
export const LESSON_METHODS: readonly CreditMethod[] = PAIR_MODES;
/** The lesson's team size the comparison runs at. */
export const COMPARE_AGENTS = 4;

/** What each reward mode needs, costs and gets, in a few words each (the settings' options and hint, the comparison's table). */
export const METHOD_WORDS: Record<RewardMode, { option: string; needs: string; costs: string; gets: string }> = {
  process: {
    option: 'process (a coach scores each step)', needs: 'a coach', costs: 'a coach call for every agent of every rollout',
    gets: 'each step trained on its own score / 10',
  },
  outcome: {
    option: 'outcome (the final answer only)', needs: 'no coach', costs: 'nothing beyond the rollouts',
    gets: 'every step trained on the team\'s 1 or 0',
  },
  mixed: {
    option: 'mixed (process and outcome)', needs: 'a coach', costs: 'a coach call for every agent of every rollout',
    gets: 'each step trained on a weighted sum of its score and the team\'s 1 or 0',
  },
  counterfactual: {
    option: 'counterfactual (replays, no coach)', needs: 'no coach', costs: 'extra generations: each agent\'s turn is replayed',
    gets: 'each reply credited with its replays\' outcome against the other replies to the same input',
  },
  groups: {
    option: 'groups (same input, no coach)', needs: 'no coach', costs: 'nothing beyond the rollouts',
    gets: 'each step credited with its outcome against the steps that met the same input',
  },
};

/**
 * The settings' hint for the reward in force: what it needs, costs and gets. For counterfactual, the
 * fan-out and the generations it costs; for groups, what it needs to form a group.
 * Example (relay of 4, counterfactual, 8 prompts x 2): 'Replays each agent's turn: every agent replies 2, 2, 2, 2
 *   times to the same frozen input, so a prompt costs 60 agent generations (2 samples, each a tree of 16 leaves and
 *   30 generations) instead of 8: 480 an iteration. It costs generations, not coach calls: no coach is read. ...'
 */
export function methodHint(
  c: { rewards: RewardSettings; workflow: { agents: readonly unknown[] }; promptsPerIteration: number; samplesPerPrompt: number },
): string {
  const n = c.workflow.agents.length;
  const w = METHOD_WORDS[c.rewards.mode];
  if (c.rewards.mode === 'counterfactual') {
    const fan = fanOutOf(c.rewards, n)!;
    const tree = treeCost(fan);
    const perIteration = tree.generations * c.promptsPerIteration * c.samplesPerPrompt;
    // A prompt is played once a sample, each a whole tree: with 2 samples it costs two trees' generations.
    const perPrompt = c.samplesPerPrompt > 1
      ? `${tree.generations * c.samplesPerPrompt} agent generations (${c.samplesPerPrompt} samples, each a tree of ${tree.leaves} leaves and `
        + `${tree.generations} generations)`
      : `${tree.generations} agent generations (${tree.leaves} leaves)`;
    return `Replays each agent's turn: every agent replies ${fan.join(', ')} times to the same frozen input (its fan-out), so a prompt `
      + `costs ${perPrompt} instead of ${n * c.samplesPerPrompt}: ${perIteration.toLocaleString('en-US')} an iteration. `
      + 'It costs generations, not coach calls: no coach is read. Each reply is credited with the mean outcome of its replays '
      + 'against the other replies to the same input.';
  }
  if (c.rewards.mode === 'groups') {
    return 'Groups the steps of one agent that met the same input across the iteration; each step is credited with its outcome '
      + 'against its prompt\'s samples and against its group. No coach, no extra generations; it needs inputs to repeat '
      + '(several samples per prompt, a large batch).';
  }
  return `Needs ${w.needs}; costs ${w.costs}; ${w.gets}.`;
}

/**
 * The budget every method gets, in agent generations, as bench/credit.ts counts it: the lesson's
 * prompts x samples x agents an iteration, for the lesson's iterations.
 */
export function generationBudget(n = COMPARE_AGENTS, plan: LessonPlan = LESSON_PLAN): { perIteration: number; total: number } {
  const process = lessonPatch(n, 'outcome', plan) as { promptsPerIteration: number; samplesPerPrompt: number };
  const perIteration = process.promptsPerIteration * process.samplesPerPrompt * n;
  return { perIteration, total: plan.iterations * perIteration };
}

/**
 * The config patch of one method's run at `n` agents: the lesson's own runs for process and outcome;
 * groups with the same batch and iterations; counterfactual as binary trees, as many prompts an iteration
 * as come nearest the others' generations and as many iterations as the budget holds. The two new runs
 * are measured once, at their end (the table needs no curve), on the lesson's held-out problems.
 */
export function comparePatch(method: CreditMethod, n = COMPARE_AGENTS, plan: LessonPlan = LESSON_PLAN): Record<string, unknown> {
  if (method === 'process' || method === 'outcome') return lessonPatch(n, method, plan);
  const base = lessonPatch(n, method, plan);
  if (method === 'groups') return { ...base, evalEvery: plan.iterations };
  const fanOut = new Array<number>(n).fill(2);
  const perPrompt = treeCost(fanOut).generations;
  const budget = generationBudget(n, plan);
  const prompts = Math.max(1, Math.round(budget.perIteration / perPrompt));
  const iterations = Math.max(1, Math.round(budget.total / (prompts * perPrompt)));
  return {
    ...base, rewards: { mode: method, fanOut }, promptsPerIteration: prompts, samplesPerPrompt: 1, rolloutPasses: 1, iterations, evalEvery: iterations,
  };
}

/** A run's record as the comparison reads it from the store: an iteration's metrics or an evaluation. */
export interface MethodRecord extends TimedIteration {
  perAgent?: Record<string, { kl?: number; samples?: number }>;
  generations?: number;
  coach?: { calls: number };
  eval?: EvalResult;
  /** The share of training rollouts the team got right. */
  trainAccuracy?: number;
  groups?: { sharedShare?: number };
}

/** What one method's run holds: its records, whether it is finished, and its stored training time. */
export interface MethodRunData {
  method: CreditMethod;
  runId: string;
  /** Its config's iterations and agents. */
  iterations: number;
  agents: number;
  records: MethodRecord[];
  done: boolean;
  /** Seconds it trained in this browser, evaluations included (the lesson's LESSON_TIME), and when it finished. */
  seconds?: number;
  finishedAt?: number;
}

/** A run's cost from its records: agent generations (distinct actions), coach calls its reward read, training seconds (evaluations apart). */
export function runCost(run: Pick<MethodRunData, 'method' | 'records' | 'agents'>):
  { generations: number; coachCalls: number; seconds: number; iterations: number } {
  const its = run.records.filter((r) => r.perAgent && r.iteration > 0);
  return {
    // Records written before `generations` was kept: one generation per agent of each trajectory (no tree then).
    generations: its.reduce((g, m) => g + (m.generations ?? (m.trajectories ?? 0) * run.agents), 0),
    coachCalls: usesCoach(run.method) ? its.reduce((k, m) => k + (m.coach?.calls ?? 0), 0) : 0,
    seconds: its.reduce((t, m) => t + (iterationSeconds(m) ?? 0), 0),
    iterations: its.length,
  };
}

/** The run's finished evaluation at its last iteration, or null. */
function finalEval(run: Pick<MethodRunData, 'records' | 'iterations'>): EvalResult | null {
  return run.records.find((r) => r.iteration === run.iterations && r.eval && r.eval.of === undefined && r.eval.tasks > 0)?.eval ?? null;
}

export interface MethodRow {
  method: CreditMethod;
  /** "an AI judge, models/relay-judge" or "no coach". */
  needs: string;
  /** Its run: the lesson's own (reused) or this comparison's. */
  from: 'lesson' | 'comparison';
  generations: number;
  coachCalls: number;
  seconds: number;
  iterations: number;
  /** Held-out greedy accuracy at the end, with its Wilson interval. */
  final: (Interval & { tasks: number }) | null;
  /** This method - outcome, paired on the same held-out problems (null for outcome itself, or until both are measured). */
  vsOutcome: (Interval & { n: number }) | null;
  done: boolean;
  words: string;
  /** Why it did as it did, from its records: its signal, its drift, its budget (whyWords); '' until finished. */
  why: string;
}

/**
 * What a run's records say of how it learnt: the share of training rollouts the team got right (the
 * signal a final answer gives), the largest KL to the base model per token of any agent in any iteration
 * (its drift), the samples each agent trained on an iteration (where its budget went), and for state
 * groups the share of steps that met an input another step met (the only ones a group speaks for).
 */
export function recordSigns(run: Pick<MethodRunData, 'records'>): { right: number; drift: number; samples: Record<string, number>; shared: number | null } {
  const its = run.records.filter((r) => r.perAgent && r.iteration > 0);
  const samples: Record<string, number> = {};
  for (const agent of Object.keys(its[0]?.perAgent ?? {})) samples[agent] = mean(its.map((r) => r.perAgent![agent]?.samples ?? 0));
  const shares = its.map((r) => r.groups?.sharedShare).filter((x): x is number => typeof x === 'number');
  return {
    right: mean(its.map((r) => r.trainAccuracy ?? 0)),
    drift: Math.max(0, ...its.flatMap((r) => Object.values(r.perAgent!).map((a) => a.kl ?? 0))),
    samples,
    shared: shares.length ? mean(shares) : null,
  };
}

/**
 * Why a finished method did as it did, in words, from its records beside outcome reward's (the reasons
 * docs/results.md found, measured on this run). Example (counterfactual at 4 agents): 'counterfactual ended
 * below the untrained team. Its budget went downstream: agent1 trained on 4 samples an iteration, agent4 on 32;
 * its drift: KL to the base model up to 1.21 per token (outcome: 0.31); its signal: the team was right in 19 %
 * of its training rollouts, and a reply's credit is 0 wherever all its replays end wrong.'
 */
export function whyWords(row: Pick<MethodRow, 'method' | 'final' | 'vsOutcome' | 'coachCalls'>, run: MethodRunData | undefined,
  outcome: MethodRunData | undefined, untrained: Interval | null, untrainedEval: EvalResult | null = null): string {
  if (!run?.done || !row.final) return '';
  const m = recordSigns(run);
  const base = outcome?.done ? recordSigns(outcome) : null;
  // Against the untrained team: paired on the same problems where both evaluations hold them, else by the two intervals.
  const paired = pairedGap(finalEval(run), untrainedEval);
  const [below, above] = paired ? [paired.high < 0, paired.low > 0]
    : untrained ? [row.final.high < untrained.low, row.final.low > untrained.high] : [false, false];
  const against = paired || untrained
    ? `${below ? ' ended below the untrained team' : above ? ' ended above the untrained team' : ' ended within the noise of the untrained team'}`
      + (paired ? ` (${pointsWords(paired)}, paired)` : '')
    : '';
  const right = `the team was right in ${Math.round(m.right * 100)} % of its training rollouts`;
  const drift = `KL to the base model up to ${m.drift.toFixed(2)} per token${base && row.method !== 'outcome' ? ` (outcome: ${base.drift.toFixed(2)})` : ''}`;
  const agents = Object.entries(m.samples);
  const budget = agents.length > 1
    ? `${agents[0][0]} trained on ${Math.round(agents[0][1])} samples an iteration, ${agents.at(-1)![0]} on ${Math.round(agents.at(-1)![1])}` : '';
  switch (row.method) {
    case 'process':
      return `process${against}. Its signal: the coach scored every step (${row.coachCalls.toLocaleString('en-US')} calls), so each agent `
        + `learnt from its own step whether or not the team was right (${right}); its drift: ${drift}.`;
    case 'outcome':
      return `outcome${against}. Its signal: every step got the team's 1 or 0, and ${right}; a right step in a wrong team was pushed down; `
        + `its drift: ${drift}.`;
    case 'counterfactual':
      return `counterfactual${against}. Its budget went to replays${budget ? `: ${budget}` : ''}; its signal: a reply's credit is 0 wherever all `
        + `its replays end wrong (${right}); its drift: ${drift}.`;
    case 'groups': {
      const shared = m.shared === null ? '' : `; only ${Math.round(m.shared * 100)} % of steps met an input another step met, the only ones a group speaks for`;
      return `groups${against}. Its signal: a prompt whose samples are all wrong gives 0 (${right})${shared}; its drift: ${drift}.`;
    }
    default:
      return '';
  }
}

export interface CreditMethodsView {
  status: 'idle' | 'running' | 'paused' | 'done' | 'failed';
  /** Shown from storage (a reload), not trained in this page. */
  readBack?: boolean;
  n: number;
  /** The budget each method gets, in agent generations. */
  budget: number;
  evalTasks: number;
  rows: MethodRow[];
  /** The run training now, with its iteration. */
  current: { method: CreditMethod; iteration: number; iterations: number } | null;
  /** Seconds since this comparison began here, and those left (null until its pace is known). */
  elapsed: number;
  remaining: number | null;
  /** The process runs' coach, as the lesson names it. */
  coach: CoachQuality | null;
  /** The untrained team's held-out accuracy (the lesson's runs measure it), for reading the four against it. */
  untrained: (Interval & { tasks: number }) | null;
  /** The comparison in one sentence (methodsWords). */
  words: string;
  /** Its conclusion in one sentence, from its own numbers, shown first (methodsTakeaway); '' until two methods have finished. */
  takeaway: string;
  message?: string;
}

const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
const span = (i: Interval) => `${pct(i.p)} [${(i.low * 100).toFixed(1)}, ${(i.high * 100).toFixed(1)}]`;
const signed = (x: number) => `${x > 0.0005 ? '+' : x < -0.0005 ? '-' : ''}${Math.abs(x * 100).toFixed(1)}`;
const pointsWords = (d: Interval) => `${signed(d.p)} pts [${signed(d.low)}, ${signed(d.high)}]`;
/** Whether a paired difference lies beyond the noise, in words. */
const beyondNoise = (d: Interval) => (d.low > 0 ? 'a gain beyond the noise' : d.high < 0 ? 'a loss beyond the noise' : 'within the noise');

/** What a method needs, in words: the process runs' coach by name, else no coach. */
function needsWords(method: CreditMethod, coach: CoachQuality | null): string {
  if (!usesCoach(method)) return 'no coach';
  if (!coach) return 'a coach';
  return coach.kind === 'model' ? `an AI judge, ${coach.folder ?? coach.who}` : coach.who;
}

/** One method's row from its run and outcome's. */
export function methodRow(run: MethodRunData | undefined, method: CreditMethod, outcome: MethodRunData | undefined, coach: CoachQuality | null): MethodRow {
  const cost = run ? runCost(run) : { generations: 0, coachCalls: 0, seconds: 0, iterations: 0 };
  const last = run?.done ? finalEval(run) : null;
  const final = last ? { ...accuracyInterval(last.greedy, last.tasks, last.perTask?.greedy), tasks: last.tasks } : null;
  const base = outcome?.done ? finalEval(outcome) : null;
  const vsOutcome = method === 'outcome' ? null : pairedGap(last, base);
  const needs = needsWords(method, coach);
  const from = (LESSON_METHODS as readonly string[]).includes(method) ? 'lesson' : 'comparison';
  let words: string;
  if (!run?.done || !final) words = `${method}: not trained yet`;
  else {
    const calls = `${cost.coachCalls.toLocaleString('en-US')} coach call${cost.coachCalls === 1 ? '' : 's'}`;
    words = `${method}: ${needs}; ${cost.generations.toLocaleString('en-US')} generations, ${calls}, ${Math.round(cost.seconds)} s of training here; `
      + `${span(final)} held out`;
    if (vsOutcome) words += `, ${pointsWords(vsOutcome)} against outcome (paired, ${beyondNoise(vsOutcome)})`;
    words += '.';
  }
  return { method, needs, from, ...cost, final, vsOutcome, done: Boolean(run?.done && final), words, why: '' };
}

/**
 * The comparison in words: the budget, each finished method's accuracy beside the untrained team's, and
 * which differ from outcome reward beyond the noise, gains and losses apart. Example: 'At 4 agents and 960
 * generations each: process 81.0 %, outcome 63.0 %, counterfactual 27.0 %, groups 47.0 % (greedy, 100
 * held-out problems; the untrained team 55.0 %). Against outcome, paired: a gain beyond the noise for process
 * (+18.0 pts [+6.4, +29.0]); a loss beyond the noise for counterfactual (-36.0 pts [-47.0, -23.2]) and groups
 * (-16.0 pts [-25.6, -5.8]).'
 */
function methodsWords(rows: readonly MethodRow[], n: number, budget: number, evalTasks: number, untrained: Interval | null = null): string {
  const done = rows.filter((r) => r.final);
  if (!done.length) return '';
  const base = untrained ? `; the untrained team ${pct(untrained.p)}` : '';
  let s = `At ${n} agents and ${budget.toLocaleString('en-US')} generations each: ${done.map((r) => `${r.method} ${pct(r.final!.p)}`).join(', ')} `
    + `(greedy, ${evalTasks} held-out problems${base}).`;
  const paired = done.filter((r) => r.vsOutcome);
  if (!paired.length) return s;
  const list = (rs: MethodRow[]) => {
    const each = rs.map((r) => `${r.method} (${pointsWords(r.vsOutcome!)})`);
    return each.length > 1 ? `${each.slice(0, -1).join(', ')} and ${each.at(-1)}` : each[0];
  };
  const gains = paired.filter((r) => r.vsOutcome!.low > 0);
  const losses = paired.filter((r) => r.vsOutcome!.high < 0);
  const within = paired.filter((r) => !gains.includes(r) && !losses.includes(r));
  const parts = [
    gains.length ? `a gain beyond the noise for ${list(gains)}` : '',
    losses.length ? `a loss beyond the noise for ${list(losses)}` : '',
    within.length ? `within the noise: ${within.map((r) => r.method).join(', ')}` : '',
  ].filter(Boolean);
  return `${s} Against outcome, paired: ${parts.join('; ')}.`;
}

/**
 * The comparison's conclusion in one sentence, from its own numbers: the method that beat outcome reward
 * most beyond the noise (or that none did), and the one that fell furthest below it with its cause where
 * its records show one (a KL to the base model over twice outcome's: it drifted instead of learning).
 * '' until outcome and one other method have finished.
 * Example: 'Process reward taught the team most: +18.0 pts [+10.2, +25.8] over outcome reward, paired; counterfactual
 *   drifted from the base model instead of learning: KL 2.78 against outcome's 0.23, and ended -20.0 pts [-30.1, -9.9] below it.'
 */
function methodsTakeaway(rows: readonly MethodRow[], runs: readonly MethodRunData[]): string {
  const paired = rows.filter((r) => r.vsOutcome && r.final);
  if (!paired.length) return '';
  const gains = paired.filter((r) => r.vsOutcome!.low > 0).sort((a, b) => b.vsOutcome!.p - a.vsOutcome!.p);
  const losses = paired.filter((r) => r.vsOutcome!.high < 0).sort((a, b) => a.vsOutcome!.p - b.vsOutcome!.p);
  const parts = [gains.length
    ? `${gains[0].method} reward taught the team most: ${pointsWords(gains[0].vsOutcome!)} over outcome reward, paired`
    : `no method beat outcome reward beyond the noise at this budget (paired: ${paired.map((r) => `${r.method} ${pointsWords(r.vsOutcome!)}`).join(', ')})`];
  const worst = losses[0];
  if (worst) {
    const run = runs.find((r) => r.method === worst.method);
    const base = runs.find((r) => r.method === 'outcome');
    const [drift, baseDrift] = run && base ? [recordSigns(run).drift, recordSigns(base).drift] : [0, 0];
    parts.push(baseDrift > 0 && drift > 2 * baseDrift
      ? `${worst.method} drifted from the base model instead of learning: KL ${drift.toFixed(2)} against outcome's ${baseDrift.toFixed(2)}, `
        + `and ended ${pointsWords(worst.vsOutcome!)} below it`
      : `${worst.method} ended below outcome reward: ${pointsWords(worst.vsOutcome!)}`);
  }
  const s = `${parts.join('; ')}.`;
  return s[0].toUpperCase() + s.slice(1);
}

/** The untrained team's held-out accuracy, from the lesson's runs (their evaluation at iteration 0), or null. */
function untrainedOf(runs: readonly MethodRunData[]): (Interval & { tasks: number }) | null {
  for (const r of runs) {
    const e = r.records.find((x) => x.iteration === 0 && x.eval && x.eval.of === undefined && x.eval.tasks > 0)?.eval;
    if (e) return { ...accuracyInterval(e.greedy, e.tasks, e.perTask?.greedy), tasks: e.tasks };
  }
  return null;
}

/** Everything the page draws of the comparison, from its runs so far. */
export function methodsView(runs: readonly MethodRunData[],
  now: Omit<CreditMethodsView, 'rows' | 'words' | 'takeaway' | 'n' | 'budget' | 'evalTasks' | 'untrained'>, n = COMPARE_AGENTS, plan: LessonPlan = LESSON_PLAN): CreditMethodsView {
  const find = (m: CreditMethod) => runs.find((r) => r.method === m);
  const untrained = untrainedOf(runs);
  const untrainedEval = runs.flatMap((r) => r.records).find((x) => x.iteration === 0 && x.eval && x.eval.of === undefined && x.eval.tasks > 0)?.eval ?? null;
  const rows = CREDIT_METHODS.map((m) => {
    const row = methodRow(find(m), m, find('outcome'), now.coach);
    return { ...row, why: whyWords(row, find(m), find('outcome'), untrained, untrainedEval) };
  });
  const budget = generationBudget(n, plan).total;
  return {
    ...now, n, budget, evalTasks: plan.evalTasks, rows, untrained, words: methodsWords(rows, n, budget, plan.evalTasks, untrained),
    takeaway: methodsTakeaway(rows, runs),
  };
}
