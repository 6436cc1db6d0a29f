// The credit view's columns (src/core/lab/credit-per-action.ts) on hand-worked batches: state groups on the worked
// example of rl/state-groups.ts, counterfactual replays on the worked example of rl/counterfactual.ts (a
// tree whose leaves share their ancestors' actions: counted once, as the update trains them once), and a
// batch that is no tree, which has no counterfactual column. The values come from the loop's own
// iterationCredit (loop/rewards.ts), so they are what training would give these actions.
import { describe, expect, it } from 'vitest';
import { actionKeys, batchAdvantages, creditTable, isTree, stateGroupSizes, wholeBatchCredit } from '../../../src/core/lab/credit-per-action.ts';
import type { ActionView, TrajectoryView } from '../../../src/core/lab/views.ts';
import { counterfactualCredit } from '../../../src/core/rl/counterfactual.ts';
import { stateGroupCredit } from '../../../src/core/rl/state-groups.ts';

const act = (agentId: string, input: string, text: string, score?: number): ActionView => ({
  agentId, role: agentId, turn: 1, messages: [{ role: 'user', content: input }], text, tokens: 1, truncated: false,
  ...(score === undefined ? {} : { coach: { raw: '', score, ok: true, attempts: 1 } }),
});
const traj = (sample: number, actions: ActionView[], correct: boolean, branch?: number[]): TrajectoryView => ({
  task: { id: 'p', problem: '3 + 4 + 5', answer: '2' }, sample, actions, finalAnswer: null, correct, ...(branch ? { branch } : {}),
});
/** (x - mean) / std over the values (population std), as REINFORCE++'s batch whitening. */
function whiten(values: number[]): number[] {
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  const std = Math.sqrt(values.reduce((a, v) => a + (v - mean) ** 2, 0) / values.length);
  return values.map((v) => (v - mean) / (std + 1e-8));
}

// rl/state-groups.ts's example: one prompt, two samples; agent 1 sees "3 + 4" in both, agent 2 sees
// "7 + 5" in the first and "3 + 5" in the second; outcomes 1 and 0.
const GROUPS = [
  traj(0, [act('agent1', '3 + 4', '7', 10), act('agent2', '7 + 5', '2', 10)], true),
  traj(1, [act('agent1', '3 + 4', '3', 0), act('agent2', '3 + 5', '8', 10)], false),
];

// rl/counterfactual.ts's example: fan-outs [2, 2]; agent 1 replies twice, agent 2 twice to each; only leaf [0, 0] is right.
const A1 = [act('agent1', '3 + 4', '7', 10), act('agent1', '3 + 4', '3', 0)];
const leaf = (b1: number, b2: number, text: string, right: boolean) =>
  traj(0, [A1[b1], act('agent2', `${A1[b1].text} + 5`, text, right ? 10 : 0)], right, [b1, b2]);
const TREE = [leaf(0, 0, '2', true), leaf(0, 1, '7', false), leaf(1, 0, '3', false), leaf(1, 1, '8', false)];

describe('the credit view: state groups', () => {
  it('gives the worked example of rl/state-groups.ts, through the loop\'s own credit', () => {
    expect(wholeBatchCredit(GROUPS, 'groups')).toEqual([[2, 1], [-2, -1]]);
    // The same as the method itself on the same groups.
    expect(stateGroupCredit([
      { prompt: 'p', outcome: 1, states: ['agent1|3 + 4', 'agent2|7 + 5'] },
      { prompt: 'p', outcome: 0, states: ['agent1|3 + 4', 'agent2|3 + 5'] },
    ])).toEqual([[2, 1], [-2, -1]]);
    expect(stateGroupSizes(GROUPS)).toEqual([[2, 1], [2, 1]]);
  });

  it('draws process, outcome and groups side by side, and no counterfactual column for a batch with no replays', () => {
    const t = creditTable(GROUPS, 1, 0.5);
    expect(isTree(GROUPS)).toBe(false);
    expect(t.tree).toBe(false);
    expect(t.columns.map((c) => c.mode)).toEqual(['process', 'outcome', 'groups']);
    const [process, outcome, groups] = t.columns;
    expect(process.rewards).toEqual([0, 1]); // the coach blames agent 1 alone
    expect(outcome.rewards).toEqual([0, 0]); // outcome blames both
    expect(groups.rewards).toEqual([-2, -1]);
    // Advantages: the credit whitened over the batch's four actions.
    const w = whiten([2, 1, -2, -1]);
    expect(groups.advantages[0]).toBeCloseTo(w[2], 6);
    expect(groups.advantages[1]).toBeCloseTo(w[3], 6);
    expect(t.groupSizes).toEqual([2, 1]);
  });
});

describe('the credit view: counterfactual replays', () => {
  it('gives the worked example of rl/counterfactual.ts on a tree of views', () => {
    expect(isTree(TREE)).toBe(true);
    const expected = [[0.5, 1], [0.5, -1], [-0.5, 0], [-0.5, 0]];
    expect(counterfactualCredit(TREE.map((t) => ({ prompt: 'p#0', path: t.branch!, outcome: t.correct ? 1 : 0 })))).toEqual(expected);
    expect(wholeBatchCredit(TREE, 'counterfactual')).toEqual(expected);
  });

  it('counts a shared ancestor once: the tree\'s six distinct actions, not its eight rows', () => {
    const keys = actionKeys(TREE);
    expect(keys[0][0]).toBe(keys[1][0]); // agent 1's first reply, shared by leaves [0, 0] and [0, 1]
    expect(new Set(keys.flat()).size).toBe(6);
    const credit = wholeBatchCredit(TREE, 'counterfactual');
    const adv = batchAdvantages(TREE, (_, __, i, j) => credit[i][j]);
    const w = whiten([0.5, 1, -1, -0.5, 0, 0]); // distinct nodes: [0], [0,0], [0,1], [1], [1,0], [1,1]
    expect(adv[0][0]).toBeCloseTo(w[0], 6);
    expect(adv[1][0]).toBeCloseTo(w[0], 6);
    expect(adv[0][1]).toBeCloseTo(w[1], 6);
    expect(adv[2][0]).toBeCloseTo(w[3], 6);
  });

  it('adds the counterfactual column when the batch is a tree', () => {
    const t = creditTable(TREE, 1, 0.5);
    expect(t.tree).toBe(true);
    expect(t.columns.map((c) => c.mode)).toEqual(['process', 'outcome', 'groups', 'counterfactual']);
    const cf = t.columns[3];
    expect(cf.rewards).toEqual([0.5, -1]); // agent 1's reply led to a right answer half the time; agent 2's sibling did better
    expect(t.columns[1].rewards).toEqual([0, 0]);
    expect(t.columns[0].rewards).toEqual([1, 0]);
  });
});
