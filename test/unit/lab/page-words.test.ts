// The page's words that must be true: what each lab state refuses and why, the coach line and the
// verdict's cause under each credit method, a judge's ranking interval when every held-out step agreed,
// and each coach-free method's reasons read from its own records.
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { refusal } from '../../../src/core/lab/lab-state.ts';
import { coachQuality, reportRanking } from '../../../src/core/lab/coach-quality.ts';
import { causeWords, readsLine } from '../../../src/ui/run-verdict.ts';
import { methodHint, recordSigns, whyWords, type MethodRunData } from '../../../src/core/lab/experiments/credit-methods/credit-methods-maths.ts';
import { resolveTrainConfig } from '../../../src/core/domains/index.ts';
import { lessonPatch } from '../../../src/core/lab/experiments/lesson/lesson-maths.ts';
import { wilson } from '../../../src/core/stats/intervals.ts';

describe('one state, each request allowed or refused in words', () => {
  it('refuses what the state cannot do, and lets requests made while a run opens wait for it', () => {
    expect(refusal({ state: 'ready' }, 'start')).toBeNull();
    expect(refusal({ state: 'loading' }, 'start')).toBeNull(); // the lab waits for the opening, then asks again
    expect(refusal({ state: 'readonly' }, 'start')).toMatch(/training in another tab.*Take over/);
    expect(refusal({ state: 'readonly' }, 'experiment')).toMatch(/experiments run in that tab/);
    expect(refusal({ state: 'readonly' }, 'takeOver')).toBeNull();
    expect(refusal({ state: 'running', activity: 'lesson' }, 'experiment')).toBe('the lesson is running; pause it first');
    expect(refusal({ state: 'running', activity: 'training' }, 'pause')).toBeNull();
    expect(refusal({ state: 'pausing', activity: 'training' }, 'start')).toMatch(/is pausing; wait/);
    expect(refusal({ state: 'lost' }, 'start')).toMatch(/device was lost/);
    expect(refusal({ state: 'lost' }, 'recover')).toBeNull();
    expect(refusal({ state: 'error' }, 'start')).toMatch(/no run is open: its configuration was refused/);
    expect(refusal({ state: 'booting' }, 'configure')).toBeNull();
  });
});

describe('only true words about the coach', () => {
  const judge = coachQuality('model:models/relay-judge', 'relay', null, { p: 0.998, low: 0.994, high: 1 }, 'models/relay-judge/report.json');
  it('a coach-free run names its method and what it reads, and no coach', () => {
    for (const mode of ['outcome', 'counterfactual', 'groups'] as const) {
      const line = readsLine({ mode }, judge)!;
      expect(line).toMatch(new RegExp(`^No coach: ${mode} credit reads`));
      expect(line).not.toMatch(/judge|rater|rubric/);
      expect(causeWords({ mode }, judge)).not.toMatch(/coach agrees/);
    }
    expect(causeWords({ mode: 'counterfactual' }, judge)).toMatch(/^Counterfactual credit reads no coach/);
    expect(readsLine({ mode: 'process' }, judge)).toBe(judge.line);
    expect(readsLine({ mode: 'outcome', shaping: true }, judge)).toBe(judge.line); // shaping reads the coach per turn
  });

  it('a judge whose every held-out step agreed gets Wilson\'s interval, not [100.0, 100.0]', () => {
    const report = JSON.parse(fs.readFileSync('models/relay-judge/report.json', 'utf8'));
    const r = reportRanking(report)!;
    if (report.check.ranking.low === report.check.ranking.high) {
      const w = wilson(report.check.steps, report.check.steps);
      expect(r.low).toBeCloseTo(w.low, 12);
      expect(r.low).toBeLessThan(1);
      if (report.check.steps === 480) expect((r.low * 100).toFixed(1)).toBe('99.2');
    }
    expect(reportRanking({ check: { ranking: { p: 0.6, low: 0.55, high: 0.65 }, steps: 100 } })).toEqual({ p: 0.6, low: 0.55, high: 0.65 });
  });
});

describe('the credit comparison says why, from the records', () => {
  const rec = (iteration: number, kl: number, samples: [number, number], right: number, shared?: number) => ({
    iteration, trainAccuracy: right, perAgent: { agent1: { kl, samples: samples[0] }, agent4: { kl: kl / 2, samples: samples[1] } },
    ...(shared === undefined ? {} : { groups: { sharedShare: shared } }),
  });
  const run = (method: MethodRunData['method'], records: MethodRunData['records']): MethodRunData =>
    ({ method, runId: method, iterations: 2, agents: 4, records, done: true });
  const outcome = run('outcome', [rec(1, 0.1, [16, 16], 0.2), rec(2, 0.3, [16, 16], 0.3)]);
  it('counterfactual: its budget (samples per agent), its drift against outcome\'s, its signal; and where it ended', () => {
    const cf = run('counterfactual', [rec(1, 0.5, [4, 32], 0.1), rec(2, 1.2, [4, 32], 0.2)]);
    expect(recordSigns(cf)).toEqual({ right: 0.15000000000000002, drift: 1.2, samples: { agent1: 4, agent4: 32 }, shared: null });
    const why = whyWords({ method: 'counterfactual', final: { p: 0.27, low: 0.19, high: 0.36, tasks: 100 }, vsOutcome: null, coachCalls: 0 }, cf, outcome,
      { p: 0.55, low: 0.45, high: 0.65 });
    expect(why).toBe('counterfactual ended below the untrained team. Its budget went to replays: agent1 trained on 4 samples an iteration, '
      + 'agent4 on 32; its signal: a reply\'s credit is 0 wherever all its replays end wrong (the team was right in 15 % of its training '
      + 'rollouts); its drift: KL to the base model up to 1.20 per token (outcome: 0.30).');
  });
  it('against the untrained team, paired on the same problems when both evaluations hold them', () => {
    const ids = Array.from({ length: 100 }, (_, i) => `t${i}`);
    const ev = (k: number) => ({ greedy: k / 100, sampled: k / 100, tasks: 100, perTask: { ids, greedy: ids.map((_, i) => i < k), sampled: ids.map((_, i) => i < k) } });
    const g = run('groups', [rec(1, 0.1, [16, 16], 0.2, 0.5), { ...rec(2, 0.2, [16, 16], 0.2, 0.4), eval: ev(47) }]);
    const why = whyWords({ method: 'groups', final: { p: 0.47, low: 0.375, high: 0.567, tasks: 100 }, vsOutcome: null, coachCalls: 0 }, g, outcome,
      { p: 0.55, low: 0.45, high: 0.64 }, ev(55));
    // Intervals that overlap can still differ beyond the noise when paired: 8 problems lost, none gained.
    expect(why).toMatch(/^groups ended below the untrained team \(-8\.0 pts \[-\d+\.\d, -\d+\.\d\], paired\)\. /);
  });

  it('groups: the share of steps a group speaks for', () => {
    const g = run('groups', [rec(1, 0.1, [16, 16], 0.2, 0.5), rec(2, 0.2, [16, 16], 0.2, 0.4)]);
    const why = whyWords({ method: 'groups', final: { p: 0.47, low: 0.375, high: 0.567, tasks: 100 }, vsOutcome: null, coachCalls: 0 }, g, outcome,
      { p: 0.55, low: 0.45, high: 0.65 });
    expect(why).toMatch(/^groups ended within the noise of the untrained team\. .*only 45 % of steps met an input another step met/);
  });
});

describe('the counterfactual hint counts a prompt\'s samples', () => {
  it('a prompt of 2 samples costs two trees', () => {
    const base = lessonPatch(4, 'process') as Record<string, unknown>;
    const c = resolveTrainConfig({ ...base, rewards: { mode: 'counterfactual' }, promptsPerIteration: 8, samplesPerPrompt: 2 });
    expect(methodHint(c)).toMatch(/^Replays each agent's turn: every agent replies 2, 2, 2, 2 times to the same frozen input \(its fan-out\), so a prompt costs 60 agent generations \(2 samples, each a tree of 16 leaves and 30 generations\) instead of 8: 480 an iteration\./);
  });
});
