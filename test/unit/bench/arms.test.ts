/**
 * bench arms (bench/arms.ts): options, and the report's pooled accuracies and paired differences
 * against hand-worked counts.
 */
import { describe, expect, it } from 'vitest';
import { armsReport, parseArmsArgs } from '../../../bench/arms.ts';
import type { RunSummary } from '../../../src/cli/compare.ts';

const T = true, F = false;
function run(greedy: boolean[], sampled: boolean[], ids = ['a', 'b', 'c', 'd']): RunSummary {
  const r = { dir: '', label: '', reward: 'process', seed: 0, iterations: 1, plannedIterations: 1, rollouts: 8, baseline: null, evals: [] };
  return { run: r, target: null, rolloutsToTarget: null, final: { iteration: 1, rollouts: 8, greedy: 0, sampled: 0, perTask: { ids, greedy, sampled } },
    bestGreedy: null, finalGreedyInterval: null, finalSampledInterval: null };
}

describe('bench arms', () => {
  it('parses arms and seeds, and refuses what it cannot read', () => {
    expect(parseArmsArgs(['--arm', 'judge=runs/j/process', '--arm', 'outcome=runs/r/outcome', '--seeds', '0,1'])).toEqual({
      arms: [{ label: 'judge', prefix: 'runs/j/process' }, { label: 'outcome', prefix: 'runs/r/outcome' }], seeds: [0, 1] });
    expect(() => parseArmsArgs(['--arm', 'judge=x'])).toThrow(/at least two/);
    expect(() => parseArmsArgs(['--arm', 'judge'])).toThrow(/LABEL=FOLDER_PREFIX/);
    expect(() => parseArmsArgs(['--seeds', 'a', '--arm', 'a=x', '--arm', 'b=y'])).toThrow(/whole numbers/);
  });

  it('pools each arm and pairs every two arms problem by problem', () => {
    // seed 0: A greedy 3/4, B 1/4; seed 1: A 2/4, B 2/4 (problems listed in another order); C has seed 0 only.
    const a = [run([T, T, T, F], [T, F, F, F]), run([T, T, F, F], [F, F, F, F])];
    const b = [run([T, F, F, F], [F, F, F, F]), run([F, F, T, T], [F, F, F, F], ['d', 'c', 'b', 'a'])];
    const c = [run([F, F, F, F], [F, F, F, F]), null];
    const text = armsReport([{ label: 'A', runs: a }, { label: 'B', runs: b }, { label: 'C', runs: c }], [0, 1]).join('\n');
    expect(text).toMatch(/\| A \| 2 \| 62.5 % \[30.6, 86.3\] of 8 \| 12.5 % /);
    expect(text).toMatch(/\| A - B \| seed 0 \(4 problems\) \| 75.0 % \| 25.0 % \| \+50.0 pts/);
    expect(text).toMatch(/\| A - B \| seed 1 \(4 problems\) \| 50.0 % \| 50.0 % \| \+?0.0 pts/);
    expect(text).toMatch(/\| A - B \| seeds pooled \(8 pairs\) \| 62.5 % \| 37.5 % \| \+25.0 pts/);
    expect(text).toContain('| A - C | seed 1: no paired finals |');
    expect(text).toMatch(/\| B - C \| seeds pooled \(4 pairs\) \| 25.0 % \| 0.0 % \| \+25.0 pts/);
  });
});
