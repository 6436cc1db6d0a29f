// The coach says what it is, and a run says how it ended (src/core/lab/coach-quality.ts, run-verdict.ts,
// src/core/measure/held-out-change.ts): the coach's ranking against the rater comes from data (a judge's
// report.json, or the measured table), never from a string; a run that ends below its untrained team,
// beyond the interval, says so in words with the likely cause; and the end of a run reads as the CLI prints it.
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { coachQuality, HELPFUL_RANKING, judgeFolder, reportRanking } from '../../../src/core/lab/coach-quality.ts';
import { runVerdict } from '../../../src/ui/run-verdict.ts';
import { changeLine, changeWords, heldOutChanges } from '../../../src/core/measure/held-out-change.ts';
import type { EvalResult } from '../../../src/core/loop/records.ts';
import { accuracyInterval, formatPercent, formatPoints, pairedDifference } from '../../../src/core/stats/intervals.ts';

const IDS = Array.from({ length: 100 }, (_, i) => `t${i}`);
/** 100 problems, the first `g` right greedy and the first `s` right sampled. */
const ev = (g: number, s = g, of?: number): EvalResult => ({
  greedy: g / 100, sampled: s / 100, tasks: 100, ...(of ? { of } : {}),
  perTask: { ids: IDS, greedy: IDS.map((_, i) => i < g), sampled: IDS.map((_, i) => i < s) },
});
const relay = { iterations: 15, evalTemperature: 1, rewards: { mode: 'process' as const } };

describe('the coach, in one line', () => {
  it('reads a judge\'s ranking from its folder\'s report (the shipped relay judge, and the weak fixture)', () => {
    for (const [dir, p] of [['models/relay-judge', null], ['test/fixtures/relay-judge-weak', 0.617]] as const) {
      const report = JSON.parse(fs.readFileSync(`${dir}/report.json`, 'utf8'));
      const ranking = reportRanking(report)!;
      expect(ranking.p).toBe(report.check.ranking.p);
      if (p !== null) expect(ranking.p).toBeCloseTo(p, 3);
      const q = coachQuality(`model:${dir}`, 'relay', null, ranking, `${dir}/report.json`);
      expect(q.line).toContain(`ranks ${(ranking.p * 100).toFixed(1)} %`);
      expect(q.line).toContain(`(${dir}/report.json)`);
      expect(q.weak).toBe(ranking.p < HELPFUL_RANKING);
    }
  });

  it('says the rubric is the rater itself, a judge without a report by the measured table, and an unmeasured one as unmeasured', () => {
    expect(coachQuality('rule:relay', 'relay', null).line).toBe('Coach: the rubric (the rater), checking each agent\'s own step against the task; it is the rater itself, the reference every judge is measured against (100 % by definition).');
    const math = coachQuality('model:models/judge', 'math', null);
    expect(math.ranking!.p).toBe(0.507);
    expect(math.weak).toBe(true);
    expect(math.line).toMatch(/ranks 50\.7 % \[47\.7, 54\.9\] .*bench -- judge.*below about 79 %, a coach made the relay team worse than untrained \(docs\/judges\.md\)\.$/);
    expect(coachQuality('model:http://127.0.0.1:4173/models/judge', 'data', null).who).toBe('judge models/judge (AI)');
    const web = coachQuality('webllm:Qwen2.5-0.5B', 'math', null);
    expect([web.kind, web.ranking, web.weak]).toEqual(['webllm', null, null]);
    expect(web.line).toContain('has not been measured');
    const noisy = coachQuality('rule:relay+miscalibrated', 'relay', { noise: 8 });
    expect(noisy.who).toBe('the rubric (the rater) with noise σ = 8 on its scores');
    expect(noisy.ranking!.p).toBe(0.79);
    expect(coachQuality('rule:relay+miscalibrated', 'relay', { noise: 3 }).ranking).toBeNull(); // not measured at σ = 3
    expect(judgeFolder('model:./fixtures/relay-judge-weak')).toBe('fixtures/relay-judge-weak');
  });
});

describe('the end of a run, in words', () => {
  it('gives the CLI\'s figures: the accuracies with their intervals and the change paired problem by problem', () => {
    const [g, s] = heldOutChanges(ev(25, 16), ev(26, 23), 0.6);
    expect(changeLine(g)).toBe(`held-out greedy on 100 problems: untrained ${formatPercent(accuracyInterval(0.25, 100, ev(25).perTask!.greedy))} -> trained ${formatPercent(accuracyInterval(0.26, 100, ev(26).perTask!.greedy))}, ${formatPoints(pairedDifference(ev(26).perTask!.greedy, ev(25).perTask!.greedy))} paired`);
    expect(s.name).toBe('T=0.6');
    expect([g.verdict, s.verdict]).toEqual(['none', 'gain']);
    expect(changeWords(g)).toMatch(/paired — no change beyond the noise$/);
    expect(changeWords(s)).toMatch(/paired — a gain beyond the noise$/);
    expect(heldOutChanges(null, ev(30), 0.6)[0].paired).toBeNull();
    // evalTemperature 0: greedy only (one pass was played), no second "T=0" line.
    expect(heldOutChanges(ev(25), ev(26), 0).map((c) => c.name)).toEqual(['greedy']);
  });

  it('says when the trained team ends below the untrained one, and names a weak coach as the likely cause', () => {
    const weak = coachQuality('model:fixtures/relay-judge-weak', 'relay', null, { p: 0.617, low: 0.573, high: 0.660 });
    const v = runVerdict([{ iteration: 0, result: ev(55, 17) }, { iteration: 15, result: ev(31, 16) }], relay, weak)!;
    expect(v.ended).toBe(true);
    expect(v.head).toBe('After iteration 15 (the end of the run), on 100 held-out problems:');
    expect(v.below).toBe(true);
    expect(v.lines[0]).toMatch(/untrained 55\.0 % .* -> trained 31\.0 % .*, -24\.0 pts \[-\d+\.\d, -\d+\.\d\] paired — a loss beyond the noise/);
    expect(v.warning).toMatch(/^The trained team is worse than the untrained one, beyond the interval \(greedy -24\.0 pts .*\)\. Likely cause: the coach, judge fixtures\/relay-judge-weak \(AI\), ranks only 61\.7 % .*below about 79 %/);
    // The same fall under the rubric names no coach; a running estimate is not a verdict yet.
    expect(runVerdict([{ iteration: 0, result: ev(55) }, { iteration: 15, result: ev(31) }], relay, coachQuality('rule:relay', 'relay', null))!.warning).toMatch(/agrees with the rater, so the cause is elsewhere/);
    expect(runVerdict([{ iteration: 0, result: ev(55) }, { iteration: 15, result: ev(31, 31, 200) }], relay, weak)).toBeNull();
    const fine = runVerdict([{ iteration: 0, result: ev(55) }, { iteration: 5, result: ev(70) }], relay, weak)!;
    expect([fine.below, fine.warning, fine.ended]).toEqual([false, null, false]);
  });
});
