/**
 * What differs between the domains the sandbox trains — math chains, data-analysis teams and the
 * relay team of 1..6 agents — gathered in one place so the loop (train.ts) stays domain-free.
 *
 * For: `domainOf(workflow)` -> where training and held-out tasks come from, how a finished
 * trajectory is judged (boxed answer vs workspace submission + metrics), what extra facts the coach
 * sees, the rule-based coach, and which quality metrics to average.
 * Not for: the domains' own logic (tasks/math.ts, data-team.ts, data-outcome.ts, data-coach.ts).
 *
 * Example: domainOf(MATH_CHAIN).heldOut(50) -> 50 level-balanced held-out math problems, levels interleaved;
 *          domainOf(DATA_TEAM).trainPool(0) -> seeded tabular tasks with their CSV files;
 *          domainOf(relayWorkflow(4)).heldOut(200) -> the 200 held-out relay tasks for 4 agents.
 */
import { mathHeldOut } from './math/tasks.ts';
import type { Workspace } from '../tools/workspace.ts';
import type { Coach } from '../coach/coach.ts';
import { ruleCoach, withTeamJudge } from '../coach/coaches.ts';
import { dataFacts, dataRuleCoach } from './data/coach.ts';
import { dataOutcome } from './data/outcome.ts';
import { dataHeldOut, dataTrainTasks } from './data/team.ts';
import { relayHeldOut, relayTasks } from './relay/tasks.ts';
import { RELAY_JUDGE_MODEL, relayOutcome, relayRuleCoach } from './relay/team.ts';
import type { RolloutTask, Trajectory, TrajectoryOutcome } from '../loop/rollout.ts';
import type { WorkflowSpec } from '../loop/workflow.ts';
import type { TrainConfig } from '../loop/config.ts';
import { stratifiedOrder } from '../stats/order.ts';

export interface Domain {
  name: 'math' | 'data' | 'relay';
  /** Training tasks as a fixed pool, or undefined for generated math problems by level (curriculum). */
  trainPool(seed: number): RolloutTask[] | undefined;
  /** A fixed held-out set of `count` tasks (fewer when the domain has fewer). */
  heldOut(count: number): RolloutTask[];
  /** Judges a finished trajectory from its workspace (default: the final agent's boxed answer). */
  outcome?: (t: Trajectory, ws: Workspace) => TrajectoryOutcome;
  /** Extra facts the coach sees for an agent (files and owners; metrics for the final agent). */
  facts?: (t: Trajectory, agentId: string) => string | undefined;
  ruleCoach(): Coach;
  /** The team's own judge model for `coach.kind: "model"` (the relay team's models/relay-judge); none = the config's `coach.model`. */
  judgeModel?: string;
  /** Quality metrics averaged over trajectories that report them. */
  metricNames: string[];
}

/** The seed of the held-out evaluation order (stratifiedOrder); a new seed changes every running estimate. */
export const HELD_OUT_ORDER_SEED = 'heldout-order-v1';

/**
 * A fixed, level-balanced subset of the 200 held-out math problems (every (200 / count)-th of the
 * level-sorted list, as before), in the order they are evaluated: stratified by level, so that every
 * prefix holds each level in proportion (docs/eval-order.md).
 *
 * Why an order at all: the page evaluates in chunks and shows the running accuracy with its 95 %
 * interval after each one. In level order (easiest first) that prefix is a biased sample: the
 * untrained team showed 61.9 % after 42 problems and ended at 25.0 %. Why stratified rather than a
 * plain seeded shuffle: accuracy differs far more between levels than within one, and a shuffled
 * prefix still drifts with the luck of its level mix; a stratified prefix carries only the
 * within-level spread, so the Wilson interval (which assumes a plain random sample) is conservative
 * for it. On the untrained team's recorded results the running interval covers the final accuracy
 * at all 192 prefix sizes 8..199 (greedy and sampled), against 38 % / 55 % in level order. A
 * stratified prefix has 80 % of a shuffled one's variance there (greedy; 88 % sampled), and over 500
 * seeds (greedy) it covers at 99.4 % on average against 98.8 %, 96.9 % against 92.7 % at the 5th
 * percentile. test/unit/loop/eval-order.test.ts, docs/eval-order.md.
 * Same order in `mappa train`, `mappa eval` and the page: all take their tasks from here (domain.heldOut, heldOutTasks).
 */
export function mathEvalTasks(count: number): RolloutTask[] {
  const all = mathHeldOut();
  const step = all.length / count;
  const subset = Array.from({ length: Math.min(count, all.length) }, (_, i) => all[Math.floor(i * step)]);
  return stratifiedOrder(subset, (t) => t.level, HELD_OUT_ORDER_SEED);
}

const MATH: Domain = {
  name: 'math',
  trainPool: () => undefined,
  heldOut: mathEvalTasks,
  ruleCoach,
  metricNames: [],
};

const DATA: Domain = {
  name: 'data',
  trainPool: (seed) => dataTrainTasks(`train:${seed}`, 64),
  // Already unbiased: kinds interleaved (classification, regression, ...), each kind's tasks drawn at random (seeded), not sorted.
  heldOut: (count) => dataHeldOut().slice(0, count),
  outcome: dataOutcome,
  facts: (t, agentId) => dataFacts(t, agentId),
  ruleCoach: dataRuleCoach,
  // coverage (share of test ids predicted; 0 without a submission) is set on every prediction task, the rest only on complete submissions
  metricNames: ['coverage', 'rocAuc', 'accuracy', 'f1', 'rmseOverRange', 'rmseOverIqr'],
};

/** The relay team of n agents: a fixed training pool of distinct tasks, the held-out 200, per-step checks. */
function relayDomain(n: number): Domain {
  return {
    name: 'relay',
    trainPool: (seed) => relayTasks(n, seed, 4000),
    // Drawn at random (seeded) with no sorting, so any prefix is already an unbiased sample.
    heldOut: (count) => relayHeldOut(n).slice(0, count),
    outcome: relayOutcome,
    // The rule carries the team's judge, so buildCoach(config.coach, load, domain.ruleCoach) loads it for a model coach.
    ruleCoach: withTeamJudge(relayRuleCoach, RELAY_JUDGE_MODEL),
    judgeModel: RELAY_JUDGE_MODEL,
    metricNames: ['stepAccuracy'],
  };
}

export function domainOf(w: WorkflowSpec): Domain {
  if (w.domain === 'relay') return relayDomain(w.agents.length);
  return w.domain === 'data' ? DATA : MATH;
}

/**
 * The held-out tasks an evaluation of `config` runs, in order: the first `config.evalTasks` of a
 * given held-out dataset (the user's file, in its order), else the domain's fixed set (its order:
 * mathEvalTasks). The page's chunked evaluation (eval-queue.ts) and the whole-set one (train.ts
 * evaluateTeam: `mappa train`, `mappa eval`) both select through it: one order everywhere.
 */
export function heldOutTasks(config: Pick<TrainConfig, 'workflow' | 'evalTasks'>, given?: RolloutTask[]): RolloutTask[] {
  return given?.length ? given.slice(0, config.evalTasks) : domainOf(config.workflow).heldOut(config.evalTasks);
}

/** Mean of each quality metric over the trajectories that report it (e.g. {rocAuc: 0.71}). */
export function meanMetrics(trajs: Trajectory[], names: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const name of names) {
    const values = trajs.map((t) => t.metrics?.[name]).filter((v): v is number => typeof v === 'number' && Number.isFinite(v));
    if (values.length) out[name] = values.reduce((a, b) => a + b, 0) / values.length;
  }
  return out;
}
