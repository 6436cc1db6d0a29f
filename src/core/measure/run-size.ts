/**
 * How big a configured run is, before it starts: rollouts per iteration, token budget, and a rough
 * time per iteration at the pace the default run keeps on a 2-core CPU. A run far beyond that
 * (100,000 prompts an iteration) is something to ask about before starting, not to find out after
 * an hour; the CLI wants --yes for it, the page a confirmation.
 *
 * For: `runSize(config)` -> {rollouts, seconds, large, message}. Not for: memory (run-plan.ts).
 *
 * The pace: the default math run (24 rollouts an iteration, budgets 96 + 2 x 96 + 48 = 336 tokens a
 * rollout) took about 28 s an iteration of rollout and update on the 2-core machine of 2026-12-02,
 * that is about 3.5 ms per budgeted token. A GPU is faster; the estimate is an order of magnitude.
 *
 * Example: runSize(resolveTrainConfig({promptsPerIteration: 100000}))
 *   -> {rolloutsPerIteration: 200000, secondsPerIteration: ~235000, large: true,
 *       message: 'this run makes 200,000 rollouts an iteration (the default: 24), about 65 hours an iteration ...'}
 */
import type { TrainConfig } from '../loop/config.ts';

/** Seconds per budgeted action token, rollout and update together (the default run on 2 CPU cores). */
const SECONDS_PER_BUDGET_TOKEN = 28 / (24 * 336);
/** An iteration estimated longer than this is large: ask before starting. */
export const LARGE_ITERATION_SECONDS = 15 * 60;

export interface RunSize {
  rolloutsPerIteration: number;
  /** Token budget of one rollout: every agent's turns x maxTokens. */
  budgetPerRollout: number;
  secondsPerIteration: number;
  large: boolean;
  /** Plain words for a large run, '' otherwise. */
  message: string;
}

/** "65 hours", "12 minutes", "40 s". */
export function roughDuration(seconds: number): string {
  if (seconds >= 2 * 86400) return `${Math.round(seconds / 86400)} days`;
  if (seconds >= 2 * 3600) return `${Math.round(seconds / 3600)} hours`;
  if (seconds >= 120) return `${Math.round(seconds / 60)} minutes`;
  return `${Math.round(seconds)} s`;
}

export function runSize(c: TrainConfig): RunSize {
  const rolloutsPerIteration = c.promptsPerIteration * c.samplesPerPrompt;
  const budgetPerRollout = c.workflow.agents.reduce((n, a) => n + a.turns * a.maxTokens, 0);
  const secondsPerIteration = rolloutsPerIteration * budgetPerRollout * SECONDS_PER_BUDGET_TOKEN * c.update.epochs;
  const large = secondsPerIteration > LARGE_ITERATION_SECONDS;
  const message = large
    ? `this run makes ${rolloutsPerIteration.toLocaleString('en-US')} rollouts an iteration (the default: 24), `
      + `about ${roughDuration(secondsPerIteration)} an iteration and ${roughDuration(secondsPerIteration * c.iterations)} in all on a 2-core CPU; `
      + 'lower the prompts per iteration or the samples per prompt, or confirm that it is meant'
    : '';
  return { rolloutsPerIteration, budgetPerRollout, secondsPerIteration, large, message };
}
