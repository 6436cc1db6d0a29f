// The luck floor's formulas against hand-worked numbers and against an independent reference: the exact
// distribution of the chain's error sum, built by convolving one step's error distribution N times on the dial.
import { describe, expect, it } from 'vitest';
import {
  luckShare, outcomePush, predictedRolloutRatio, relayLambda, rewardedShare, rewardedWithFloor, stepForTeam, wrongChainRight,
} from '../../../src/core/domains/relay/luck.ts';
import { relayStep } from '../../../src/core/domains/relay/tasks.ts';

/** One step's error on a dial of d: 0 with chance p, each other residue (1 - p) / (d - 1). */
const stepErrors = (p: number, d: number) => Array.from({ length: d }, (_, e) => (e === 0 ? p : (1 - p) / (d - 1)));

/** The distribution of e_1 + ... + e_n mod d, by convolution. */
function errorSum(p: number, n: number, d: number): number[] {
  let dist: number[] = Array.from({ length: d }, (_, e) => (e === 0 ? 1 : 0));
  const step = stepErrors(p, d);
  for (let i = 0; i < n; i++) {
    const next = new Array<number>(d).fill(0);
    dist.forEach((a, x) => step.forEach((b, e) => (next[(x + e) % d] += a * b)));
    dist = next;
  }
  return dist;
}

describe('the relay luck floor', () => {
  it('matches the hand-worked example', () => {
    expect(relayLambda(0.55)).toBeCloseTo(0.5, 12);
    expect(rewardedShare(0.55, 2)).toBeCloseTo(0.325, 12);
    expect(wrongChainRight(0.55, 2)).toBeCloseTo(0.0225 / 0.6975, 12);
    expect(rewardedWithFloor(0.55, 2, 0.0225 / 0.6975)).toBeCloseTo(0.325, 12);
    expect(outcomePush(0.55, 4)).toBeCloseTo(0.125, 12);
    expect(predictedRolloutRatio(0.55, 2)).toBeCloseTo((0.325 * 0.675) / (0.2475 * 0.25), 12);
    expect(predictedRolloutRatio(0.55, 1)).toBeCloseTo(1, 12); // one agent: outcome is its own step
    expect(rewardedShare(0.55, 32)).toBeCloseTo(0.1, 9);
    expect(luckShare(0.55, 32)).toBeGreaterThan(0.9999999);
  });

  it('one wrong step never ends right; a perfect team always does', () => {
    expect(wrongChainRight(0.7, 1)).toBeCloseTo(0, 12);
    expect(rewardedShare(1, 128)).toBeCloseTo(1, 12);
    expect(outcomePush(1, 128)).toBeCloseTo(1, 12);
  });

  it('agrees with the exact error-sum distribution for dials of 10 and 100', () => {
    for (const d of [10, 100]) {
      for (const p of [0.3, 0.55, 0.9]) {
        for (const n of [1, 2, 3, 8, 32]) {
          const sum = errorSum(p, n, d);
          expect(rewardedShare(p, n, d)).toBeCloseTo(sum[0], 10);
          // Outcome's push: P(right | step 1 right) - P(right | step 1 wrong), from the other n - 1 steps' sum.
          const rest = errorSum(p, n - 1, d);
          const givenWrong = stepErrors(p, d).reduce((s, w, e) => (e === 0 ? s : s + (w / (1 - p)) * rest[(d - e) % d]), 0);
          expect(outcomePush(p, n, d)).toBeCloseTo(rest[0] - givenWrong, 10);
        }
      }
    }
  });

  it('the relay really is a sum of errors on the dial: a chain whose errors cancel ends right', () => {
    // start 3, adds 4 then 5: the right digits are 7 then 2. Agent 1 replies 0 (error 0 - 7 = +3 mod 10); agent 2,
    // given "0 + 5", replies 2 where 5 is right (error 2 - 5 = +7 mod 10). The errors sum to 10 = 0 mod 10.
    const truth = relayStep(relayStep(3, 4), 5);
    const [reply1, reply2] = [0, 2];
    expect(relayStep(reply1, 5)).not.toBe(reply2); // step 2 is wrong given its input
    expect(reply1).not.toBe(relayStep(3, 4)); // step 1 is wrong
    expect(reply2).toBe(truth); // and the team's answer is right
    expect((((reply1 - relayStep(3, 4)) + (reply2 - relayStep(reply1, 5))) % 10 + 10) % 10).toBe(0);
  });

  it('inverts the rewarded share: the step accuracy a team needs for a team-accuracy target, worked by hand', () => {
    // (0.4 / 0.9)^(1/128) = 0.9936846; (9 x 0.9936846 + 1) / 10 = 0.9943162, below 0.5^(1/128) = 0.9945994 (every step right alone)
    expect(stepForTeam(0.5, 128)).toBeCloseTo(0.994316, 5);
    expect(stepForTeam(0.5, 128)).toBeLessThan(0.5 ** (1 / 128));
    for (const n of [1, 2, 16, 64, 128]) for (const t of [0.2, 0.5, 0.8]) expect(rewardedShare(stepForTeam(t, n), n)).toBeCloseTo(t, 10);
    expect(stepForTeam(0.05, 8)).toBe(0.1); // under the floor: chance level already reaches it
  });
});
