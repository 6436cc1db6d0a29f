/**
 * Credit assignment for teaching: the rewards the same trajectory's actions get under process,
 * outcome and mixed supervision, and the batch-normalised advantage each would train on
 * (REINFORCE++ whitening over the whole batch, before the KL term), so the page can show which
 * agent gets blamed or credited under each.
 *
 * For: the inspector and the credit view. Not for: training (core/rl/advantages.ts).
 * Example: wrong final answer, scores solver 9 / executor 8 / verifier 2:
 *   process  -> 0.9, 0.8, 0.2     (the verifier is blamed)
 *   outcome  -> 0, 0, 0           (everyone is blamed alike)
 */
import { agentReward, type RewardMode } from '../core/mappa/rewards.ts';
import type { Trajectory } from '../core/mappa/rollout.ts';
import type { ActionView, TrajectoryView } from '../worker/protocol.ts';

export const MODES: RewardMode[] = ['process', 'outcome', 'mixed'];

/** Reward of one action under `mode` (coach score 5 when it has none, as the trainer does). */
export function rewardUnder(mode: RewardMode, processWeight: number, t: TrajectoryView, a: ActionView): number {
  return agentReward({ mode, processWeight, shaping: false, shapingWeight: 0 }, t as unknown as Trajectory, a.coach?.score ?? 5);
}

/** Per trajectory, per action: (reward - batch mean) / batch std over every action of the batch. */
export function batchAdvantages(trajs: TrajectoryView[], reward: (t: TrajectoryView, a: ActionView) => number): number[][] {
  const r = trajs.map((t) => t.actions.map((a) => reward(t, a)));
  const flat = r.flat();
  const mean = flat.reduce((s, x) => s + x, 0) / Math.max(flat.length, 1);
  const std = Math.sqrt(flat.reduce((s, x) => s + (x - mean) ** 2, 0) / Math.max(flat.length, 1));
  return r.map((row) => row.map((x) => (x - mean) / (std + 1e-8)));
}

/** Fenced code blocks of an agent's text (what the sandbox ran). */
export function codeBlocks(text: string): { lang: string; code: string }[] {
  return [...text.matchAll(/```(\w*)\n([\s\S]*?)```/g)].map((m) => ({ lang: m[1] || 'code', code: m[2].replace(/\n$/, '') }));
}

/** Colour of a 0..10 score: red (0) through amber to green (10). */
export function scoreColour(score: number | undefined): string {
  if (score === undefined) return '#e5e7eb';
  const hue = Math.round((Math.max(0, Math.min(10, score)) / 10) * 120);
  return `hsl(${hue} 70% 88%)`;
}
