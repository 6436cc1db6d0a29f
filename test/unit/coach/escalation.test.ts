/** Which actions a tiered coach escalates (coach/escalation.ts), on hand-worked examples. */
import { describe, expect, it } from 'vitest';
import { escalationCount, pickEscalations } from '../../../src/core/coach/escalation.ts';
import { Rng } from '../../../src/core/stats/rng.ts';

const rng = () => new Rng('escalation-test');

describe('escalationCount', () => {
  it('rounds the budget share of the actions', () => {
    expect(escalationCount(64, 0.05)).toBe(3); // 3.2
    expect(escalationCount(64, 0.1)).toBe(6); // 6.4
    expect(escalationCount(64, 0.2)).toBe(13); // 12.8
    expect(escalationCount(64, 0.5)).toBe(32);
    expect(escalationCount(64, 0)).toBe(0);
    expect(escalationCount(3, 1)).toBe(3);
  });
});

describe('pickEscalations', () => {
  const scores = [9, 2, 6, 8];
  const spreads = [0.5, 3, 4.2, 1];

  it('spread: the largest spreads first, the budget spent', () => {
    expect(pickEscalations({ scores, spreads }, { budget: 0.5, pick: 'spread', threshold: 0 }, rng())).toEqual([2, 1]);
    expect(pickEscalations({ scores, spreads }, { budget: 1, pick: 'spread', threshold: 0 }, rng())).toEqual([2, 1, 3, 0]);
  });

  it('spread with a threshold: only spreads at or above it, the budget a ceiling', () => {
    expect(pickEscalations({ scores, spreads }, { budget: 0.5, pick: 'spread', threshold: 3.5 }, rng())).toEqual([2]);
    expect(pickEscalations({ scores, spreads }, { budget: 0.5, pick: 'spread', threshold: 3 }, rng())).toEqual([2, 1]);
    expect(pickEscalations({ scores, spreads }, { budget: 0.5, pick: 'spread', threshold: 5 }, rng())).toEqual([]);
  });

  it('spread: an unreadable answer (NaN) is the least sure of all; ties keep the order of the batch', () => {
    expect(pickEscalations({ scores, spreads: [1, NaN, 1, 0] }, { budget: 0.75, pick: 'spread', threshold: 0 }, rng())).toEqual([1, 0, 2]);
  });

  it('random: k distinct actions, the same for the same seed', () => {
    const a = pickEscalations({ scores: new Array(20).fill(5) }, { budget: 0.25, pick: 'random', threshold: 0 }, rng());
    expect(a).toHaveLength(5);
    expect(new Set(a).size).toBe(5);
    expect(pickEscalations({ scores: new Array(20).fill(5) }, { budget: 0.25, pick: 'random', threshold: 0 }, rng())).toEqual(a);
  });

  it('first-wrong: per failed chain the first step scored below 5, else its lowest; the rest of the budget at random', () => {
    // chain 0 (failed): steps scored 9, 2, 1 -> its step 1 (action 1), the first below 5, not the lowest (action 2)
    // chain 1 (right): never picked first
    // chain 2 (failed): steps scored 8, 6, 7 -> none below 5: its lowest, step 1 (action 7)
    const s = [9, 2, 1, 3, 3, 3, 8, 6, 7];
    const places = [0, 1, 2].flatMap((chain) => [0, 1, 2].map((step) => ({ chain, step, failed: chain !== 1 })));
    const two = pickEscalations({ scores: s, places }, { budget: 2 / 9, pick: 'first-wrong', threshold: 0 }, rng());
    expect([...two].sort()).toEqual([1, 7]);
    const three = pickEscalations({ scores: s, places }, { budget: 3 / 9, pick: 'first-wrong', threshold: 0 }, rng());
    expect([...three.slice(0, 2)].sort()).toEqual([1, 7]);
    expect([1, 7]).not.toContain(three[2]);
    // A budget below the failed chains: one step each of some of them.
    const one = pickEscalations({ scores: s, places }, { budget: 1 / 9, pick: 'first-wrong', threshold: 0 }, rng());
    expect([1, 7]).toContain(one[0]);
  });

  it('refuses a rule without what it reads', () => {
    expect(() => pickEscalations({ scores }, { budget: 0.5, pick: 'spread', threshold: 0 }, rng())).toThrow(/spreads/);
    expect(() => pickEscalations({ scores }, { budget: 0.5, pick: 'first-wrong', threshold: 0 }, rng())).toThrow(/place/);
  });
});
