/** bench/credit.ts: its options, and one budget of generations for every method. */
import { describe, expect, it } from 'vitest';
import { costToTarget, creditConfig, parseCreditArgs, type CreditRun } from '../../../bench/credit.ts';
import { treeCost } from '../../../src/core/rl/counterfactual.ts';

describe('bench credit', () => {
  it('parses its options and refuses unknown methods by name', () => {
    expect(parseCreditArgs([])).toMatchObject({ methods: ['outcome', 'process', 'counterfactual', 'groups'], agents: [2, 4, 6], seeds: [0, 1, 2], target: 0.65 });
    expect(parseCreditArgs(['--methods', 'outcome,groups', '--agents', '4'])).toMatchObject({ methods: ['outcome', 'groups'], agents: [4] });
    expect(() => parseCreditArgs(['--methods', 'vibes'])).toThrow(/--methods takes outcome,process,counterfactual,groups/);
  });

  it.each([2, 4, 6])('gives every method about 640 x N generations at N = %i, evaluated about every 80 N', (n) => {
    const plain = creditConfig(n, 'outcome', 0, {});
    const plainBudget = plain.iterations * plain.promptsPerIteration * plain.samplesPerPrompt * n;
    expect(plainBudget).toBe(640 * n);
    const cf = creditConfig(n, 'counterfactual', 0, {});
    expect(cf.rewards.fanOut).toEqual(new Array(n).fill(2));
    const perIteration = cf.promptsPerIteration * treeCost(cf.rewards.fanOut).generations;
    expect(Math.abs(cf.iterations * perIteration - plainBudget) / plainBudget).toBeLessThan(0.12);
    expect(Math.abs(cf.evalEvery * perIteration - 80 * n) / (80 * n)).toBeLessThan(0.4);
  });

  it('reads the generations to the target, or none within the budget', () => {
    const run = { baseline: { step: 0.5 }, evals: [{ step: 0.6, generations: 100, seconds: 5 }, { step: 0.7, generations: 200, seconds: 9 }] } as unknown as CreditRun;
    expect(costToTarget(run, 0.65, 'generations')).toBe(200);
    expect(costToTarget(run, 0.65, 'seconds')).toBe(9);
    expect(costToTarget(run, 0.9, 'generations')).toBeNull();
  });
});
