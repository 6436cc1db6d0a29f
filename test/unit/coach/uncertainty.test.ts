/**
 * Which actions to ask about: the spread of the judge's own score distribution. The distribution is
 * checked against the judge's greedy answer (generate, the real decoder): the digit it wrote is the most
 * probable first digit, and the probabilities sum to one.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { coachPrompt, DEFAULT_COACH_TEMPLATE } from '../../../src/core/coach/coach-format.ts';
import { distribution, pickRandom, pickUncertain, readJudge, type JudgeReading } from '../../../src/core/coach/uncertainty.ts';
import { relayRatedSteps } from '../../../src/core/domains/relay/judge.ts';
import { relayHeldOut } from '../../../src/core/domains/relay/tasks.ts';
import { initBackend } from '../../../src/core/engine/backend.ts';
import { loadModel } from '../../../src/core/engine/model/load.ts';
import { folderSource } from '../../../src/core/engine/model/sources.ts';
import { EngineAgents } from '../../../src/core/loop/agents.ts';
import { Rng } from '../../../src/core/stats/rng.ts';
import { repoRoot } from '../../helpers/webgpu.ts';

describe('distribution', () => {
  it('splits "1" into 1 and 10 and gives the mean and spread (the worked example)', () => {
    const d = distribution([0.5, 0.5, 0, 0, 0, 0, 0, 0, 0, 0], 1);
    expect(d.dist).toEqual([0.5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.5]);
    expect(d.mean).toBeCloseTo(5);
    expect(d.spread).toBeCloseTo(5);
    const sure = distribution([0, 2, 0, 0, 0, 0, 0, 0, 0, 0], 0.25); // unnormalised in, normalised out
    expect(sure.dist[1]).toBeCloseTo(0.75);
    expect(sure.dist[10]).toBeCloseTo(0.25);
  });
});

describe('pickUncertain', () => {
  const r = (spread: number | null): JudgeReading => ({ answer: '', score: 0, dist: spread === null ? null : [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], mean: 0, spread: spread ?? NaN });
  it('takes the largest spreads, an unreadable answer first, and says why', () => {
    const picks = pickUncertain([r(0.5), r(4), r(null), r(2)], 3);
    expect(picks.map((p) => p.index)).toEqual([2, 1, 3]);
    expect(picks[0].why).toMatch(/no score line/);
    expect(picks[1].why).toBe('spread 4.0 points: P(0) 1.00, P(1) .00');
  });
  it('random picks are distinct and seeded', () => {
    const a = pickRandom(10, 4, new Rng('x')).map((p) => p.index);
    expect(new Set(a).size).toBe(4);
    expect(pickRandom(10, 4, new Rng('x')).map((p) => p.index)).toEqual(a);
  });
});

describe('readJudge on the weak relay judge', () => {
  let readings: JudgeReading[] = [];
  beforeAll(async () => {
    await initBackend({ force: 'wasm' });
    const relay = await loadModel(folderSource(`${repoRoot}/models/relay`), { tokenizer: 'required' });
    const steps = await relayRatedSteps(new EngineAgents(relay, new Map(), 64), 2, relayHeldOut(2).slice(0, 8), { seed: 9 });
    relay.model.dispose();
    const judge = await loadModel(folderSource(`${repoRoot}/test/fixtures/relay-judge-weak`), { tokenizer: 'required' });
    readings = await readJudge(judge, steps.map((s) => coachPrompt(s.context, DEFAULT_COACH_TEMPLATE)));
    judge.model.dispose();
  }, 300_000);

  it('reads a distribution that sums to one, whose likeliest first digit is the one the judge wrote', () => {
    const read = readings.filter((r) => r.dist && r.score !== null);
    expect(read.length).toBeGreaterThan(10);
    for (const r of read) {
      expect(r.dist!.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 5);
      const first = r.dist!.slice(0, 10).map((p, d) => (d === 1 ? p + r.dist![10] : p));
      expect(first.indexOf(Math.max(...first))).toBe(Number(String(r.score)[0]));
    }
    expect(new Set(read.map((r) => r.spread.toFixed(3))).size).toBeGreaterThan(1);
  });
});
