/**
 * Credit assignment for teaching: the rewards the same trajectory's actions get under process,
 * outcome and mixed supervision, and the batch-normalised advantage each would train on
 * (REINFORCE++ whitening over the whole batch, before the KL term), so the page can show which
 * agent gets blamed or credited under each, and which trajectory shows the difference best.
 * The trainer's own functions compute it (rewards.ts agentReward, rl/advantages.ts), so the view
 * cannot drift from what training does.
 *
 * For: the inspector and the credit view (src/ui). Not for: training (core/rl/advantages.ts).
 * Example: wrong final answer, scores solver 9 / executor 8 / verifier 2:
 *   process  -> 0.9, 0.8, 0.2     (the verifier is blamed)
 *   outcome  -> 0, 0, 0           (everyone is blamed alike)
 */
import { NEUTRAL_SCORE } from '../coach/coach-format.ts';
import { agentReward, type RewardMode } from '../loop/rewards.ts';
import { computeAdvantages } from '../rl/advantages.ts';
import type { ActionView, TrajectoryView } from './protocol.ts';

export const MODES: RewardMode[] = ['process', 'outcome', 'mixed'];

/** Reward of one action under `mode` (coach score 5 when it has none, as the trainer does). */
export function rewardUnder(mode: RewardMode, processWeight: number, t: TrajectoryView, a: ActionView): number {
  return agentReward({ mode, processWeight, shaping: false, shapingWeight: 0, fanOut: [] }, t, a.coach?.score ?? NEUTRAL_SCORE);
}

/**
 * Per trajectory, per action: the advantage each action would train on under `reward`, from the
 * trainer's own REINFORCE++ (core/rl/advantages.ts, batch whitening) with each action taken as one
 * token and no KL term: (reward - batch mean) / batch std over every action of the batch.
 */
export function batchAdvantages(trajs: TrajectoryView[], reward: (t: TrajectoryView, a: ActionView) => number): number[][] {
  const samples = trajs.flatMap((t) => t.actions.map((a) => ({ agent: a.agentId, reward: reward(t, a), oldLogprobs: [0], refLogprobs: [0] })));
  const { advantages } = computeAdvantages(samples, { klCoef: 0, whitening: 'batch' });
  let k = 0;
  return trajs.map((t) => t.actions.map(() => advantages[k++][0]));
}

/** One column of the credit view: a reward mode, and one trajectory's rewards and advantages under it. */
export interface CreditColumn {
  mode: RewardMode;
  rewards: number[];
  advantages: number[];
}

/**
 * The credit view of trajectory `index` (the page draws it as is): under each reward mode, each of
 * its actions' reward and batch-normalised advantage (batchAdvantages over the whole batch).
 * Example: wrong answer, scores 9 / 8 / 2 -> process rewards [0.9, 0.8, 0.2], outcome [0, 0, 0].
 */
export function creditTable(trajs: TrajectoryView[], index: number, processWeight: number): CreditColumn[] {
  const t = trajs[index];
  return MODES.map((mode) => ({
    mode,
    rewards: t.actions.map((a) => rewardUnder(mode, processWeight, t, a)),
    advantages: batchAdvantages(trajs, (tt, a) => rewardUnder(mode, processWeight, tt, a))[index],
  }));
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

