/**
 * The guided step after the lesson: "this judge is weak; correct 10 of its scores and teach it". The relay of 4
 * is coached at the lesson's budget by a weak relay judge shipped for the purpose (models/relay-judge-weak, a
 * checkpoint of the relay judge's own build, scripts/build-weak-relay-judge.ts); the person corrects the 10 of
 * its scores on the last batch it is least sure of (the judge desk's "Ask me"), teaches it (the desk's teaching),
 * and the relay of 4 is coached again by the taught version, on the same seed and the same held-out problems.
 * What it shows: the judge's ranking against the rater before and after teaching, and the team's held-out
 * accuracy coached by each, paired, with intervals; a difference inside its interval is said to be no gain.
 *
 * Here: the plan (the runs' settings), the step's record (what a reload reads back: the page keeps it in the
 * browser's storage), which phase a record is in, and the view in words. The page drives it with the lab's
 * own requests (configure, start, the judge desk), so nothing of the lesson's or the desk's machinery is repeated.
 * For: src/ui/components/GuidedStep.svelte. Not for: teaching (judge-desk.ts), training (loop/), the lesson (lesson.ts).
 *
 * Example: guidedPatch('models/relay-judge-weak').coach -> { kind: 'model', model: 'models/relay-judge-weak' }
 *          guidedPhase({ startedAt: 0, judge: 'models/relay-judge-weak', seconds: {} }) -> 'coach'
 *          guidedView(record).accuracyWords ->
 *            'Held-out greedy team accuracy (100 problems): untrained 55.0 % [45.2, 64.4]; coached by the weak judge 31.0 % [22.8, 40.6];
 *             by the taught judge 35.0 % [26.4, 44.7]. Taught minus weak, paired on the same 100 problems: +4.0 pts [-6.1, +14.0]:
 *             inside the interval, so no gain ...'
 */
import type { JudgeVersion } from '../../../coach/correction-book.ts';
import type { EvalResult } from '../../../loop/records.ts';
import { accuracyInterval, formatPercent, formatPoints, type Interval } from '../../../stats/intervals.ts';
import type { CoachQuality } from '../../coach-quality.ts';
import { LESSON_PLAN, lessonPatch } from '../lesson/lesson-maths.ts';
import { pairedGap } from '../run-maths.ts';

/** The step's plan: the team, the judge it begins with, how many corrections it asks for. The budget is the lesson's (LESSON_PLAN). */
export const GUIDED_PLAN = {
  n: 4,
  judge: 'models/relay-judge-weak',
  corrections: 10,
} as const;

/**
 * The settings of a run of the step: the lesson's relay of 4 under process reward (its seed, budget and held-out
 * problems), coached by judge `judge` (the weak folder, or a taught version's `taught:<name>-<hash>`).
 */
export function guidedPatch(judge: string): Record<string, unknown> {
  const base = lessonPatch(GUIDED_PLAN.n, 'process');
  return { ...base, coach: { ...(base.coach as object | undefined), kind: 'model', model: judge } };
}

/** A run of the step as kept: its id and its finished evaluations. */
export interface GuidedRun {
  runId: string;
  evals: { iteration: number; result: EvalResult }[];
}

/** The step's record, kept in the browser's storage (a reload reads it back). */
export interface GuidedRecord {
  /** When the person began the step (ms since 1970). */
  startedAt: number;
  /** The judge it began with (GUIDED_PLAN.judge). */
  judge: string;
  /** That judge as the lab described it (its report's ranking), once its run opened. */
  coach?: CoachQuality | null;
  /** The run coached by the weak judge, once finished. */
  before?: GuidedRun;
  /** The judge's count of corrections when the person was asked (the 10 are counted from there). */
  asked?: number;
  /** The version taught. */
  taught?: JudgeVersion;
  /** The run coached by the taught version, once finished. */
  after?: GuidedRun;
  finishedAt?: number;
  /** Seconds the page spent on each part (training both runs, asking, teaching), summed over goes. */
  seconds: { coach?: number; ask?: number; teach?: number; recoach?: number };
}

export type GuidedPhase = 'idle' | 'coach' | 'correct' | 'recoach' | 'done';

/** Where a record stands: nothing begun, the weak judge's run to train, corrections to make and teach, the taught judge's run, done. */
export function guidedPhase(r: GuidedRecord | null): GuidedPhase {
  if (!r) return 'idle';
  if (!r.before) return 'coach';
  if (!r.taught) return 'correct';
  if (!r.after) return 'recoach';
  return 'done';
}

/** The corrections made since the person was asked (never below 0). */
export function correctedSince(r: GuidedRecord | null, count: number): number {
  return r?.asked === undefined ? 0 : Math.max(0, count - r.asked);
}

/**
 * A stored run's finished evaluations from its records (the run store's metrics.jsonl: evaluations are their own
 * records, older runs kept them inside the iteration's), the running estimates left out.
 */
export function finishedEvals(records: readonly { iteration: number; eval?: EvalResult; perAgent?: unknown }[]): GuidedRun['evals'] {
  const all = records.filter((r) => r.eval && r.eval.of === undefined && r.eval.tasks > 0).map((r) => ({ iteration: r.iteration, result: r.eval! }));
  const byIteration = new Map(all.map((e) => [e.iteration, e]));
  return [...byIteration.values()].sort((a, b) => a.iteration - b.iteration);
}

/** Whether a run of the plan has its last evaluation (its training and measurement are done). */
export function runFinished(evals: GuidedRun['evals']): boolean {
  return evals.some((e) => e.iteration === LESSON_PLAN.iterations && e.result.of === undefined);
}

export interface GuidedView {
  phase: GuidedPhase;
  /** The weak judge in words: its measured ranking, and why that makes it weak. */
  judgeWords: string;
  /** The judge's ranking against the rater on the batch's other actions, before and after teaching (0..1). */
  ranking: { before: Interval | null; after: Interval | null; pairs: number } | null;
  rankingWords: string;
  accuracy: { untrained: Interval | null; before: Interval | null; after: Interval | null; diff: (Interval & { n: number }) | null };
  accuracyWords: string;
  /** The step's wall time, begin to end (the person's corrections included), and the page's time by part. */
  seconds: number | null;
  timeWords: string;
}

const last = (run?: GuidedRun): EvalResult | null => run?.evals.filter((e) => e.iteration === LESSON_PLAN.iterations).at(-1)?.result ?? null;
const interval = (e: EvalResult | null): Interval | null => (e ? accuracyInterval(e.greedy, e.tasks, e.perTask?.greedy) : null);
const fromPercent = (r: JudgeVersion['before']['ranking']): Interval | null => (r ? { p: r.percent / 100, low: r.low / 100, high: r.high / 100 } : null);
const secs = (s: number) => (s < 10 ? `${s.toFixed(1)} s` : s < 90 ? `${s.toFixed(0)} s` : `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`);

/** The weak judge in words, from what the lab measured of it (its report's held-out check). */
export function judgeWords(q: CoachQuality | null | undefined, judge: string): string {
  if (!q?.ranking) return `The coach is now ${judge}, a weak relay judge: its ranking against the rater has not been measured here.`;
  const steps = q.build?.checkSteps ? `${q.build.checkSteps} held-out steps, ` : '';
  const rank = `it ranks ${formatPercent(q.ranking)} of an agent's differently-rated steps as the rubric does (${steps}${q.source})`;
  const weak = q.weak === false
    ? 'which is above the line where relay judges began to coach (about 80 %, docs/judges.md)'
    : 'below the line (about 80 %) under which no relay judge made its team better than untrained (docs/judges.md)';
  return `The coach is now ${q.folder ?? judge}, a weak relay judge: ${rank}, ${weak}.`;
}

/** Two intervals of the same quantity in words: a change counts only when the intervals do not overlap. */
function change(before: Interval, after: Interval, what: string): string {
  if (after.low > before.high) return `a gain in ${what} beyond the noise`;
  if (after.high < before.low) return `a loss in ${what} beyond the noise`;
  return 'the intervals overlap, so no change beyond the noise';
}

/** Everything the page draws of the step, from its record. */
export function guidedView(r: GuidedRecord | null): GuidedView {
  const phase = guidedPhase(r);
  const b = fromPercent(r?.taught?.before.ranking ?? null);
  const a = fromPercent(r?.taught?.after.ranking ?? null);
  const pairs = r?.taught?.after.ranking?.pairs ?? r?.taught?.before.ranking?.pairs ?? 0;
  const ranking = r?.taught ? { before: b, after: a, pairs } : null;
  const rankingWords = !r?.taught ? ''
    : b && a ? `Its ranking against the rater on the batch's other actions (${pairs} pairs of the same agent's steps): ${formatPercent(b)} before `
      + `teaching, ${formatPercent(a)} after: ${change(b, a, 'ranking')}.`
    : 'Its ranking against the rater could not be measured on this batch (no pairs of differently-rated steps).';
  const base = r?.before?.evals.find((e) => e.iteration === 0)?.result ?? r?.after?.evals.find((e) => e.iteration === 0)?.result ?? null;
  const lb = last(r?.before);
  const la = last(r?.after);
  const accuracy = { untrained: interval(base), before: interval(lb), after: interval(la), diff: pairedGap(la, lb) };
  let accuracyWords = '';
  if (accuracy.before) {
    const tasks = lb!.tasks;
    accuracyWords = `Held-out greedy team accuracy (${tasks} problems): ${accuracy.untrained ? `untrained ${formatPercent(accuracy.untrained)}; ` : ''}`
      + `coached by the weak judge ${formatPercent(accuracy.before)}`;
    if (accuracy.after) {
      accuracyWords += `; by the taught judge ${formatPercent(accuracy.after)}.`;
      const d = accuracy.diff;
      if (d) {
        accuracyWords += ` Taught minus weak, paired on the same ${d.n} problems: ${formatPoints(d)}: `
          + (d.low > 0 ? 'beyond the noise, a gain: the taught judge coached the team better.'
            : d.high < 0 ? 'beyond the noise, a loss: the taught judge coached the team worse.'
              : `inside the interval, so no gain: after ${GUIDED_PLAN.corrections} corrections the taught judge coached no better than the weak one, `
                + `as far as ${d.n} problems can tell.`);
      }
    } else {
      accuracyWords += '.';
    }
  }
  const seconds = r?.finishedAt ? (r.finishedAt - r.startedAt) / 1000 : null;
  const parts = r ? Object.entries({ 'training coached by the weak judge': r.seconds.coach, 'asking': r.seconds.ask, 'teaching': r.seconds.teach,
    'training coached by the taught judge': r.seconds.recoach }).filter(([, s]) => s !== undefined).map(([k, s]) => `${k} ${secs(s!)}`) : [];
  const timeWords = seconds === null ? '' : `This step took ${secs(seconds)} here from the first click to the last result, your corrections included`
    + `${parts.length ? ` (${parts.join(', ')})` : ''}.`;
  return { phase, judgeWords: r ? judgeWords(r.coach, r.judge) : '', ranking, rankingWords, accuracy, accuracyWords, seconds, timeWords };
}

/** The key the page keeps the record under, and the record read back (null when absent or unreadable). */
export const GUIDED_KEY = 'mappa-guided-step';
export function readRecord(text: string | null): GuidedRecord | null {
  if (!text) return null;
  try {
    const r = JSON.parse(text) as GuidedRecord;
    return typeof r?.startedAt === 'number' && typeof r.judge === 'string' && r.seconds ? r : null;
  } catch {
    return null;
  }
}
