/**
 * How long an iteration takes on this machine, measured, never written in: each team's pace comes from
 * the iterations this browser has trained (the saved runs' records, the open run's as they arrive),
 * and every time the page states is computed from it. Where a team has not trained here yet, the page
 * says so instead of quoting another machine's figure.
 *
 * An iteration's time is its rollouts, coaching, update and checkpoint (IterationMetrics.seconds); the
 * held-out evaluations measured alongside are apart. A pace is the median over the iterations (a first
 * iteration that loaded models, or one slowed by another tab, moves it little).
 *
 * For: the page (the real tasks' line, the size line under Start, the confirmation of a large run).
 * Not for: the lesson's time left (lesson.ts measures its own pace as it trains).
 *
 * Example: const paces = teamPaces(savedRuns);      // { 'math-chain': { secondsPerIteration: 12.3, rolloutsPerIteration: 24, iterations: 7, measuredAt } }
 *          paceWords(paces['math-chain'], 'math')   // -> 'math: 12 s an iteration here (median of 7)'
 *          iterationEstimate(paces['math-chain'], 200_000)   // -> 102,500 s: the measured pace, scaled by the rollouts
 */
import { iterationSeconds, type TimedIteration } from '../core/loop/records.ts';
import { fanOutOf, type RewardSettings } from '../core/loop/rewards.ts';
import { treeCost } from '../core/rl/counterfactual.ts';
import { LARGE_ITERATION_SECONDS, roughDuration, runSize } from '../core/measure/run-size.ts';
import type { TrainConfig } from '../core/loop/config.ts';

export interface Pace {
  /** Median seconds of an iteration (rollouts, coaching, update, checkpoint). */
  secondsPerIteration: number;
  /** Median rollouts (trajectories) of those iterations. */
  rolloutsPerIteration: number;
  /** Iterations measured. */
  iterations: number;
  /** When the newest of them was recorded (ms since 1970), where known. */
  measuredAt?: number;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** Each team's pace (by workflow name) over the iterations of its runs; a team with no timed iteration has none. */
export function teamPaces(runs: readonly { team: { name: string } | null; updatedAt?: number; metrics: readonly TimedIteration[] }[]): Record<string, Pace> {
  const by = new Map<string, { seconds: number[]; rollouts: number[]; at?: number }>();
  for (const r of runs) {
    if (!r.team) continue;
    const timed = r.metrics.flatMap((m) => {
      const t = iterationSeconds(m);
      return t === null ? [] : [{ t, rollouts: m.trajectories ?? 0 }];
    });
    if (!timed.length) continue;
    const e = by.get(r.team.name) ?? { seconds: [], rollouts: [] };
    e.seconds.push(...timed.map((x) => x.t));
    e.rollouts.push(...timed.map((x) => x.rollouts).filter((x) => x > 0));
    if (r.updatedAt !== undefined) e.at = Math.max(e.at ?? 0, r.updatedAt);
    by.set(r.team.name, e);
  }
  const out: Record<string, Pace> = {};
  for (const [name, e] of by) {
    out[name] = {
      secondsPerIteration: median(e.seconds), rolloutsPerIteration: e.rollouts.length ? median(e.rollouts) : 0, iterations: e.seconds.length,
      ...(e.at === undefined ? {} : { measuredAt: e.at }),
    };
  }
  return out;
}

/**
 * A training time or time left, to the second: "45 s", "1 min 30 s", "12 min 05 s" (a run of 90.4 s was
 * shown as "2 min" when minutes were rounded).
 */
export function minutes(seconds: number): string {
  const t = Math.max(1, Math.round(seconds));
  return t < 90 ? `${t} s` : `${Math.floor(t / 60)} min ${String(t % 60).padStart(2, '0')} s`;
}

/** "12 s", "3.4 s", "2 minutes": a measured time, as the page writes it. */
export function measuredDuration(seconds: number): string {
  if (seconds < 10) return `${seconds.toFixed(1)} s`;
  return roughDuration(seconds);
}

/** "math: 12 s an iteration here (median of 7)", or "math: not timed on this machine yet". */
export function paceWords(pace: Pace | undefined, team: string): string {
  if (!pace) return `${team}: not timed on this machine yet`;
  return `${team}: ${measuredDuration(pace.secondsPerIteration)} an iteration here (median of ${pace.iterations})`;
}

/** Seconds an iteration of `rollouts` rollouts should take at this pace (the measured time, scaled by the rollouts). */
export function iterationEstimate(pace: Pace, rollouts: number): number {
  return pace.rolloutsPerIteration > 0 ? (pace.secondsPerIteration * rollouts) / pace.rolloutsPerIteration : pace.secondsPerIteration;
}

/**
 * The size of a run before it starts, in words, with its time at this machine's measured pace:
 * "24 rollouts an iteration (8 prompts × 3 samples); about 12 s an iteration here, 6 minutes for 30, training only (...)"
 * or, unmeasured, "...; not timed on this machine yet (Step times one iteration)". `pool`: the training
 * prompts there are to pick from (an iteration asking for more picks each once: the math team's pool
 * holds 400 a level).
 */
export function sizeWords(
  c: { promptsPerIteration: number; samplesPerPrompt: number; iterations: number; rewards?: RewardSettings; workflow?: { agents: readonly unknown[] } },
  pace: Pace | undefined, pool = Infinity,
): string {
  const prompts = Math.min(c.promptsPerIteration, pool);
  // Under counterfactual credit each prompt is played as a tree of replays: its leaves are the rollouts.
  const fan = c.rewards && c.workflow ? fanOutOf(c.rewards, c.workflow.agents.length) : undefined;
  const tree = fan ? treeCost(fan) : null;
  const rollouts = prompts * c.samplesPerPrompt * (tree?.leaves ?? 1);
  const n = (x: number) => x.toLocaleString('en-US');
  const asked = prompts < c.promptsPerIteration ? `, of the ${n(c.promptsPerIteration)} asked: the training pool holds ${n(prompts)}` : '';
  const replays = tree ? `, each a tree of replays: ${n(tree.leaves)} leaves, ${n(tree.generations)} agent generations` : '';
  const head = `${n(rollouts)} rollouts an iteration (${n(prompts)} prompts × ${c.samplesPerPrompt} samples${replays}${asked})`;
  if (!pace) return `${head}; not timed on this machine yet (Step times one iteration)`;
  const one = iterationEstimate(pace, rollouts);
  // The pace is of training iterations alone: the held-out evaluations (untrained team, then every evalEvery) are not in it.
  return `${head}; about ${measuredDuration(one)} an iteration here, ${roughDuration(one * c.iterations)} for ${c.iterations}, `
    + 'training only (the held-out evaluations come on top)';
}

/**
 * Whether a run is large enough to ask about before it starts, and the question's words: at this
 * machine's measured pace for the team where there is one, else at the pace the project measured on a
 * 2-core CPU (run-size.ts, said as such). `pool` as for sizeWords.
 */
export function largeRun(c: TrainConfig, pace: Pace | undefined, pool = Infinity): { large: boolean; message: string } {
  const prompts = Math.min(c.promptsPerIteration, pool);
  if (!pace) {
    const size = runSize({ ...c, promptsPerIteration: prompts });
    const said = 'at the pace the project measured on a 2-core CPU (this team is not timed on this machine yet)';
    return { large: size.large, message: size.message.replace('on a 2-core CPU', said) };
  }
  const rollouts = prompts * c.samplesPerPrompt;
  const one = iterationEstimate(pace, rollouts);
  const large = one > LARGE_ITERATION_SECONDS;
  const message = large
    ? `this run makes ${rollouts.toLocaleString('en-US')} rollouts an iteration, about ${roughDuration(one)} an iteration `
      + `and ${roughDuration(one * c.iterations)} in all at this machine's measured pace `
      + `(${measuredDuration(pace.secondsPerIteration)} for ${pace.rolloutsPerIteration} rollouts of this team); `
      + 'lower the prompts per iteration or the samples per prompt, or confirm that it is meant'
    : '';
  return { large, message };
}
