// Every time the page states comes from a measurement on this machine (src/ui/pace.ts): a team's
// time per iteration is the median of the iterations this browser trained, and a different measurement
// gives a different figure; with none, the page says the team is not timed here, never a fixed string.
import { describe, expect, it } from 'vitest';
import { relayConfig } from '../../../src/core/domains/relay/team.ts';
import { iterationEstimate, largeRun, minutes, paceWords, sizeWords, teamPaces } from '../../../src/ui/pace.ts';
import { iterationSeconds } from '../../../src/core/loop/records.ts';
import { resolveTrainConfig } from '../../../src/core/domains/index.ts';

const it_ = (iteration: number, rollout: number, update: number, trajectories = 24) =>
  ({ iteration, trajectories, seconds: { rollout, coach: 1, update, eval: 99, checkpoint: 0 } });
const math = (metrics: ReturnType<typeof it_>[], updatedAt = 1000) => ({ team: { name: 'math-chain' }, updatedAt, metrics });

describe('a team\'s pace, measured', () => {
  it('an iteration is its rollouts, coaching, update and checkpoint (the evaluation alongside apart)', () => {
    expect(iterationSeconds(it_(3, 6, 5))).toBe(12);
    expect(iterationSeconds({ iteration: 0, seconds: { rollout: 3 } })).toBeNull(); // the untrained team's evaluation record
    expect(iterationSeconds({ iteration: 2 })).toBeNull();
  });

  it('is the median over the team\'s runs, so the figure the page shows follows the measurement', () => {
    const fast = teamPaces([math([it_(1, 6, 5), it_(2, 6, 4), it_(3, 30, 5)])]);
    expect(fast['math-chain']).toMatchObject({ secondsPerIteration: 12, rolloutsPerIteration: 24, iterations: 3, measuredAt: 1000 });
    expect(paceWords(fast['math-chain'], 'math')).toBe('math: 12 s an iteration here (median of 3)');
    // The same page on a slower machine (or a slower day): another measurement, another figure.
    const slow = teamPaces([math([it_(1, 40, 10), it_(2, 44, 10)]), { team: { name: 'data-team' }, metrics: [it_(1, 50, 9, 8)] }]);
    expect(paceWords(slow['math-chain'], 'math')).toBe('math: 53 s an iteration here (median of 2)');
    expect(paceWords(slow['data-team'], 'data')).toBe('data: 60 s an iteration here (median of 1)');
    expect(paceWords(fast['data-team'], 'data')).toBe('data: not timed on this machine yet');
  });

  it('says a run\'s size before it starts, and scales the measured time by its rollouts', () => {
    const c = resolveTrainConfig({});
    const pace = teamPaces([math([it_(1, 6, 5)])])['math-chain'];
    const rollouts = c.promptsPerIteration * c.samplesPerPrompt;
    expect(iterationEstimate(pace, 48)).toBe(24);
    expect(sizeWords(c, pace)).toBe(`${rollouts} rollouts an iteration (${c.promptsPerIteration} prompts × ${c.samplesPerPrompt} samples); about ${rollouts / 2} s an iteration here, ${Math.round(rollouts / 2 * c.iterations / 60)} minutes for ${c.iterations}, training only (the held-out evaluations come on top)`);
    expect(sizeWords(c, undefined)).toMatch(/not timed on this machine yet/);
  });

  it('asks about a 100,000-prompt run at the measured pace, or at the project\'s measured pace when this machine has none', () => {
    const big = resolveTrainConfig({ promptsPerIteration: 100_000 });
    const pace = teamPaces([math([it_(1, 6, 5)])])['math-chain'];
    const measured = largeRun(big, pace);
    expect(measured.large).toBe(true);
    expect(measured.message).toMatch(/^this run makes 200,000 rollouts an iteration, about \d+ (hours|days) an iteration .* at this machine's measured pace \(12 s for 24 rollouts of this team\)/);
    // Twice as fast here: half the days.
    const faster = largeRun(big, teamPaces([math([it_(1, 2.5, 2.5)])])['math-chain']);
    expect(faster.message).not.toBe(measured.message);
    expect(largeRun(big, undefined).message).toMatch(/at the pace the project measured on a 2-core CPU \(this team is not timed on this machine yet\)/);
    expect(largeRun(resolveTrainConfig({}), pace).large).toBe(false);
    // The math team's pool holds 400 prompts a level: an iteration asking for 100,000 picks 400, and the page says so.
    expect(sizeWords(big, pace, 400)).toMatch(/^800 rollouts an iteration \(400 prompts × 2 samples, of the 100,000 asked: the training pool holds 400\); about 7 minutes an iteration here/);
    expect(largeRun(big, pace, 400).large).toBe(false);
  });

  it('counts a tree of replays (reward counterfactual): its leaves are the rollouts, and says the generations a prompt costs', () => {
    const relay = resolveTrainConfig({ ...relayConfig(4), rewards: { mode: 'counterfactual' }, promptsPerIteration: 2, samplesPerPrompt: 1 });
    expect(sizeWords(relay, undefined)).toMatch(/^32 rollouts an iteration \(2 prompts × 1 samples, each a tree of replays: 16 leaves, 30 agent generations\); not timed/);
  });
});

describe('a training time in words, to the second', () => {
  it('seconds under 90, then minutes and seconds (90.4 s is not "2 min")', () => {
    expect(minutes(0.2)).toBe('1 s');
    expect(minutes(45.4)).toBe('45 s');
    expect(minutes(89.4)).toBe('89 s');
    expect(minutes(90.4)).toBe('1 min 30 s');
    expect(minutes(119.6)).toBe('2 min 00 s'); // rounded to the second first, never "1 min 60 s"
    expect(minutes(725)).toBe('12 min 05 s');
  });
});
