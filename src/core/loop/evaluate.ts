/**
 * Held-out evaluation of a team: the held-out problems (the domain's stratified order, or a
 * dataset's), played greedy and at the evaluation temperature with one fixed seed, and the result
 * with each problem's outcome. The same function measures the untrained team, a trained one, the
 * CLI's `eval` and the page's chunks (evalResultOf).
 *
 * For: evaluateTeam (a whole evaluation) and evalResultOf (a result from trajectories already played).
 * Not for: choosing when to evaluate (train.ts evalDue, eval-queue.ts).
 * Example: const r = await evaluateTeam(config, backends, tools);   // {greedy: 0.25, sampled: 0.2, tasks: 200, perTask}
 */
import { domainOf, heldOutTasks, meanMetrics } from '../domains/index.ts';
import type { AdapterSpec } from '../rl/lanes.ts';
import type { ToolRunners } from '../tools/runners.ts';
import type { AgentBackend } from './agents.ts';
import type { TrainConfig } from './config.ts';
import type { EvalResult } from './records.ts';
import { runRollouts, type RolloutTask, type Trajectory } from './rollout.ts';

/** A sampled evaluation pass on another thread, for adapters given as values (null: the base model). */
export type EvalOffload = (config: TrainConfig, adapters: Map<string, AdapterSpec | null>, tasks: RolloutTask[],
  temperature: number, seed: number) => Promise<Trajectory[]>;

export interface EvalOptions {
  /** Progress: rows of each generation stage. */
  onStage?: (rows: number) => void;
  /** Held-out tasks instead of the domain's generated set (first `config.evalTasks`). */
  heldOut?: RolloutTask[];
  onTrajectories?: (mode: 'greedy' | 'sampled', trajs: Trajectory[]) => void;
  /**
   * Runs the sampled pass elsewhere (another thread) while this one runs the greedy pass; it gets the
   * same tasks, temperature and seed, so the same trajectories. If it fails, the pass runs here.
   */
  offloadSampled?: (tasks: RolloutTask[], temperature: number, seed: number) => Promise<Trajectory[]>;
  onOffloadError?: (e: Error) => void;
}

/** The evaluation's fixed sampling seed: every evaluation of a run draws the same way. */
export const EVAL_SEED = 1_000_003;

/** Held-out team accuracy for any set of agent backends (trained adapters, base model, or mixed). */
export async function evaluateTeam(config: TrainConfig, backends: Map<string, AgentBackend>, tools: ToolRunners,
  opts: EvalOptions = {}): Promise<EvalResult> {
  const domain = domainOf(config.workflow);
  const tasks = heldOutTasks(config, opts.heldOut);
  const run = async (temperature: number) => runRollouts(config.workflow, tasks, {
    agents: backends, tools, outcome: domain.outcome, samplesPerTask: 1, temperature,
    seed: EVAL_SEED, toolTimeoutMs: config.toolTimeoutMs, onStage: (s) => opts.onStage?.(s.rows),
  });
  const elsewhere = opts.offloadSampled?.(tasks, config.evalTemperature, EVAL_SEED).catch((e: Error) => {
    opts.onOffloadError?.(e);
    return null;
  });
  const greedy = await run(0);
  opts.onTrajectories?.('greedy', greedy);
  const sampled = (await elsewhere) ?? (await run(config.evalTemperature));
  opts.onTrajectories?.('sampled', sampled);
  return evalResultOf(config, greedy, sampled);
}

/**
 * An evaluation's result from its greedy and sampled trajectories (the same tasks, in order): the
 * accuracies, the domain's mean quality metrics of each pass, and each task's result. `of`: the tasks
 * a running evaluation will have in all (the page's running estimate).
 */
export function evalResultOf(config: TrainConfig, greedy: Trajectory[], sampled: Trajectory[], of?: number): EvalResult {
  const names = domainOf(config.workflow).metricNames;
  const accuracy = (trajs: Trajectory[]) => trajs.filter((t) => t.correct).length / Math.max(trajs.length, 1);
  const metrics = meanMetrics(greedy, names);
  const sampledMetrics = meanMetrics(sampled, names);
  return {
    greedy: accuracy(greedy), sampled: accuracy(sampled), tasks: greedy.length,
    ...(of === undefined ? {} : { of }),
    ...(Object.keys(metrics).length ? { metrics } : {}),
    ...(Object.keys(sampledMetrics).length ? { sampledMetrics } : {}),
    perTask: { ids: greedy.map((t) => t.task.id), greedy: greedy.map((t) => t.correct), sampled: sampled.map((t) => t.correct) },
  };
}
