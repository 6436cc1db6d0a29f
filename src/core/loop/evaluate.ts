/**
 * What a held-out evaluation's result is made of: the greedy and sampled trajectories of the same
 * problems, in order, give the accuracies, the domain's mean quality metrics and each problem's
 * outcome. Every evaluation (the untrained team, a trained one, `mappa eval`, the page's running
 * chunks) is played by eval-queue.ts and summed up here.
 *
 * For: evalResultOf and EVAL_SEED. Not for: playing the passes or choosing when (eval-queue.ts, session.ts).
 * Example: evalResultOf(team, workflow, greedy, sampled)   // {greedy: 0.25, sampled: 0.2, tasks: 200, perTask: {...}}
 */
import { meanMetrics, type Team } from './team.ts';
import type { WorkflowSpec } from './workflow.ts';
import type { EvalResult } from './records.ts';
import type { Trajectory } from './trajectory.ts';

/** The evaluation's fixed sampling seed: every evaluation of a run draws the same way. */
export const EVAL_SEED = 1_000_003;

/**
 * Per agent (the workflow's order), its greedy steps right and judged, where the team judges steps.
 * Example: two relay trajectories of 2 agents, agent 1 right in both, agent 2 in one ->
 *          agentStepsOf(relayTeam, workflow, trajs) -> {ids: ['agent1', 'agent2'], right: [2, 1], judged: [2, 2]}
 */
export function agentStepsOf(team: Team, workflow: WorkflowSpec, trajs: Trajectory[]): EvalResult['agentSteps'] {
  const stepRight = team.stepRight;
  if (!stepRight) return undefined;
  const ids = workflow.agents.map((a) => a.id);
  const right = ids.map(() => 0);
  const judged = ids.map(() => 0);
  for (const t of trajs) {
    stepRight(t).forEach((ok, k) => {
      const i = ids.indexOf(t.actions[k].agentId);
      if (ok === undefined || i < 0) return;
      judged[i]++;
      if (ok) right[i]++;
    });
  }
  return { ids, right, judged };
}

/**
 * An evaluation's result from its greedy and sampled trajectories (the same tasks, in order): the
 * accuracies, the domain's mean quality metrics of each pass, each task's result, and each agent's
 * greedy step counts where the domain judges steps. `of`: the tasks a running evaluation will have in
 * all (the page's running estimate).
 */
export function evalResultOf(team: Team, workflow: WorkflowSpec, greedy: Trajectory[], sampled: Trajectory[], of?: number): EvalResult {
  const names = team.metricNames;
  const agentSteps = agentStepsOf(team, workflow, greedy);
  const accuracy = (trajs: Trajectory[]) => trajs.filter((t) => t.correct).length / Math.max(trajs.length, 1);
  const metrics = meanMetrics(greedy, names);
  const sampledMetrics = meanMetrics(sampled, names);
  return {
    greedy: accuracy(greedy), sampled: accuracy(sampled), tasks: greedy.length,
    ...(of === undefined ? {} : { of }),
    ...(Object.keys(metrics).length ? { metrics } : {}),
    ...(Object.keys(sampledMetrics).length ? { sampledMetrics } : {}),
    perTask: { ids: greedy.map((t) => t.task.id), greedy: greedy.map((t) => t.correct), sampled: sampled.map((t) => t.correct) },
    ...(agentSteps ? { agentSteps } : {}),
  };
}
