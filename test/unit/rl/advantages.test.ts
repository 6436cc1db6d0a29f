/** REINFORCE++ advantages on hand-worked examples. */
import { describe, expect, it } from 'vitest';
import { computeAdvantages, StateBaselines, type AdvantageInput } from '../../../src/core/rl/advantages.ts';

const s = (agent: string, reward: number, old: number[], ref = old.map(() => 0), extra: Partial<AdvantageInput> = {}): AdvantageInput =>
  ({ agent, reward, oldLogprobs: old, refLogprobs: ref, ...extra });

describe('computeAdvantages', () => {
  it('two one-token actions, rewards 1 and 0, no KL -> +1 and -1', () => {
    const out = computeAdvantages([s('a', 1, [0]), s('b', 0, [0])], { klCoef: 0, whitening: 'batch' });
    expect(out.returns).toEqual([[1], [0]]);
    expect(out.advantages[0][0]).toBeCloseTo(1, 6);
    expect(out.advantages[1][0]).toBeCloseTo(-1, 6);
  });

  it('folds the k1 KL into the per-token reward and sums returns with discount 1', () => {
    // Action of 3 tokens, reward 0.8 on the last; k1 = old - ref = [0.5, -0.25, 1]; coef 0.1.
    // r = [-0.05, 0.025, -0.1 + 0.8] -> G = [0.675, 0.725, 0.7]
    const out = computeAdvantages([s('a', 0.8, [-1, -2, -0.5], [-1.5, -1.75, -1.5])], { klCoef: 0.1, whitening: 'group' });
    // A single-sample group normalises its reward to 0, so only the KL part remains: G = [-0.125, -0.075, -0.1].
    expect(out.returns[0].map((x) => +x.toFixed(6))).toEqual([-0.125, -0.075, -0.1]);
    const batch = computeAdvantages([s('a', 0.8, [-1, -2, -0.5], [-1.5, -1.75, -1.5])], { klCoef: 0.1, whitening: 'batch' });
    expect(batch.returns[0].map((x) => +x.toFixed(6))).toEqual([0.675, 0.725, 0.7]);
    // Whitening over the 3 tokens: mean 0.7, std sqrt(((-.025)^2 + .025^2 + 0)/3) = 0.0204124
    const std = Math.sqrt((0.025 ** 2 * 2) / 3);
    expect(batch.advantages[0][0]).toBeCloseTo(-0.025 / std, 4);
    expect(batch.advantages[0][1]).toBeCloseTo(0.025 / std, 4);
    expect(batch.advantages[0][2]).toBeCloseTo(0, 4);
    expect(batch.meanKl).toBeCloseTo((0.5 - 0.25 + 1) / 3, 10);
  });

  it('state whitening: each reward against the baseline of its own input (else the batch mean of its agent), over the batch std', () => {
    // a's first input has earned 1 before and is right again: (1 - 1) = 0. Its second input has earned 0.5: a right
    // reply gets +0.5. b's input is new: its baseline is b's batch mean, (0 + 1) / 2 = 0.5, so -0.5 and +0.5.
    const xs = [s('a', 1, [0], [0], { baseline: 1 }), s('a', 1, [0], [0], { baseline: 0.5 }), s('b', 0, [0]), s('b', 1, [0])];
    const out = computeAdvantages(xs, { klCoef: 0, whitening: 'state' });
    // centred [0, 0.5, -0.5, 0.5]: mean 0.125, std sqrt((0.125^2 + 2 * 0.375^2 + 0.625^2) / 4) = 0.41458; no mean taken out.
    const std = Math.sqrt((0.125 ** 2 + 2 * 0.375 ** 2 + 0.625 ** 2) / 4);
    expect(out.advantages.map((a) => a[0])).toEqual([0, 0.5 / std, -0.5 / std, 0.5 / std].map((x) => expect.closeTo(x, 5)));
  });

  it('StateBaselines: the mean reward of an agent\'s exact input over its last few samples, per agent', () => {
    const b = new StateBaselines(2);
    const x = (agent: string, prompt: number[], reward = 0) => ({ agent, prompt, reward });
    expect(b.attach([x('a', [1])])[0].baseline).toBeUndefined();
    b.record([x('a', [1], 1), x('a', [1], 0), x('b', [1], 1)]);
    expect(b.attach([x('a', [1]), x('b', [1]), x('a', [2])]).map((y) => y.baseline)).toEqual([0.5, 1, undefined]);
    b.record([x('a', [1], 1)]); // a window of 2: 0.5 + (1 - 0.5) / 2
    expect(b.attach([x('a', [1])])[0].baseline).toBe(0.75);
    const again = new StateBaselines(2); // as a resumed run restores them from its checkpoint
    again.restore(b.entries());
    again.record([x('a', [1], 0)]);
    b.record([x('a', [1], 0)]);
    expect(again.entries()).toEqual(b.entries());
  });

  it('per-token shaping rewards add to the returns', () => {
    const out = computeAdvantages([s('a', 1, [0, 0], [0, 0], { tokenRewards: [0.3, 0] })], { klCoef: 0, whitening: 'group' });
    // group of one: scalar reward -> 0; returns = [0.3, 0]
    expect(out.returns[0].map((x) => +x.toFixed(6))).toEqual([0.3, 0]);
  });

  it('batch whitening pools all agents; agent whitening pools each agent alone', () => {
    const xs = [s('a', 1, [0]), s('a', 0, [0]), s('b', 10, [0]), s('b', 8, [0])];
    const batch = computeAdvantages(xs, { klCoef: 0, whitening: 'batch' });
    // pooled mean 4.75, std sqrt(((3.75)^2 + 4.75^2 + 5.25^2 + 3.25^2)/4)
    const std = Math.sqrt((3.75 ** 2 + 4.75 ** 2 + 5.25 ** 2 + 3.25 ** 2) / 4);
    expect(batch.advantages.map((a) => a[0])).toEqual([(1 - 4.75) / std, (0 - 4.75) / std, (10 - 4.75) / std, (8 - 4.75) / std].map((x) => expect.closeTo(x, 6)));
    const agent = computeAdvantages(xs, { klCoef: 0, whitening: 'agent' });
    expect(agent.advantages.map((a) => a[0])).toEqual([1, -1, 1, -1].map((x) => expect.closeTo(x, 6)));
  });

  it('GRPO-style groups normalise rewards within each prompt group', () => {
    const xs = [s('a', 1, [0], [0], { group: 'p1' }), s('a', 0, [0], [0], { group: 'p1' }), s('a', 0.5, [0], [0], { group: 'p2' }), s('a', 0.5, [0], [0], { group: 'p2' })];
    const out = computeAdvantages(xs, { klCoef: 0, whitening: 'group' });
    expect(out.advantages.map((a) => a[0])).toEqual([1, -1, 0, 0].map((x) => expect.closeTo(x, 4)));
  });

  it('truncated actions get zero advantage and do not enter the statistics', () => {
    const out = computeAdvantages([s('a', 1, [0]), s('a', 0, [0]), s('a', 100, [0, 0], [0, 0], { truncated: true })], { klCoef: 0, whitening: 'batch' });
    expect(out.advantages[2]).toEqual([0, 0]);
    expect(out.advantages[0][0]).toBeCloseTo(1, 6);
  });
});
