import { describe, expect, it } from 'vitest';
import { evalTasksFor, fitLine, parseScaleArgs, rolloutsToTarget, seedsFor, SCALE_DEFAULTS } from '../../../bench/scale-report.ts';

describe('bench scale: the sizing and the reading of its runs', () => {
  it('reads rollouts to the target from the trailing mean of the training step accuracy, worked by hand', () => {
    // window 2: iterations 1-2 average 0.575, 2-3 0.65 (reached at iteration 3 = 48 rollouts)
    expect(rolloutsToTarget([0.55, 0.6, 0.7, 0.72], 0.65, 2, 16)).toBe(48);
    // window 1: the first iteration at or over the target
    expect(rolloutsToTarget([0.55, 0.66, 0.6], 0.65, 1, 16)).toBe(32);
    // never within the budget
    expect(rolloutsToTarget([0.55, 0.6, 0.62], 0.65, 3, 16)).toBeNull();
    // a run shorter than the window averages all it has, only at its end
    expect(rolloutsToTarget([0.7, 0.7], 0.65, 3, 16)).toBe(32);
  });

  it('aims every held-out evaluation at about the same number of steps, at most the 200 held-out tasks', () => {
    expect(evalTasksFor(2, 800)).toBe(200);
    expect(evalTasksFor(2, SCALE_DEFAULTS.evalSteps)).toBe(200);
    expect(evalTasksFor(8, 800)).toBe(100);
    expect(evalTasksFor(128, 800)).toBe(7);
  });

  it('runs the large teams at the seeds --seeds-from names', () => {
    const o = parseScaleArgs(['--seeds', '0,1,2', '--seeds-from', '64=0']);
    expect(seedsFor(32, o)).toEqual([0, 1, 2]);
    expect(seedsFor(64, o)).toEqual([0]);
    expect(seedsFor(128, parseScaleArgs(['--seeds-from', 'none']))).toEqual(SCALE_DEFAULTS.seeds);
  });

  it('refuses a bad option in one line naming it', () => {
    expect(() => parseScaleArgs(['--rollouts', '20'])).toThrow(/--rollouts must be a multiple of 16/);
    expect(() => parseScaleArgs(['--agents', '200'])).toThrow(/--agents takes whole numbers in 1..128/);
    expect(() => parseScaleArgs(['--seeds-from', '64'])).toThrow(/--seeds-from takes N=SEEDS/);
    expect(() => parseScaleArgs(['--arms', 'judge,counterfactual'])).toThrow(/--arms takes judge,rule,outcome,groups/);
  });

  it('fits a line by least squares', () => {
    expect(fitLine([2, 4, 8], [1, 2, 4])).toEqual({ slope: 0.5, intercept: 0 });
  });
});
