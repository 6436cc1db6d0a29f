import { describe, expect, it } from 'vitest';
import {
  evalTasksFor, fitLine, parseScaleArgs, rolloutsToTarget, rolloutsToTeamTarget, seedsFor, RECIPE_PER_ITERATION, SCALE_DEFAULTS,
} from '../../../bench/scale-report.ts';
import { scaleConfig } from '../../../bench/scale.ts';
import { relayConfigFile } from '../../../src/core/domains/relay/team.ts';

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

  it('reads rollouts to the team target from two held-out evaluations in a row, worked by hand', () => {
    const evals = [{ iteration: 3, team: 0.3 }, { iteration: 6, team: 0.55 }, { iteration: 9, team: 0.6 }];
    // 3 and 6 average 0.425; 6 and 9 average 0.575: reached at iteration 9 = 576 rollouts of 64
    expect(rolloutsToTeamTarget(evals, 0.5, 64)).toBe(576);
    // one lucky evaluation is not enough
    expect(rolloutsToTeamTarget([{ iteration: 3, team: 0.6 }, { iteration: 6, team: 0.3 }], 0.5, 64)).toBeNull();
    // a run's only evaluation counts alone
    expect(rolloutsToTeamTarget([{ iteration: 10, team: 0.5 }], 0.5, 16)).toBe(160);
  });

  it('--recipe runs every N on the shipped relay recipe, evaluated greedily every --eval-every iterations', () => {
    const o = parseScaleArgs(['--recipe', '--rollouts', '640', '--eval-every', '2']);
    expect(o).toMatchObject({ recipe: true, arms: ['judge', 'outcome'], seedsFrom: null, rollouts: 640, evalEvery: 2, teamTarget: 0.5 });
    const c = scaleConfig(128, 'judge', 1, o);
    const shipped = relayConfigFile(128) as Record<string, unknown>;
    expect(c.promptsPerIteration * c.samplesPerPrompt).toBe(RECIPE_PER_ITERATION);
    expect(c).toMatchObject({ iterations: 10, evalEvery: 2, evalTemperature: 0, seed: 1, update: shipped.update, lr: shipped.lr });
    expect(c.coach.kind).toBe('model');
    expect(scaleConfig(4, 'outcome', 0, o)).toMatchObject({ rewards: { mode: 'outcome' }, coach: { kind: 'rule' }, update: shipped.update });
    expect(() => parseScaleArgs(['--recipe', '--rollouts', '96'])).toThrow(/--rollouts must be a multiple of 64/);
    expect(() => parseScaleArgs(['--team-target', '50'])).toThrow(/--team-target is a team accuracy in \(0, 1\]/);
  });
});
