/**
 * Credit by state groups (GiGPO, arXiv 2505.10978): steps that meet the same state are grouped across
 * the iteration's trajectories, and a step's advantage is its trajectory's episode advantage plus its
 * outcome normalised within its state group. In a chain of agents a step's state is the agent and the
 * input it received (on the relay: "agent 2 given 7 + 5"); states repeat among a prompt's samples
 * wherever the upstream replies agree, and across prompts as the batch grows. It needs no coach and no
 * extra rollout.
 *
 *   A_episode(t) = (R_t - mean R over t's prompt group) / std        (0 when the group is all alike)
 *   A_step(s)    = (R_t - mean R over s's state group) / std          (0 in a group of one)
 *   A(s)         = A_episode(t) + w * A_step(s)                        (w = 1)
 *
 * Worked example (one prompt, two samples; agent 1 sees "3 + 4" in both, agent 2 sees "7 + 5" in the
 * first and "3 + 5" in the second; outcomes 1 and 0):
 *   episode:  mean 0.5, std 0.5 -> A_episode = +1, -1
 *   agent 1:  one group {1, 0}   -> A_step = +1, -1      -> A = +2, -2
 *   agent 2:  two groups of one  -> A_step = 0, 0        -> A = +1, -1
 *   stateGroupCredit(...) -> [[2, 1], [-2, -1]]
 *
 * For: loop/rewards.ts (the `groups` reward mode). Not for: deciding what a state is (the caller's key)
 * or folding in the KL (advantages.ts).
 */

/** One trajectory as state-group credit sees it: its prompt group, its outcome, and the state key of each step. */
export interface GroupedTrajectory {
  prompt: string;
  outcome: number;
  /** One key per step (e.g. `${agentId}\u0000${input}`): steps with equal keys form a state group. */
  states: string[];
}

/** Sizes of the state groups the steps fell into: what grouping costs and gets. */
export interface GroupStats {
  steps: number;
  groups: number;
  /** Mean size of the group a step is in. */
  meanGroupSize: number;
  /** Share of steps in a group of at least two (the ones that get a step-level signal). */
  sharedShare: number;
}

function centred(values: number[]): number[] {
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  const std = Math.sqrt(values.reduce((a, v) => a + (v - mean) ** 2, 0) / values.length);
  return values.map((v) => (std > 1e-9 ? (v - mean) / std : 0));
}

/** Per trajectory, per step: the episode advantage plus `weight` times the step's within-state-group advantage. */
export function stateGroupCredit(trajs: GroupedTrajectory[], weight = 1): number[][] {
  const byPrompt = new Map<string, number[]>();
  trajs.forEach((t, i) => byPrompt.set(t.prompt, [...(byPrompt.get(t.prompt) ?? []), i]));
  const episode = new Array<number>(trajs.length).fill(0);
  for (const idx of byPrompt.values()) centred(idx.map((i) => trajs[i].outcome)).forEach((a, k) => (episode[idx[k]] = a));
  const byState = new Map<string, [number, number][]>();
  trajs.forEach((t, i) => t.states.forEach((s, j) => byState.set(s, [...(byState.get(s) ?? []), [i, j]])));
  const step = trajs.map((t) => t.states.map(() => 0));
  for (const members of byState.values()) centred(members.map(([i]) => trajs[i].outcome)).forEach((a, k) => (step[members[k][0]][members[k][1]] = a));
  return trajs.map((t, i) => t.states.map((_, j) => episode[i] + weight * step[i][j]));
}

/** How the steps grouped: counts and sizes (the batch a state group needs to form is part of the method's cost). */
export function groupStats(trajs: GroupedTrajectory[]): GroupStats {
  const sizes = new Map<string, number>();
  for (const t of trajs) for (const s of t.states) sizes.set(s, (sizes.get(s) ?? 0) + 1);
  const steps = trajs.reduce((n, t) => n + t.states.length, 0);
  let sizeSum = 0;
  let shared = 0;
  for (const n of sizes.values()) {
    sizeSum += n * n;
    if (n > 1) shared += n;
  }
  return { steps, groups: sizes.size, meanGroupSize: steps ? sizeSum / steps : 0, sharedShare: steps ? shared / steps : 0 };
}
