/**
 * What the loop needs of a team, declared here and passed in by the caller (the CLI, the lab, the
 * benchmarks, the scripts resolve it from the workflow; each team's folder implements it): where its
 * tasks come from, how a finished trajectory is judged, what its coach reads, what it measures. The loop
 * never looks a team up.
 *
 * For: `Team`, as each team's folder exports it (MATH_TEAM, DATA_TEAM, RELAY_TEAM; `forWorkflow` gives
 * the one a workflow plays where that depends on it: a relay of 4 and one of 6), and `meanMetrics`, the
 * team's quality metrics averaged. Not for: the registry of teams (the caller's).
 *
 * Example (a team of one agent that echoes a digit):
 *   const ECHO: Team = { name: 'echo', trainPool: () => tasks, heldOut: (n) => tasks.slice(0, n),
 *     ruleCoach: () => new RuleCoach('rule:echo', (a) => ({ score: a.output.trim() === a.task?.answer ? 10 : 0 })), metricNames: [] };
 *   meanMetrics([{ metrics: { rocAuc: 0.6 } }, { metrics: { rocAuc: 0.8 } }, {}], ['rocAuc']) -> { rocAuc: 0.7 }
 */
import type { Coach } from '../coach/coach.ts';
import { mean } from '../stats/intervals.ts';
import type { TrainConfig } from './config.ts';
import type { SqlFunction } from '../tools/sql-statements.ts';
import type { Workspace } from '../tools/workspace.ts';
import type { RolloutTask, Trajectory, TrajectoryOutcome } from './trajectory.ts';
import type { WorkflowSpec } from './workflow.ts';

export interface Team {
  /** The workflow's `domain` (e.g. "math"). */
  name: string;
  /**
   * Training tasks: a pool of about `size` tasks of difficulty `level` (a leveled team: 1..5, 0 = every
   * level mixed), seeded by the run's seed; a team without levels returns its one fixed pool.
   */
  trainPool(seed: number, level: number, size: number): RolloutTask[];
  /** Whether tasks come by level (the curriculum then raises and lowers it with the team's accuracy). */
  leveled?: boolean;
  /** A fixed held-out set of `count` tasks (fewer when the team has fewer), in its evaluation order. */
  heldOut(count: number): RolloutTask[];
  /**
   * Judges a finished trajectory: its answer read from the final agent's text (`finalText`, its turns
   * joined) and whether it is right, from the task and the workspace (the math team: the last \boxed{}).
   */
  outcome: (t: Trajectory, ws: Workspace, finalText: string) => TrajectoryOutcome;
  /** Extra facts the coach sees for an agent (files and owners; metrics for the final agent). */
  facts?: (t: Trajectory, agentId: string) => string | undefined;
  /**
   * Per action of a finished trajectory, whether it did its step right given its input (undefined where
   * there is nothing to judge): what an evaluation reports as each agent's step accuracy.
   */
  stepRight?: (t: Trajectory) => (boolean | undefined)[];
  /** The team's rubric as a coach (the "rule" coach; the rater its judge learns from). */
  ruleCoach(): Coach;
  /** The team's own judge model, what `coach.model: "team"` loads. */
  judgeModel?: string;
  /** The team's own coach template, what `coach.template: "team"` means (none: the generic one). */
  coachTemplate?: string;
  /** Quality metrics averaged over trajectories that report them. */
  metricNames: string[];
  /**
   * Per agent id, whether a reply (its text, its turn) follows the team's format: a structure check, not
   * correctness (the pretraining's report of an untrained team). None: nothing to check.
   */
  formats?: Record<string, (text: string, turn: number) => boolean>;
  /** Table functions its agents call in SQL (the data team's fit_predict): the caller gives them to the SQL tool. */
  sqlFunctions?: readonly SqlFunction[];
  // What the callers' registry (not the loop) reads of a team's folder:
  /** The team as a workflow of its domain plays it, where that depends on the workflow (the relay: its size); absent: this team. */
  forWorkflow?(w: WorkflowSpec): Team;
  /** Its workflows for the page's team menu, in order. */
  presets?(): TeamChoice[];
  /** A team that takes any number of agents in a range (the relay: 1..128): its workflow of `n`, what the page's size field and links use. */
  sized?: { min: number; max: number; workflow(n: number): WorkflowSpec };
  /** Loop settings the team brings with it (a config patch without the workflow; resolveTrainConfig applies it); none: the defaults. */
  settings?(w: WorkflowSpec): Record<string, unknown>;
}

/** What a pass needs of a run's config to play its team: the agents' model (by name: a lane loads its own), the workflow, the tools' time limit. */
export type PlayedTeam = Pick<TrainConfig, 'agentModel' | 'workflow' | 'toolTimeoutMs'> & Partial<Pick<TrainConfig, 'rolloutBatch'>>;

/**
 * Those of a config a pass needs (rolloutBatch only where set: absent, the agents decode 16 rows at once).
 * Example: playedTeam(config) -> { agentModel: 'models/agent', workflow, toolTimeoutMs: 2000, rolloutBatch: 16 }
 */
export function playedTeam(c: PlayedTeam): PlayedTeam {
  const played = { agentModel: c.agentModel, workflow: c.workflow, toolTimeoutMs: c.toolTimeoutMs };
  return c.rolloutBatch === undefined ? played : { ...played, rolloutBatch: c.rolloutBatch };
}

/** A shipped workflow as the page's team menu offers it. */
export interface TeamChoice {
  name: string;
  label: string;
  /** A fresh copy: the caller may edit it. */
  workflow: WorkflowSpec;
}

/** Mean of each quality metric over the trajectories that report it (e.g. {rocAuc: 0.71}). */
export function meanMetrics(trajs: Pick<Trajectory, 'metrics'>[], names: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const name of names) {
    const values = trajs.map((t) => t.metrics?.[name]).filter((v): v is number => typeof v === 'number' && Number.isFinite(v));
    if (values.length) out[name] = mean(values);
  }
  return out;
}
