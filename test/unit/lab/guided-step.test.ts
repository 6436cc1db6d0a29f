// The guided step after the lesson (src/core/lab/experiments/guided-step/guided-step-maths.ts): its runs' settings through the real config resolver
// (the lesson's relay of 4, only the coach differs), where a record stands, and its view in words on hand-worked
// evaluations: a paired gain inside its interval is said to be no gain, one beyond it a gain; ranking intervals that
// overlap are no change.
import { describe, expect, it } from 'vitest';
import type { JudgeVersion } from '../../../src/core/coach/correction-book.ts';
import { resolveTrainConfig } from '../../../src/core/domains/index.ts';
import type { EvalResult } from '../../../src/core/loop/records.ts';
import type { CoachQuality } from '../../../src/core/lab/coach-quality.ts';
import {
  correctedSince, finishedEvals, GUIDED_PLAN, guidedPatch, guidedPhase, guidedView, readRecord, runFinished, type GuidedRecord,
} from '../../../src/core/lab/experiments/guided-step/guided-step-maths.ts';
import { lessonPatch, LESSON_PLAN } from '../../../src/core/lab/experiments/lesson/lesson-maths.ts';

/** An evaluation of 100 problems whose first `right` are solved (greedy). */
function evalOf(right: number[], tasks = 100): EvalResult {
  const greedy = Array.from({ length: tasks }, (_, i) => right.includes(i));
  const k = greedy.filter(Boolean).length;
  return { greedy: k / tasks, sampled: k / tasks, tasks, perTask: { ids: greedy.map((_, i) => `t${i}`), greedy, sampled: greedy } };
}
const range = (a: number, b: number) => Array.from({ length: b - a }, (_, i) => a + i);

const weak: CoachQuality = {
  kind: 'model', who: 'judge models/relay-judge-weak (AI)', folder: 'models/relay-judge-weak', ranking: { p: 0.617, low: 0.573, high: 0.66 },
  source: 'models/relay-judge-weak/report.json', weak: true, isRater: false, line: '', build: { checkSteps: 480 },
} as CoachQuality;
const taught = {
  spec: 'taught:relay-judge-weak-8f90966516a0', hash: '8f90966516a0'.padEnd(64, '0'), parent: 'models/relay-judge-weak', team: 'relay', corrections: 10,
  before: { heldOut: null, ranking: { pairs: 110, concordant: 72, percent: 65.9, low: 56.6, high: 74.1 } },
  after: { heldOut: null, ranking: { pairs: 110, concordant: 78, percent: 70.9, low: 61.8, high: 78.6 } },
} as JudgeVersion;

describe('guidedPatch', () => {
  it('is the lesson\'s 4-agent process run with the coach swapped for the named judge', () => {
    const c = resolveTrainConfig(guidedPatch(GUIDED_PLAN.judge));
    const lesson = resolveTrainConfig(lessonPatch(4, 'process'));
    expect(c.coach).toMatchObject({ kind: 'model', model: 'models/relay-judge-weak' });
    expect({ ...c, coach: lesson.coach }).toEqual(lesson);
    expect([c.iterations, c.evalTasks, c.seed, c.workflow.agents.length]).toEqual([LESSON_PLAN.iterations, LESSON_PLAN.evalTasks, 0, 4]);
    expect(resolveTrainConfig(guidedPatch(taught.spec)).coach.model).toBe(taught.spec);
  });
});

describe('guidedPhase and correctedSince', () => {
  it('walks from the weak judge\'s run to the corrections, the taught judge\'s run and the end', () => {
    const r: GuidedRecord = { startedAt: 0, judge: GUIDED_PLAN.judge, seconds: {} };
    expect(guidedPhase(null)).toBe('idle');
    expect(guidedPhase(r)).toBe('coach');
    r.before = { runId: 'a', evals: [] };
    expect(guidedPhase(r)).toBe('correct');
    expect(correctedSince(r, 7)).toBe(0); // not asked yet
    r.asked = 4;
    expect(correctedSince(r, 11)).toBe(7);
    expect(correctedSince(r, 2)).toBe(0); // corrections removed since: never below 0
    r.taught = taught;
    expect(guidedPhase(r)).toBe('recoach');
    r.after = { runId: 'b', evals: [] };
    expect(guidedPhase(r)).toBe('done');
  });
});

describe('finishedEvals and runFinished', () => {
  it('keeps the finished evaluations (own records and older in-iteration ones), not the running estimates', () => {
    const e0 = evalOf(range(0, 55));
    const running = { ...evalOf(range(0, 10), 20), of: 100 };
    const e15 = evalOf(range(0, 31));
    const evals = finishedEvals([{ iteration: 0, eval: e0 }, { iteration: 5, eval: running }, { iteration: 5, perAgent: {} }, { iteration: 15, eval: e15 }]);
    expect(evals.map((e) => e.iteration)).toEqual([0, 15]);
    expect(runFinished(evals)).toBe(true);
    expect(runFinished(evals.slice(0, 1))).toBe(false);
  });
});

describe('guidedView', () => {
  const base: GuidedRecord = {
    startedAt: 1_000, judge: GUIDED_PLAN.judge, coach: weak, asked: 0, taught,
    before: { runId: 'a', evals: [{ iteration: 0, result: evalOf(range(0, 55)) }, { iteration: 15, result: evalOf(range(0, 31)) }] },
    seconds: { coach: 20, ask: 2, teach: 9, recoach: 21 },
  };

  it('says the judge is weak from its measured ranking, and the ranking\'s overlapping intervals are no change', () => {
    const v = guidedView(base);
    expect(v.judgeWords).toBe('The coach is now models/relay-judge-weak, a weak relay judge: it ranks 61.7 % [57.3, 66.0] of an agent\'s '
      + 'differently-rated steps as the rubric does (480 held-out steps, models/relay-judge-weak/report.json), below the line (about 80 %) under '
      + 'which no relay judge made its team better than untrained (docs/judges.md).');
    expect(v.rankingWords).toBe('Its ranking against the rater on the batch\'s other actions (110 pairs of the same agent\'s steps): '
      + '65.9 % [56.6, 74.1] before teaching, 70.9 % [61.8, 78.6] after: the intervals overlap, so no change beyond the noise.');
    expect(v.phase).toBe('recoach');
    expect(v.accuracyWords).toBe('Held-out greedy team accuracy (100 problems): untrained 55.0 % [45.2, 64.4]; coached by the weak judge 31.0 % [22.8, 40.6].');
  });

  it('calls a paired gain inside its interval no gain, and one beyond it a gain', () => {
    // The taught judge's run solves problems 0-34: 4 more than the weak judge's, none fewer (+4 pts, discordant 4 / 0).
    const small = guidedView({ ...base, after: { runId: 'b', evals: [{ iteration: 15, result: evalOf(range(0, 35)) }] }, finishedAt: 113_000 });
    expect(small.accuracy.diff!.p).toBeCloseTo(0.04, 10);
    expect(small.accuracy.diff!.low).toBeLessThan(0);
    expect(small.accuracyWords).toContain('; by the taught judge 35.0 % [26.4, 44.7]. Taught minus weak, paired on the same 100 problems: +4.0 pts [');
    expect(small.accuracyWords).toMatch(/: inside the interval, so no gain: after 10 corrections the taught judge coached no better than the weak one, as far as 100 problems can tell\.$/);
    expect(small.phase).toBe('done');
    expect(small.seconds).toBe(112);
    expect(small.timeWords).toBe('This step took 1 min 52 s here from the first click to the last result, your corrections included (training coached by '
      + 'the weak judge 20 s, asking 2.0 s, teaching 9.0 s, training coached by the taught judge 21 s).');
    const big = guidedView({ ...base, after: { runId: 'b', evals: [{ iteration: 15, result: evalOf(range(0, 61)) }] } });
    expect(big.accuracy.diff!.low).toBeGreaterThan(0);
    expect(big.accuracyWords).toContain('+30.0 pts');
    expect(big.accuracyWords).toContain('beyond the noise, a gain: the taught judge coached the team better.');
    const worse = guidedView({ ...base, after: { runId: 'b', evals: [{ iteration: 15, result: evalOf(range(0, 5)) }] } });
    expect(worse.accuracyWords).toContain('beyond the noise, a loss: the taught judge coached the team worse.');
  });

  it('shows nothing before the step began, and reads back only a whole record', () => {
    expect(guidedView(null)).toMatchObject({ phase: 'idle', judgeWords: '', rankingWords: '', accuracyWords: '', timeWords: '', seconds: null });
    expect(readRecord(JSON.stringify(base))).toEqual(base);
    expect(readRecord('{"startedAt": "x"}')).toBeNull();
    expect(readRecord('not json')).toBeNull();
    expect(readRecord(null)).toBeNull();
  });
});
