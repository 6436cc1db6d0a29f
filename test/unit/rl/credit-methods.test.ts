/** Coach-free credit methods on hand-worked trees and groups (src/core/rl/counterfactual.ts, state-groups.ts). */
import { describe, expect, it } from 'vitest';
import { counterfactualCredit, treeCost, type TreeLeaf } from '../../../src/core/rl/counterfactual.ts';
import { groupStats, stateGroupCredit, type GroupedTrajectory } from '../../../src/core/rl/state-groups.ts';

describe('counterfactual replays (leave-one-out over a prompt tree)', () => {
  it('reproduces the docstring example: fan-outs [2, 2], one leaf right', () => {
    const leaves: TreeLeaf[] = [
      { prompt: 'p', path: [0, 0], outcome: 1 }, { prompt: 'p', path: [0, 1], outcome: 0 },
      { prompt: 'p', path: [1, 0], outcome: 0 }, { prompt: 'p', path: [1, 1], outcome: 0 },
    ];
    expect(counterfactualCredit(leaves)).toEqual([[0.5, 1], [0.5, -1], [-0.5, 0], [-0.5, 0]]);
  });

  it('leaves itself out: with three siblings, a node is compared with the mean of the other two', () => {
    // fan-outs [3, 1]: V = 1, 0, 0 -> A = 1 - mean(0, 0) = 1, 0 - mean(1, 0) = -0.5, and -0.5
    const leaves: TreeLeaf[] = [
      { prompt: 'q', path: [0, 0], outcome: 1 }, { prompt: 'q', path: [1, 0], outcome: 0 }, { prompt: 'q', path: [2, 0], outcome: 0 },
    ];
    const a = counterfactualCredit(leaves);
    expect(a.map((x) => x[0])).toEqual([1, -0.5, -0.5]);
    expect(a.map((x) => x[1])).toEqual([0, 0, 0]); // fan-out 1: no sibling, no counterfactual
  });

  it('keeps prompts apart, and a deeper subtree averages its leaves', () => {
    const leaves: TreeLeaf[] = [
      // prompt a, fan-outs [2, 2]: subtree [0] has mean 1, subtree [1] mean 0.5
      { prompt: 'a', path: [0, 0], outcome: 1 }, { prompt: 'a', path: [0, 1], outcome: 1 },
      { prompt: 'a', path: [1, 0], outcome: 1 }, { prompt: 'a', path: [1, 1], outcome: 0 },
      // prompt b: all wrong -> all zero credit
      { prompt: 'b', path: [0, 0], outcome: 0 }, { prompt: 'b', path: [1, 0], outcome: 0 },
    ];
    const a = counterfactualCredit(leaves);
    expect(a[0]).toEqual([0.5, 0]);
    expect(a[2]).toEqual([-0.5, 1]);
    expect(a[3]).toEqual([-0.5, -1]);
    expect(a.slice(4)).toEqual([[0, 0], [0, 0]]);
  });

  it('counts a tree\'s generations and leaves', () => {
    expect(treeCost([2, 2, 1, 1])).toEqual({ generations: 14, leaves: 4 });
    expect(treeCost([1, 1, 1])).toEqual({ generations: 3, leaves: 1 });
    expect(treeCost([2, 4])).toEqual({ generations: 10, leaves: 8 });
  });
});

describe('state groups (GiGPO: same agent, same input)', () => {
  it('reproduces the docstring example', () => {
    const trajs: GroupedTrajectory[] = [
      { prompt: 'p', outcome: 1, states: ['agent1|3 + 4', 'agent2|7 + 5'] },
      { prompt: 'p', outcome: 0, states: ['agent1|3 + 4', 'agent2|3 + 5'] },
    ];
    expect(stateGroupCredit(trajs)).toEqual([[2, 1], [-2, -1]]);
    expect(groupStats(trajs)).toEqual({ steps: 4, groups: 3, meanGroupSize: (2 * 2 + 1 + 1) / 4, sharedShare: 0.5 });
  });

  it('groups across prompts, and a group whose outcomes agree gives no step signal', () => {
    const trajs: GroupedTrajectory[] = [
      { prompt: 'p', outcome: 1, states: ['a|x'] },
      { prompt: 'p', outcome: 1, states: ['a|x'] },
      { prompt: 'q', outcome: 0, states: ['a|x'] },
      { prompt: 'q', outcome: 1, states: ['a|y'] },
    ];
    // Episode: p all alike -> 0, 0; q: mean 0.5, std 0.5 -> -1, +1.
    // State a|x: outcomes 1, 1, 0 -> mean 2/3, std sqrt(2/9) -> (1/3)/0.4714 = 0.7071 twice, -1.4142; a|y alone -> 0.
    const a = stateGroupCredit(trajs).map((r) => r[0]);
    expect(a[0]).toBeCloseTo(Math.SQRT1_2, 6);
    expect(a[1]).toBeCloseTo(Math.SQRT1_2, 6);
    expect(a[2]).toBeCloseTo(-1 - Math.SQRT2, 6);
    expect(a[3]).toBeCloseTo(1, 6);
    expect(stateGroupCredit(trajs, 0).map((r) => r[0])).toEqual([0, 0, -1, 1]); // weight 0: the episode advantage alone
  });
});
