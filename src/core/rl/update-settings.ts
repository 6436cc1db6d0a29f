/**
 * The policy update's settings and their defaults (MAPPA section 4: KL coefficient, PPO clip,
 * whitening, micro- and mini-batches, epochs, gradient clipping, truncation masking).
 *
 * For: a run's config (loop/config.ts) and the update (update.ts). Kept apart from update.ts so that
 * reading a config never loads the update.
 * Example: { ...DEFAULT_UPDATE, microBatchSize: 2 }  // the defaults with two rows a micro-batch
 */
import type { Whitening } from './advantages.ts';

export interface UpdateSettings {
  klCoef: number;
  clipEps: number;
  whitening: Whitening;
  microBatchSize: number;
  /** Optimizer steps per agent per update (the agent's samples split into this many mini-batches). */
  miniBatches: number;
  epochs: number;
  maxGradNorm: number;
  /**
   * Mask actions that hit their token budget out of the loss (MAPPA, arXiv 2601.23228: "truncated completions are
   * masked out"). Turn off where the budget cuts actions that still did their job: a data-team SQL
   * block cut right after its last statement runs, is scored on what it did, and masking it would
   * leave only the short replies of the successful trajectories to learn from.
   */
  maskTruncated: boolean;
  /**
   * One pass for the whole team: rows of every agent in one micro-batch, each row through its own
   * agent's adapter (batched-update.ts), instead of one pass per agent. The same update to float
   * tolerance (not to the bit: rows are grouped and padded differently), at the cost of the samples
   * rather than the number of agents. Off by default; where the compute offers no team passes,
   * the update runs per agent.
   */
  batched: boolean;
  /**
   * Rows of one agent run their common prefix (system prompt, chat header) once in every pass of the
   * update, each row then its own suffix on that prefix's keys and values (engine/model/shared-prefix.ts).
   * The same log-probs and gradients to float tolerance, a third of the tokens on the relay
   * (docs/performance.md, "Speed at scale"). Off by default.
   */
  sharedPrefix: boolean;
  /**
   * Take the sampling policy's log-probs from the rollout instead of a pass of the update's own: the same
   * values to float tolerance where the rollouts sample at temperature 1 (the config refuses it at any
   * other), one forward pass of the update's four saved (rl/update-steps.ts). Off by default.
   */
  reuseRolloutLogprobs: boolean;
  /**
   * Remember the reference model's log-probs of every (prompt, action) it has scored, for the run (it is frozen;
   * update-steps.ts `RefMemory`): a relay agent meets the same input cells every iteration. Equal to float tolerance,
   * not to the bit: a run resumed after a kill starts with an empty memory. Off by default.
   */
  rememberReference: boolean;
}

export const DEFAULT_UPDATE: UpdateSettings = {
  klCoef: 0.01, clipEps: 0.2, whitening: 'batch', microBatchSize: 4, miniBatches: 1, epochs: 1, maxGradNorm: 1, maskTruncated: true, batched: false, sharedPrefix: false,
  reuseRolloutLogprobs: false, rememberReference: false,
};

