/**
 * What a team brings to the loop, as the loop asks for it: a `Domain` (its tasks, how a finished
 * trajectory is judged, what its coach reads) and a `Team` (the folder's entry: its domain for a
 * workflow, the workflows the page offers, the settings it brings). Types only: each team's folder
 * implements them (math/index.ts, data/index.ts, relay/index.ts) and domains/index.ts registers them.
 *
 * For: a new team: one folder whose index.ts exports a Team, registered in domains/index.ts (or at run
 * time with `registerTeam`). Not for: the loop (loop/) or the coach's machinery (coach/).
 *
 * Example (a team of one agent that echoes a digit):
 *   const ECHO: Team = { domain: 'echo', domainFor: () => ({ name: 'echo', trainPool: () => tasks, heldOut: (n) => tasks.slice(0, n),
 *     ruleCoach: () => new RuleCoach('rule:echo', (a) => ({ score: a.output.trim() === a.task?.answer ? 10 : 0 })), metricNames: [] }),
 *     presets: () => [{ name: 'echo-1', label: 'echo', workflow }] };
 */
import type { Coach } from '../coach/coach.ts';
import type { Trajectory, RolloutTask, TrajectoryOutcome } from '../loop/trajectory.ts';
import type { WorkflowSpec } from '../loop/workflow.ts';
import type { Workspace } from '../tools/workspace.ts';

export interface Domain {
  /** The workflow's `domain` (e.g. "math"). */
  name: string;
  /**
   * Training tasks: a pool of about `size` tasks of difficulty `level` (a leveled domain: 1..5, 0 = every
   * level mixed), seeded by the run's seed; a domain without levels returns its one fixed pool.
   */
  trainPool(seed: number, level: number, size: number): RolloutTask[];
  /** Whether tasks come by level (the curriculum then raises and lowers it with the team's accuracy). */
  leveled?: boolean;
  /** A fixed held-out set of `count` tasks (fewer when the domain has fewer), in its evaluation order. */
  heldOut(count: number): RolloutTask[];
  /** Judges a finished trajectory from its workspace (default: the final agent's boxed answer). */
  outcome?: (t: Trajectory, ws: Workspace) => TrajectoryOutcome;
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
}

/** A shipped workflow as the page's team menu offers it. */
export interface TeamChoice {
  name: string;
  label: string;
  /** A fresh copy: the caller may edit it. */
  workflow: WorkflowSpec;
}

/** A team's folder, as the registry sees it. */
export interface Team {
  /** The `domain` its workflows carry. */
  domain: string;
  domainFor(w: WorkflowSpec): Domain;
  /** Its workflows for the team menu, in order. */
  presets(): TeamChoice[];
  /** Loop settings the team brings with it (a config patch without the workflow); none: the defaults. */
  settings?(w: WorkflowSpec): Record<string, unknown>;
}
