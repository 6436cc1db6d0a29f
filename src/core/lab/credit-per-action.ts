/**
 * Credit assignment for teaching: the credit the same trajectory's actions get under each credit
 * method (process, outcome, state groups, and counterfactual replays when the batch is a tree), and the
 * batch-normalised advantage each would train on (REINFORCE++ whitening over the batch's distinct
 * actions, before the KL term), so the page can show which agent gets blamed or credited under each,
 * and which trajectory shows the difference best. The trainer's own functions compute it (rewards.ts
 * agentReward and iterationCredit, which call rl/state-groups.ts and rl/counterfactual.ts;
 * rl/advantages.ts), so the view cannot drift from what training does.
 *
 * For: the inspector and the credit view (src/ui). Not for: training (core/rl/advantages.ts).
 * Example: wrong final answer, scores solver 9 / executor 8 / verifier 2:
 *   process  -> 0.9, 0.8, 0.2     (the verifier is blamed)
 *   outcome  -> 0, 0, 0           (everyone is blamed alike)
 * State groups (rl/state-groups.ts's example): one prompt, two samples, agent 1 sees "3 + 4" in both,
 *   agent 2 "7 + 5" and "3 + 5"; outcomes 1 and 0 -> groups credit [2, 1] and [-2, -1].
 * Counterfactual (rl/counterfactual.ts's example): fan-outs [2, 2], leaves [0,0] -> 1, others 0 ->
 *   credit [0.5, 1], [0.5, -1], [-0.5, 0], [-0.5, 0].
 */
import { NEUTRAL_SCORE } from '../coach/coach-format.ts';
import { agentReward, iterationCredit, stateKey, type RewardMode } from '../loop/rewards.ts';
import type { Trajectory } from '../loop/trajectory.ts';
import type { WorkflowSpec } from '../loop/workflow.ts';
import { computeAdvantages } from '../rl/advantages.ts';
import type { ActionView, TrajectoryView } from './views.ts';

/** Reward of one action under `mode` (coach score 5 when it has none, as the trainer does); process, outcome and mixed only. */
export function rewardUnder(mode: RewardMode, processWeight: number, t: TrajectoryView, a: ActionView): number {
  return agentReward({ mode, processWeight, shaping: false, shapingWeight: 0, fanOut: [] }, t, a.coach?.score ?? NEUTRAL_SCORE);
}

/** Whether a batch is a tree of replays (a counterfactual run's): every trajectory carries its branch. */
export function isTree(trajs: readonly TrajectoryView[]): boolean {
  return trajs.length > 0 && trajs.every((t) => Array.isArray(t.branch) && t.branch.length > 0);
}

/** The chain's agents in order, as the batch shows them (each agent's first appearance). */
function agentOrder(trajs: readonly TrajectoryView[]): string[] {
  const ids: string[] = [];
  for (const t of trajs) for (const a of t.actions) if (!ids.includes(a.agentId)) ids.push(a.agentId);
  return ids;
}

/**
 * Per trajectory, per action: a key that names the action itself. In a tree the leaves share their
 * ancestors' actions (the loop's same objects, copied apart in the views): the node's prompt, sample and
 * branch down to its agent name it. Elsewhere every action is its own.
 */
export function actionKeys(trajs: readonly TrajectoryView[]): string[][] {
  if (!isTree(trajs)) return trajs.map((_, i) => trajs[i].actions.map((__, j) => `${i}/${j}`));
  const depth = new Map(agentOrder(trajs).map((id, d) => [id, d]));
  return trajs.map((t) => t.actions.map((a) => `${t.task.id}#${t.sample}/${t.branch!.slice(0, depth.get(a.agentId)! + 1).join('.')}/${a.agentId}/${a.turn}`));
}

/**
 * Per trajectory, per action: the advantage each action would train on under `reward`, from the
 * trainer's own REINFORCE++ (core/rl/advantages.ts, batch whitening) with each action taken as one
 * token and no KL term: (reward - batch mean) / batch std over the batch's distinct actions (a tree's
 * shared ancestors count once, as the update trains them once).
 */
export function batchAdvantages(trajs: TrajectoryView[], reward: (t: TrajectoryView, a: ActionView, i: number, j: number) => number): number[][] {
  const keys = actionKeys(trajs);
  const index = new Map<string, number>();
  const samples: { agent: string; reward: number; oldLogprobs: number[]; refLogprobs: number[] }[] = [];
  trajs.forEach((t, i) => t.actions.forEach((a, j) => {
    if (index.has(keys[i][j])) return;
    index.set(keys[i][j], samples.length);
    samples.push({ agent: a.agentId, reward: reward(t, a, i, j), oldLogprobs: [0], refLogprobs: [0] });
  }));
  const { advantages } = computeAdvantages(samples, { klCoef: 0, whitening: 'batch' });
  return trajs.map((t, i) => t.actions.map((_, j) => advantages[index.get(keys[i][j])!][0]));
}

/**
 * The batch as the loop's credit functions read it (loop/rewards.ts): the chain's agents in order, and each
 * trajectory's task, sample, branch, outcome and steps.
 */
function asLoopBatch(trajs: readonly TrajectoryView[]): { w: WorkflowSpec; batch: Trajectory[] } {
  const w = { name: 'view', domain: '', agents: agentOrder(trajs).map((id) => ({ id })) } as unknown as WorkflowSpec;
  const batch = trajs.map((t) => ({
    task: t.task, sample: t.sample, ...(t.branch ? { branch: t.branch } : {}), correct: t.correct, finalAnswer: t.finalAnswer,
    actions: t.actions.map((a) => ({ agentId: a.agentId, role: a.role, turn: a.turn, messages: a.messages, text: a.text })),
  })) as unknown as Trajectory[];
  return { w, batch };
}

/**
 * The credit of a method that reads the whole batch (groups, counterfactual), per trajectory and action:
 * the loop's own iterationCredit on these trajectories, what training would give them.
 */
export function wholeBatchCredit(trajs: readonly TrajectoryView[], mode: 'groups' | 'counterfactual'): number[][] {
  const { w, batch } = asLoopBatch(trajs);
  const r = iterationCredit(w, batch, mode);
  return batch.map((t) => t.actions.map((a) => r?.credit.get(a) ?? 0));
}

/** Per trajectory, per action: how many steps of the batch met the same state (the same agent given the same input), as state groups count them. */
export function stateGroupSizes(trajs: readonly TrajectoryView[]): number[][] {
  const { batch } = asLoopBatch(trajs);
  const keys = batch.map((t) => t.actions.map((a) => stateKey(a)));
  const sizes = new Map<string, number>();
  for (const k of keys.flat()) sizes.set(k, (sizes.get(k) ?? 0) + 1);
  return keys.map((ks) => ks.map((k) => sizes.get(k)!));
}

/** One column of the credit view: a credit method, and one trajectory's rewards (the credit the update reads) and advantages under it. */
export interface CreditColumn {
  mode: RewardMode;
  rewards: number[];
  advantages: number[];
}

/** The credit view of one trajectory: a column per method, whether the batch is a tree (else no counterfactual column), and each step's state-group size. */
export interface CreditTable {
  columns: CreditColumn[];
  tree: boolean;
  groupSizes: number[];
}

/**
 * The credit view of trajectory `index` (the page draws it as is): under process, outcome, state groups
 * and, when the batch is a tree of replays, counterfactual credit, each of its actions' reward and
 * batch-normalised advantage (batchAdvantages over the whole batch).
 * Example: wrong answer, scores 9 / 8 / 2 -> process rewards [0.9, 0.8, 0.2], outcome [0, 0, 0].
 */
export function creditTable(trajs: TrajectoryView[], index: number, processWeight: number): CreditTable {
  const t = trajs[index];
  const tree = isTree(trajs);
  const columns: CreditColumn[] = (['process', 'outcome'] as const).map((mode) => ({
    mode,
    rewards: t.actions.map((a) => rewardUnder(mode, processWeight, t, a)),
    advantages: batchAdvantages(trajs, (tt, a) => rewardUnder(mode, processWeight, tt, a))[index],
  }));
  for (const mode of tree ? (['groups', 'counterfactual'] as const) : (['groups'] as const)) {
    const credit = wholeBatchCredit(trajs, mode);
    columns.push({ mode, rewards: credit[index], advantages: batchAdvantages(trajs, (_, __, i, j) => credit[i][j])[index] });
  }
  return { columns, tree, groupSizes: stateGroupSizes(trajs)[index] };
}

/**
 * For actions the update did not train on (a frozen agent, a filtered trajectory), the advantage
 * they would have had: their reward (as recorded, else under `mode`) normalised over the batch. The
 * inspector shows the recorded `advantage` where there is one and this estimate, marked as such, elsewhere.
 */
export function estimatedAdvantages(trajs: TrajectoryView[], mode: RewardMode, processWeight: number): number[][] {
  return batchAdvantages(trajs, (t, a) => a.reward ?? rewardUnder(mode, processWeight, t, a));
}

/** One trajectory's disagreement between process and outcome credit. */
export interface CreditGap {
  /** Index of the trajectory in the batch. */
  index: number;
  /** Index of its action whose advantage differs most between the two modes. */
  action: number;
  /** That action's advantage under process and under outcome supervision (batch-normalised). */
  process: number;
  outcome: number;
  /** |process - outcome| of that action: the trajectory's gap. */
  gap: number;
}

/**
 * Per trajectory, the action whose batch-normalised advantage differs most between process and
 * outcome supervision (the trajectory where the agents would be credited most differently is the
 * one with the largest `gap`). Pure: the rewards come from the coach scores on the views.
 * Example: batch [wrong: 9/8/2, right: 8/8/9] -> trajectory 0's solver (+ under process, - under outcome).
 */
export function creditGaps(trajs: TrajectoryView[], processWeight: number): CreditGap[] {
  const proc = batchAdvantages(trajs, (t, a) => rewardUnder('process', processWeight, t, a));
  const out = batchAdvantages(trajs, (t, a) => rewardUnder('outcome', processWeight, t, a));
  return trajs.map((t, index) => {
    let best: CreditGap = { index, action: 0, process: proc[index][0] ?? 0, outcome: out[index][0] ?? 0, gap: -1 };
    t.actions.forEach((_, i) => {
      const gap = Math.abs(proc[index][i] - out[index][i]);
      if (gap > best.gap + 1e-12) best = { index, action: i, process: proc[index][i], outcome: out[index][i], gap };
    });
    return { ...best, gap: Math.max(best.gap, 0) };
  });
}

/**
 * The agents the coach blames in a failed trajectory: its actions scored below the neutral 5 (none
 * when the team was right). Example: wrong, scores 9 / 8 / 2 -> ['verifier'].
 */
export function culprits(t: TrajectoryView): string[] {
  if (t.correct) return [];
  return [...new Set(t.actions.filter((a) => (a.coach?.score ?? NEUTRAL_SCORE) < NEUTRAL_SCORE).map((a) => a.role))];
}

/**
 * The trajectory that shows credit assignment best: a failure with a single culprit (outcome reward
 * blames everyone, process reward the one agent), the one whose process and outcome credit differ
 * most; failing that any failure, failing that any trajectory (first on ties); null for an empty batch.
 */
export function mostDisputed(trajs: TrajectoryView[], processWeight: number): CreditGap | null {
  const gaps = creditGaps(trajs, processWeight);
  const best = (pool: CreditGap[]) => pool.reduce<CreditGap | null>((b, g) => (!b || g.gap > b.gap + 1e-12 ? g : b), null);
  return best(gaps.filter((g) => culprits(trajs[g.index]).length === 1))
    ?? best(gaps.filter((g) => !trajs[g.index].correct))
    ?? best(gaps);
}

