/**
 * Counterfactual credit by leave-one-out replays (C3, arXiv 2603.06859): the iteration's rollouts of a
 * prompt form a prefix tree. At each agent's turn the transcript so far is frozen and K continuations
 * are sampled (the fan-out of that agent), so every decision has siblings: the other replies the same
 * agent gave to the same frozen input. A decision's value is the mean outcome of the leaves under it;
 * its advantage is that value minus the mean value of its siblings, leaving itself out. Credit comes
 * from outcomes alone, with no coach and no hand-written reward.
 *
 *   V(node)  = mean outcome of the leaves in its subtree
 *   A(node)  = V(node) - mean_{s in siblings(node), s != node} V(s)       (0 when it has no sibling)
 *
 * Worked example (one prompt, fan-outs [2, 2]: agent 1 replies twice, agent 2 twice to each):
 *   leaves (path -> outcome): [0,0] -> 1, [0,1] -> 0, [1,0] -> 0, [1,1] -> 0
 *   agent 1:  V([0]) = 0.5, V([1]) = 0             -> A([0]) = +0.5, A([1]) = -0.5
 *   agent 2:  under [0]: V = 1 and 0               -> A([0,0]) = +1, A([0,1]) = -1
 *             under [1]: V = 0 and 0               -> A([1,0]) = 0,  A([1,1]) = 0
 *   counterfactualCredit(leaves) -> [[0.5, 1], [0.5, -1], [-0.5, 0], [-0.5, 0]]
 *
 * For: loop/rewards.ts (the `counterfactual` reward mode) on the trajectories of a tree-shaped rollout
 * (loop/rollout.ts, `fanOut`). Not for: the rollout itself, or folding in the KL (advantages.ts).
 */

/** One leaf of a prompt's tree: its prompt (a tree per prompt), the child taken at each agent's turn, and its outcome. */
export interface TreeLeaf {
  prompt: string;
  /** path[i]: which of agent i's replies (0 .. fan-out - 1) this leaf continues. */
  path: number[];
  /** The team's outcome at this leaf (1 right, 0 wrong; any number works). */
  outcome: number;
}

/** A node's key: its prompt and the path down to it (depth = path length). */
function nodeKey(prompt: string, path: readonly number[]): string {
  return `${prompt}\u0000${path.join('.')}`;
}

/**
 * Per leaf, per agent turn (depth), the advantage of the decision taken there: its subtree's mean
 * outcome minus its siblings' mean, itself left out. Leaves must have paths of one length per prompt.
 */
export function counterfactualCredit(leaves: TreeLeaf[]): number[][] {
  // Sum and count of outcomes under every node.
  const sums = new Map<string, { sum: number; n: number }>();
  for (const leaf of leaves) {
    for (let d = 1; d <= leaf.path.length; d++) {
      const k = nodeKey(leaf.prompt, leaf.path.slice(0, d));
      const s = sums.get(k) ?? { sum: 0, n: 0 };
      s.sum += leaf.outcome;
      s.n += 1;
      sums.set(k, s);
    }
  }
  // The children of every parent (their last index), to find each node's siblings.
  const children = new Map<string, Set<number>>();
  for (const leaf of leaves) {
    for (let d = 0; d < leaf.path.length; d++) {
      const parent = nodeKey(leaf.prompt, leaf.path.slice(0, d));
      (children.get(parent) ?? children.set(parent, new Set()).get(parent)!).add(leaf.path[d]);
    }
  }
  const value = (prompt: string, path: number[]) => {
    const s = sums.get(nodeKey(prompt, path))!;
    return s.sum / s.n;
  };
  const memo = new Map<string, number>();
  return leaves.map((leaf) => leaf.path.map((_, d) => {
    const here = leaf.path.slice(0, d + 1);
    const key = nodeKey(leaf.prompt, here);
    const known = memo.get(key);
    if (known !== undefined) return known;
    const parentPath = leaf.path.slice(0, d);
    const others = [...children.get(nodeKey(leaf.prompt, parentPath))!].filter((c) => c !== leaf.path[d]);
    const a = others.length ? value(leaf.prompt, here) - others.reduce((s, c) => s + value(leaf.prompt, [...parentPath, c]), 0) / others.length : 0;
    memo.set(key, a);
    return a;
  }));
}

/**
 * The generations a tree of these fan-outs costs per prompt, and its leaves: agent i generates once
 * per node at its depth (the product of the fan-outs up to and including its own).
 * Example: fan-outs [2, 2, 1, 1] -> generations 2 + 4 + 4 + 4 = 14, leaves 4 (independent samples:
 *          4 leaves x 4 agents = 16 generations).
 */
export function treeCost(fanOut: readonly number[]): { generations: number; leaves: number } {
  let width = 1;
  let generations = 0;
  for (const k of fanOut) {
    width *= k;
    generations += width;
  }
  return { generations, leaves: width };
}
