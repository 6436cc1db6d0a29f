/**
 * The lesson's maths (pure, tested on hand-made results): `lessonView` turns the six runs' held-out
 * evaluations and per-agent step counts into what the page draws: each curve with its Wilson
 * intervals, the paired process - outcome gap, the gap docs/credit.md predicts, per-agent gains, a
 * sentence per size, the time left, and when a finished lesson was trained and for how long (stored with
 * its runs, so a reload shows it). The runner that trains the runs is lesson.ts.
 * For: lesson.ts and the page's types (Lesson.svelte). Not for: training or drawing.
 *
 * Example: const view = lessonView(runs, LESSON_PLAN);  // rows[1].words ->
 *          "4 agents: process 73.5 % vs outcome 50.5 %, a gap of +23.0 pts [+14.2, +31.3] (paired, the same 200 problems). ..."
 */
import { coachPrompt } from '../../../coach/coach-format.ts';
import { RELAY_COACH_TEMPLATE, relayConfig, relayWorkflow } from '../../../domains/relay/team.ts';
import { outcomePush } from '../../../domains/relay/luck.ts';
import { resolveTrainConfig } from '../../../domains/index.ts';
import { placeVars, renderTemplate } from '../../../loop/workflow.ts';
import type { EvalResult } from '../../../loop/records.ts';
import { usesCoach, type RewardMode } from '../../../loop/rewards.ts';
import { accuracyInterval, formatPoints, wilson, type Interval } from '../../../stats/intervals.ts';
import type { CoachQuality } from '../../coach-quality.ts';
import { pairedGap, PAIR_MODES, type AgentSteps, type PairMode, type StoredRunData } from '../run-maths.ts';

/**
 * The lesson's budget, cut from relayConfig's (40 iterations, 200 held-out tasks) so that the six runs
 * take minutes on two cores: 20 iterations x 200 tasks took 411 s in Node (wasm, one thread), gaps
 * +5.5 / +23.0 / +52.5 points at 2 / 4 / 6 agents; 15 x 100 took 82 s in the page (test/e2e/lesson.test.ts),
 * gaps 0.0 / +18.0 / +76.0 points (107-113 s and +1.0 / +28.0 / +51.0 with one rollout pass).
 */
export const LESSON_PLAN = {
  sizes: [2, 4, 6],
  iterations: 15,
  evalEvery: 5,
  evalTasks: 100,
  seed: 0,
  /** Held-out greedy team accuracy that counts as learnt, for "how fast" when both runs end level. */
  target: 0.9,
} as const;
export type LessonPlan = { sizes: readonly number[]; iterations: number; evalEvery: number; evalTasks: number; seed: number; target: number };

/**
 * The config patch of one lesson run: the relay team of `n` with the lesson's budget and `mode`. Process
 * reward is coached by the team's own AI judge (relayConfig's coach: models/relay-judge); a reward that reads
 * no coach (outcome, and the comparison's counterfactual and groups) loads no judge: the rubric fills its
 * records (the per-agent scores), and nothing it trains on comes from it.
 */
export function lessonPatch(n: number, mode: PairMode | RewardMode, plan: LessonPlan = LESSON_PLAN): Record<string, unknown> {
  return {
    ...relayConfig(n), iterations: plan.iterations, evalEvery: plan.evalEvery, evalTasks: plan.evalTasks,
    checkpointEvery: plan.evalEvery, seed: plan.seed, rewards: { mode }, ...(usesCoach(mode) ? {} : { coach: { kind: 'rule' } }),
  };
}

/**
 * What the relay team's judge reads for one step, built as its coach builds it (coachPrompt over the relay
 * team's own template, the one the lesson's process runs read): the agent's reply, then its input, which
 * ends with the step. Example (agent 2 of 4, given "7 + 5", replied "2"):
 *   'Relay agent 2 replied "2".\nRelay agent 2 of 4: reply with the last digit of the sum.\n\n7 + 5'
 */
export function judgePromptExample(n = 4, given = '7 + 5', reply = '2'): string {
  const w = relayWorkflow(n);
  const agent = w.agents[1];
  const input = `${renderTemplate(agent.system, placeVars(w, 1))}\n\n${given}`;
  return coachPrompt({ problem: '', agentId: agent.id, role: agent.role, input, output: reply, final: false }, RELAY_COACH_TEMPLATE);
}

const pctOf = (i: Interval) => `${(i.p * 100).toFixed(1)} % [${(i.low * 100).toFixed(1)}, ${(i.high * 100).toFixed(1)}]`;

/**
 * Who scored the process runs, in words, with the coach's measured ranking (read from its report, never
 * written in), and that outcome reward needs no coach. `done`: the runs are trained (past tense).
 * Example (the relay judge): 'An AI judge, models/relay-judge, scored every step of the process runs: it ranks
 *   100.0 % [99.2, 100.0] of an agent's differently-rated steps as the rubric does (480 held-out steps,
 *   models/relay-judge/report.json). Outcome reward needs no coach: every agent gets the team's 1 or 0.'
 */
export function lessonCoachWords(q: CoachQuality | null, done: boolean): string {
  const scored = done ? 'scored' : 'scores';
  const outcome = 'Outcome reward needs no coach: every agent gets the team\'s 1 or 0.';
  if (!q) return `A coach ${scored} every step of the process runs. ${outcome}`;
  if (q.isRater) return `The rubric (the rater itself) ${scored} every step of the process runs. ${outcome}`;
  const who = q.kind === 'model' ? `An AI judge, ${q.folder ?? q.who}` : q.who[0].toUpperCase() + q.who.slice(1);
  const steps = q.build?.checkSteps ? `${q.build.checkSteps} held-out steps, ` : '';
  const ranking = q.ranking
    ? `: it ranks ${pctOf(q.ranking)} of an agent's differently-rated steps as the rubric does (${steps}${q.source})`
    : ': how often it agrees with the rubric has not been measured';
  return `${who}, ${scored} every step of the process runs${ranking}. ${outcome}`;
}

/** A lesson run: a stored run and the per-agent counts before and after. */
export interface LessonRunData extends StoredRunData {
  /** Per-agent steps of the untrained team (`base`) and of the team after its last iteration (`final`), from those evaluations. */
  agents: { base?: AgentSteps; final?: AgentSteps };
}

export interface LessonPoint extends Interval {
  iteration: number;
  tasks: number;
}

export interface LessonAgentRow {
  /** 1-based position in the chain. */
  agent: number;
  base: Interval | null;
  process: Interval | null;
  outcome: Interval | null;
}

export interface LessonRow {
  n: number;
  curves: Record<PairMode, LessonPoint[]>;
  final: Record<PairMode, Interval | null>;
  /** Process - outcome, paired over the same held-out problems (the last evaluation of each). */
  gap: (Interval & { n: number }) | null;
  /** The untrained team's greedy step accuracy p (mean over agents) and team accuracy. */
  untrainedStep: number | null;
  untrained: Interval | null;
  /**
   * docs/credit.md: outcome reward's expected gain is lambda^(N-1) of process reward's (lambda = (10p - 1) / 9: a wrong chain's
   * errors can cancel on the dial), so the gap is (1 - lambda^(N-1)) x process's gain.
   */
  predictedGap: number | null;
  /** Rollouts until the held-out greedy accuracy first reached the plan's target (null: not within the run). */
  reached: Record<PairMode, number | null>;
  agents: LessonAgentRow[];
  words: string;
}

export interface LessonView {
  /**
   * 'idle': nothing of it is stored yet (`remaining`: the last whole lesson's measured training time when
   * it is being run again, else null); 'done' and 'paused' may be read back from storage (`readBack`).
   */
  status: 'idle' | 'running' | 'paused' | 'done' | 'failed';
  /** Shown from storage (a reload, a return visit), not trained in this page. */
  readBack?: boolean;
  /** A finished lesson: the seconds its six runs took to train and evaluate (stored with them), and when it finished; null when not all were recorded. */
  trained: { seconds: number; finishedAt: number } | null;
  plan: LessonPlan;
  rolloutsPerIteration: number;
  runs: { n: number; mode: PairMode; runId: string; iteration: number; done: boolean; seconds?: number; finishedAt?: number }[];
  /** The run training now (index into runs), null when none. */
  current: number | null;
  rows: LessonRow[];
  /** A sentence on the measured gaps against the prediction (gapWords). */
  gapWords: string;
  /** The coach of the process runs (what it is, its measured ranking), and the sentence that says so (lessonCoachWords). */
  coach: CoachQuality | null;
  coachWords: string;
  /** Seconds since this lesson began here, and the estimate of those left (null until the first run's pace is known). */
  elapsed: number;
  remaining: number | null;
  message?: string;
}

// ---- the maths ---------------------------------------------------------------------------------

/** The held-out greedy curve: every finished evaluation as a point with its Wilson interval, by iteration. */
export function curveOf(evals: readonly { iteration: number; result: EvalResult }[]): LessonPoint[] {
  return evals.filter((e) => e.result.of === undefined && e.result.tasks > 0)
    .map((e) => ({ iteration: e.iteration, tasks: e.result.tasks, ...accuracyInterval(e.result.greedy, e.result.tasks, e.result.perTask?.greedy) }))
    .sort((a, b) => a.iteration - b.iteration);
}

/** Rollouts until the curve first reached `target` (null: it never did). */
export function rolloutsTo(curve: readonly LessonPoint[], target: number, rolloutsPerIteration: number): number | null {
  const hit = curve.find((p) => p.p >= target - 1e-9);
  return hit ? hit.iteration * rolloutsPerIteration : null;
}

function lastFinished(run: LessonRunData | undefined): EvalResult | null {
  const done = (run?.evals ?? []).filter((e) => e.result.of === undefined && e.result.tasks > 0).sort((a, b) => a.iteration - b.iteration);
  return done.at(-1)?.result ?? null;
}

function stepInterval(s: AgentSteps | undefined, i: number): Interval | null {
  return s && s.judged[i] > 0 ? wilson(s.right[i], s.judged[i]) : null;
}

/** Per agent: the untrained step accuracy and each mode's after training. */
function agentRows(n: number, process?: LessonRunData, outcome?: LessonRunData): LessonAgentRow[] {
  const base = process?.agents.base ?? outcome?.agents.base;
  return Array.from({ length: n }, (_, i) => ({
    agent: i + 1, base: stepInterval(base, i), process: stepInterval(process?.agents.final, i), outcome: stepInterval(outcome?.agents.final, i),
  }));
}

const pts = (x: number) => `${x > 0.0005 ? '+' : ''}${(x * 100).toFixed(1)}`;

/** "agents 1-3" / "agent 2" / "agents 1, 3" from 1-based positions. */
export function agentList(positions: readonly number[]): string {
  if (!positions.length) return 'no agent';
  if (positions.length === 1) return `agent ${positions[0]}`;
  const run = positions.every((p, i) => i === 0 || p === positions[i - 1] + 1);
  return `agents ${run && positions.length > 2 ? `${positions[0]}-${positions.at(-1)}` : positions.join(', ')}`;
}

/**
 * Words on the agents: each one's change in step accuracy under both rewards, in points, then which
 * changes lie beyond the noise (an interval that excludes the untrained estimate), so that a small
 * change is never called a gain. Example:
 *   "step accuracy by agent, in points: process +19.0, +18.0; outcome +2.0, +4.0 (beyond the noise: process raised agents 1-2; outcome, none)"
 */
export function agentWords(agents: readonly LessonAgentRow[]): string {
  const gains = (mode: PairMode) => agents.filter((a) => a.base && a[mode])
    .map((a) => ({ agent: a.agent, d: a[mode]!.p - a.base!.p, up: a[mode]!.low > a.base!.p, down: a[mode]!.high < a.base!.p }));
  const outcome = gains('outcome');
  const process = gains('process');
  if (!outcome.length || !process.length) return '';
  const list = (gs: typeof outcome) => gs.map((g) => pts(g.d)).join(', ');
  const beyond = (gs: typeof outcome) => {
    const up = gs.filter((g) => g.up).map((g) => g.agent);
    const down = gs.filter((g) => g.down).map((g) => g.agent);
    const parts = [up.length ? `raised ${agentList(up)}` : '', down.length ? `lowered ${agentList(down)}` : ''].filter(Boolean);
    return parts.length ? parts.join(' and ') : null;
  };
  const p = beyond(process);
  const o = beyond(outcome);
  const noise = p || o
    ? `beyond the noise: ${p ? `process ${p}` : 'process, none'}; ${o ? `outcome ${o}` : 'outcome, none'}`
    : 'no change beyond the noise';
  return `step accuracy by agent, in points: process ${list(process)}; outcome ${list(outcome)} (${noise})`;
}

/** The sentence of one size: both final accuracies, the paired gap, and why there is none when there is none. */
export function rowWords(row: Omit<LessonRow, 'words'>, rolloutsPerIteration: number, plan: LessonPlan): string {
  const { final, gap } = row;
  if (!final.process || !final.outcome) return `${row.n} agents: not finished yet`;
  let s = `${row.n} agents: process ${pct1(final.process.p)} vs outcome ${pct1(final.outcome.p)}`;
  if (gap) s += `, a gap of ${formatPoints(gap)} (paired, the same ${gap.n} problems)`;
  if (gap && gap.low <= 0 && gap.high >= 0) s += `. ${levelWords(row, rolloutsPerIteration, plan)}`;
  const words = agentWords(row.agents);
  return words ? `${s}. ${words[0].toUpperCase()}${words.slice(1)}.` : `${s}.`;
}

const pct1 = (x: number) => `${(x * 100).toFixed(1)} %`;
const pct = (x: number) => `${Math.round(x * 100)} %`;

/**
 * Why a size shows no gap, and where the difference is instead: how fast each run got there. At the
 * ceiling (both at the plan's target or above) the target is the plan's; otherwise the level both reached
 * (the lower final accuracy, in whole points).
 */
function levelWords(row: Omit<LessonRow, 'words'>, rolloutsPerIteration: number, plan: LessonPlan): string {
  const p = row.final.process!.p;
  const o = row.final.outcome!.p;
  const ceiling = p >= plan.target && o >= plan.target;
  const target = ceiling ? plan.target : Math.floor(Math.min(p, o) * 100) / 100;
  const at = (m: PairMode) => rolloutsTo(row.curves[m], target, rolloutsPerIteration);
  const reach = (m: PairMode) => (at(m) === null ? `did not reach ${pct(target)}` : `reached ${pct(target)} after ${at(m)} rollouts`);
  const head = ceiling ? 'No gap: both reach the ceiling' : 'No gap shown at this budget: both end within the noise of this many problems';
  if (at('process') !== at('outcome')) return `${head}; the difference is how fast: process ${reach('process')}, outcome ${reach('outcome')}`;
  const step = row.untrainedStep;
  const signal = step === null ? '' : `: with ${row.n} agents outcome reward's signal is lambda^${row.n - 1} = ${outcomePush(step, row.n).toFixed(2)} `
    + 'of process reward\'s (docs/credit.md), too close to tell apart at this budget';
  return `${head}, and neither was faster (both ${reach('process')})${signal}`;
}

/**
 * The gap chart's note: where the measured gap lies above the prediction and outcome reward's agents
 * lost step accuracy, outcome reward did not only learn slower, it unlearned (docs/credit.md: with a
 * baseline, an agent whose step was right is pushed down whenever another agent failed).
 */
export function gapWords(rows: readonly Omit<LessonRow, 'words'>[]): string {
  const above = rows.filter((r) => r.gap && r.predictedGap !== null && r.gap.low > r.predictedGap);
  const unlearnt = above.filter((r) => {
    const d = r.agents.filter((a) => a.base && a.outcome).map((a) => a.outcome!.p - a.base!.p);
    return d.length > 0 && d.reduce((x, y) => x + y, 0) / d.length < 0;
  });
  if (!rows.some((r) => r.gap)) return '';
  if (!above.length) return 'The measured gaps are within reach of the prediction.';
  const sizes = (rs: typeof rows) => rs.map((r) => r.n).join(' and ');
  const why = unlearnt.length
    ? `: under outcome reward the agents' step accuracy fell at ${sizes(unlearnt)} agents, so outcome reward did not only learn slower, `
      + 'it unlearned (docs/credit.md, "Its limits")'
    : '';
  return `At ${sizes(above)} agents the gap is above the prediction${why}.`;
}

/** The mean of the agents' step accuracies in an evaluation (relay's metrics.stepAccuracy), or null. */
function stepAccuracyOf(r: EvalResult | null): number | null {
  return r?.metrics?.stepAccuracy ?? null;
}

/** One size's row from its two runs. */
function lessonRow(n: number, process: LessonRunData | undefined, outcome: LessonRunData | undefined, plan: LessonPlan,
  rolloutsPerIteration: number): LessonRow {
  const curves = { process: curveOf(process?.evals ?? []), outcome: curveOf(outcome?.evals ?? []) };
  const lastP = process?.done ? lastFinished(process) : null;
  const lastO = outcome?.done ? lastFinished(outcome) : null;
  const final = { process: lastP ? curves.process.at(-1)! : null, outcome: lastO ? curves.outcome.at(-1)! : null };
  const base = [...(process?.evals ?? []), ...(outcome?.evals ?? [])].find((e) => e.iteration === 0 && e.result.of === undefined)?.result ?? null;
  const untrained = base ? accuracyInterval(base.greedy, base.tasks, base.perTask?.greedy) : null;
  const p = stepAccuracyOf(base);
  const predictedGap = p !== null && untrained && final.process ? (1 - outcomePush(p, n)) * (final.process.p - untrained.p) : null;
  const reached = {
    process: rolloutsTo(curves.process, plan.target, rolloutsPerIteration), outcome: rolloutsTo(curves.outcome, plan.target, rolloutsPerIteration),
  };
  const row = { n, curves, final, gap: pairedGap(lastP, lastO), untrainedStep: p, untrained, predictedGap, reached, agents: agentRows(n, process, outcome) };
  return { ...row, words: rowWords(row, rolloutsPerIteration, plan) };
}

/** Everything the page draws, from the runs so far. */
export function lessonView(runs: readonly LessonRunData[], plan: LessonPlan, rolloutsPerIteration: number,
  now: { status: LessonView['status']; current: number | null; elapsed: number; remaining: number | null; message?: string;
    coach?: CoachQuality | null }): LessonView {
  const find = (n: number, mode: PairMode) => runs.find((r) => r.n === n && r.mode === mode);
  const rows = plan.sizes.map((n) => lessonRow(n, find(n, 'process'), find(n, 'outcome'), plan, rolloutsPerIteration));
  const { coach = null, ...state } = now;
  return {
    ...state, plan, rolloutsPerIteration, coach, coachWords: lessonCoachWords(coach, runs.some((r) => r.mode === 'process' && r.iteration > 0)),
    runs: runs.map(({ n, mode, runId, iteration, done, seconds, finishedAt }) => ({
      n, mode, runId, iteration, done, ...(seconds === undefined ? {} : { seconds }), ...(finishedAt === undefined ? {} : { finishedAt }),
    })),
    rows, gapWords: gapWords(rows), trained: trainedTime(runs, plan),
  };
}

/**
 * A finished lesson's training time and end: the stored seconds of its runs, summed, and the last run's
 * end; null unless every run of the plan is done with its time recorded.
 */
export function trainedTime(runs: readonly LessonRunData[], plan: LessonPlan): { seconds: number; finishedAt: number } | null {
  const all = plan.sizes.flatMap((n) => PAIR_MODES.map((mode) => runs.find((r) => r.n === n && r.mode === mode)));
  if (!all.every((r) => r?.done && r.seconds !== undefined && r.finishedAt !== undefined)) return null;
  return { seconds: all.reduce((t, r) => t + r!.seconds!, 0), finishedAt: Math.max(...all.map((r) => r!.finishedAt!)) };
}

/**
 * Work in units of one agent's share of an iteration, plus one unit of fixed cost (update, coach,
 * checkpoint): in the page a run took about 2.5 + 3.8 n seconds (test/e2e/lesson.test.ts: 10-11 s at
 * 2 agents, 16-18 s at 4, 24-27 s at 6), and an evaluation costs about 2 iterations per 200 tasks.
 */
export function iterationUnits(n: number): number {
  return n + 1;
}
export function evaluationUnits(n: number, plan: LessonPlan): number {
  return (n + 1) * 2 * (plan.evalTasks / 200);
}
/** A whole run: its iterations and its evaluations (which also give the per-agent step counts). */
export function runUnits(n: number, plan: LessonPlan): number {
  const evaluations = Math.floor(plan.iterations / plan.evalEvery) + 1;
  return plan.iterations * iterationUnits(n) + evaluations * evaluationUnits(n, plan);
}

/** The view before anything of the lesson is stored: the plan and empty charts; `remaining` a measured length when one is known. */
export function idleLessonView(plan: LessonPlan = LESSON_PLAN, remaining: number | null = null, coach: CoachQuality | null = null): LessonView {
  const c = resolveTrainConfig(lessonPatch(plan.sizes[0], 'process', plan));
  return lessonView([], plan, c.promptsPerIteration * c.samplesPerPrompt, { status: 'idle', current: null, elapsed: 0, remaining, coach });
}

// ---- the runner --------------------------------------------------------------------------------
