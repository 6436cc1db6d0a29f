/**
 * A run's verdict in words, as `mappa train` prints it at its end: the held-out accuracy of the untrained
 * team and of the team after the last finished evaluation, greedy and sampled, each change paired problem
 * by problem with its interval (core/measure/held-out-change.ts, the CLI's own figures). When the trained team
 * is worse than the untrained one beyond the interval, it says so, and names the likely cause where one is
 * known: a coach that ranks actions below about 79 % as the rater does (coach-quality.ts).
 *
 * For: the page (the verdict above the charts). Not for: the numbers' maths (held-out-change.ts).
 *
 * Example: runVerdict(evals, config, quality)
 *   -> { head: 'After iteration 15 (the end of the run), on 100 held-out problems:',
 *        lines: ['held-out greedy on 100 problems: untrained 55.0 % [...] -> trained 31.0 % [...], -24.0 pts [-35.5, -11.4] paired — a loss ...', ...],
 *        below: true, warning: 'The trained team is worse than the untrained one ... Likely cause: the coach ...' }
 */
import { changeWords, heldOutChanges, type HeldOutChange } from '../core/measure/held-out-change.ts';
import type { EvalResult } from '../core/loop/records.ts';
import { formatPoints } from '../core/stats/intervals.ts';
import { readsCoach, type RewardMode } from '../core/loop/rewards.ts';
import { HELPFUL_RANKING, type CoachQuality } from '../core/lab/coach-quality.ts';
import { METHOD_WORDS } from '../core/lab/experiments/credit-methods/credit-methods-maths.ts';

export interface RunVerdict {
  /** The iteration of the trained team's evaluation. */
  iteration: number;
  /** That evaluation is the run's last (the run is over). */
  ended: boolean;
  head: string;
  changes: HeldOutChange[];
  /** One sentence per pass: the change and whether it is a gain (changeWords). */
  lines: string[];
  /** The trained team is worse than the untrained one beyond the paired interval, greedy or sampled. */
  below: boolean;
  /** Said when `below`: which pass, by how much, and the likely cause. */
  warning: string | null;
}

const pct = (x: number) => `${(x * 100).toFixed(1)} %`;

/**
 * The verdict on a run from its evaluations (the untrained team's at iteration 0 and the latest finished
 * one after it); null until both exist. `reward`: the run's reward mode (outcome reward uses no coach).
 */
export function runVerdict(evals: readonly { iteration: number; result: EvalResult }[],
  c: { iterations: number; evalTemperature: number; rewards: { mode: RewardMode; shaping?: boolean } }, coach: CoachQuality | null): RunVerdict | null {
  const finished = evals.filter((e) => e.result.of === undefined && e.result.tasks > 0);
  const base = finished.find((e) => e.iteration === 0);
  const last = finished.filter((e) => e.iteration > 0).sort((a, b) => a.iteration - b.iteration).at(-1);
  if (!base || !last) return null;
  const changes = heldOutChanges(base.result, last.result, c.evalTemperature);
  const ended = last.iteration >= c.iterations;
  const head = `After iteration ${last.iteration}${ended ? ' (the end of the run)' : ''}, on ${last.result.tasks} held-out problems:`;
  const losses = changes.filter((x) => x.verdict === 'loss');
  const below = losses.length > 0;
  let warning: string | null = null;
  if (below) {
    const which = losses.map((x) => `${x.name} ${formatPoints(x.paired!)}`).join(', ');
    warning = `The trained team is worse than the untrained one, beyond the interval (${which}). ${causeWords(c.rewards, coach)}`;
  }
  return { iteration: last.iteration, ended, head, changes, lines: changes.map(changeWords).filter(Boolean), below, warning };
}

/**
 * The line above the charts: what the run's credit reads. Where it reads a coach (process, mixed, or
 * shaping), the coach's own line (coach-quality.ts); otherwise the method by name and what it reads
 * instead, and that no coach is called.
 * Example: readsLine({ mode: 'counterfactual' }, q) -> 'No coach: counterfactual credit replays each agent's turn ...'
 */
export function readsLine(rewards: { mode: RewardMode; shaping?: boolean }, coach: CoachQuality | null): string | null {
  if (readsCoach({ mode: rewards.mode, shaping: rewards.shaping ?? false })) return coach?.line ?? null;
  return `No coach: ${rewards.mode} credit reads ${READS[rewards.mode]}; ${METHOD_WORDS[rewards.mode].gets}. `
    + 'No coach is called: there is no coach score to show.';
}

/** What a coach-free credit method reads instead of a coach. */
const READS: Record<RewardMode, string> = {
  process: 'a coach', mixed: 'a coach',
  outcome: 'only whether the team\'s final answer is right',
  counterfactual: 'replays: each agent\'s turn is replayed from the same input and each replay played to the team\'s final answer',
  groups: 'the final answers of the steps of one agent that met the same input in the iteration',
};

/** The likely cause of a fall below the untrained team, where one is known. */
export function causeWords(rewards: { mode: RewardMode; shaping?: boolean }, coach: CoachQuality | null): string {
  const mode = rewards.mode;
  if (mode === 'outcome' && !rewards.shaping) {
    return 'Outcome reward uses no coach; the cause is elsewhere (the learning rate, the budget, or a team that cannot learn this task).';
  }
  if (!readsCoach({ mode, shaping: rewards.shaping ?? false })) {
    return `${mode[0].toUpperCase()}${mode.slice(1)} credit reads no coach (it reads ${READS[mode]}); the cause is its signal, the learning rate `
      + 'or the budget (docs/results.md: at the lesson\'s budget both coach-free methods ended below the untrained team).';
  }
  if (coach?.weak && coach.ranking) {
    return `Likely cause: the coach, ${coach.who}, ranks only ${pct(coach.ranking.p)} of an agent's actions as the rater does; `
      + `below about ${Math.round(HELPFUL_RANKING * 100)} % a coach made the relay team worse than untrained (docs/judges.md). `
      + 'Coach with the rubric (Settings → Coach: rule) to compare.';
  }
  if (coach && !coach.ranking) {
    return `The coach, ${coach.who}, has no measured ranking against the rater, so it may be the cause `
      + `(a coach below about ${Math.round(HELPFUL_RANKING * 100)} % made the relay team worse: docs/judges.md).`;
  }
  if (coach?.isRater || (coach?.ranking && !coach.weak)) {
    return 'The coach agrees with the rater, so the cause is elsewhere (the learning rate, the budget, or a team that cannot learn this task).';
  }
  return 'The cause is not known (the learning rate, the budget, the coach, or a team that cannot learn this task).';
}
