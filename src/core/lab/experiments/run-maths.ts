/**
 * What every experiment computes from its stored runs (pure, tested on hand-made results): the pair of
 * modes they compare, a stored run as the runners keep it, its per-agent step counts, the paired gap of
 * two runs' last evaluations, and the time left at the pace so far. Each experiment's own maths
 * (<name>/<name>-maths.ts) builds its view from these.
 *
 * For: the experiments' maths and runners. Not for: training or reading the store (stored-runs.ts).
 * Example: pairedGap(processEval, outcomeEval) -> { p: 0.23, low: 0.142, high: 0.313, n: 200 }  (paired, the same problems)
 *          remainingSeconds(60, 10, 30) -> 180
 */
import type { EvalResult } from '../../loop/records.ts';
import { pairedDifference, type Interval } from '../../stats/intervals.ts';

/** Process vs outcome: the pair of reward modes the lesson and the scale experiment train, the credit comparison's first two. */
export type PairMode = 'process' | 'outcome';
export const PAIR_MODES: readonly PairMode[] = ['process', 'outcome'];

/** Steps right / steps judged, per agent (index 0 = agent 1), over held-out greedy trajectories. */
export interface AgentSteps {
  right: number[];
  judged: number[];
}

/**
 * One stored run of the lab's guided experiments (the lesson, "Scale the team"): what it holds so far, its
 * finished evaluations, as the runner and the read-back after a reload keep it.
 */
export interface StoredRunData {
  n: number;
  mode: PairMode;
  runId: string;
  iteration: number;
  done: boolean;
  evals: { iteration: number; result: EvalResult }[];
  /** Seconds spent training and evaluating this run, summed over every time it ran (stored with it; a read-back adds none). */
  seconds?: number;
  /** When its last evaluation finished (ms since 1970; stored with it). */
  finishedAt?: number;
}

/** An evaluation's per-agent greedy step counts (the relay domain's, loop/evaluate.ts agentStepsOf), as the lesson keeps them. */
export function agentStepsOfEval(result: EvalResult): AgentSteps | undefined {
  return result.agentSteps ? { right: result.agentSteps.right, judged: result.agentSteps.judged } : undefined;
}

/** The paired process - outcome difference of the two runs' last evaluations (null unless both kept per-problem results on the same problems). */
export function pairedGap(process: EvalResult | null, outcome: EvalResult | null): (Interval & { n: number }) | null {
  const a = process?.perTask;
  const b = outcome?.perTask;
  if (!a || !b || a.ids.length !== b.ids.length || a.ids.some((id, i) => id !== b.ids[i])) return null;
  const d = pairedDifference(a.greedy, b.greedy);
  return { p: d.p, low: d.low, high: d.high, n: d.n };
}

/** Seconds left: the pace so far (seconds per unit of work done here) times the units still to do; null before any. */
export function remainingSeconds(elapsed: number, unitsDone: number, unitsLeft: number): number | null {
  return unitsDone > 0 && elapsed > 0 ? (elapsed / unitsDone) * unitsLeft : null;
}
