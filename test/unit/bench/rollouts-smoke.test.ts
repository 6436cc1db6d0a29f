/**
 * Smoke test of the rollout-cost benchmark: options, the report's ratio on hand-made summaries,
 * and one tiny quick run (one seed, one iteration per mode) whose folders `mappa compare` reads.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { formatRolloutsReport, pairedFinals, parseRolloutsArgs, quickConfig, runRolloutsBenchmark } from '../../../bench/rollouts.ts';
import { readRun, type RunSummary } from '../../../src/cli/compare.ts';

function row(reward: string, seed: number, rolloutsToTarget: number | null, greedy: number): RunSummary {
  const run = { dir: '', label: `${reward}-seed${seed}`, reward, seed, iterations: 4, plannedIterations: 4, rollouts: 64, baseline: { greedy: 0.2, sampled: 0.2 }, evals: [] };
  return { run, target: 0.3, rolloutsToTarget, final: { iteration: 4, rollouts: 64, greedy, sampled: greedy / 2 }, bestGreedy: greedy, finalGreedyInterval: null, finalSampledInterval: null };
}

describe('bench rollouts', () => {
  it('parses options', () => {
    expect(parseRolloutsArgs(['--out', 'x'])).toMatchObject({ seeds: [0, 1, 2], quick: false, out: 'x' });
    expect(parseRolloutsArgs(['--quick']).seeds).toEqual([0, 1]);
    expect(parseRolloutsArgs(['--seeds', '3,4', '--iterations', '5', '--target', '0.4'])).toMatchObject({ seeds: [3, 4], iterations: 5, target: 0.4 });
    expect(() => parseRolloutsArgs(['--target', '40'])).toThrow(/\[0, 1\]/);
    expect(() => parseRolloutsArgs(['--seeds', 'a'])).toThrow(/non-negative integers/);
    expect(parseRolloutsArgs([]).modes).toEqual(['process', 'outcome']);
    expect(parseRolloutsArgs(['--modes', 'outcome']).modes).toEqual(['outcome']);
    expect(() => parseRolloutsArgs(['--modes', 'mixed'])).toThrow(/--modes takes process and\/or outcome/);
    expect(parseRolloutsArgs([]).metric).toBe('greedy');
    expect(parseRolloutsArgs(['--metric', 'sampled']).metric).toBe('sampled');
    expect(() => parseRolloutsArgs(['--metric', 'best'])).toThrow(/--metric takes greedy or sampled/);
  });

  it('reports the ratio over seeds where both modes reached the target', () => {
    // seed 0: 32 / 48; seed 1: 48 / 64; seed 2: outcome never reached -> left out.
    // ratio = mean(32, 48) / mean(48, 64) = 40 / 56 = 0.71 -> 29% fewer.
    const rows = [row('process', 0, 32, 0.4), row('outcome', 0, 48, 0.35), row('process', 1, 48, 0.38), row('outcome', 1, 64, 0.3),
      row('process', 2, 16, 0.5), row('outcome', 2, null, 0.25)];
    const o = parseRolloutsArgs(['--out', '/tmp/x']);
    const text = formatRolloutsReport(rows, o, 0.3, quickConfig(4), 'cpu');
    expect(text).toContain('Rollouts ratio process / outcome: 0.71 over seeds 0, 1 (29% fewer rollouts with process reward');
    expect(text).toContain('| process | 3/3 | 32.0 | 42.7% | 21.3% |');
    expect(text).toContain('| outcome | 2/3 | 56.0 | 30.0% | 15.0% |');
    expect(text).toContain('| outcome | 2 | not reached | 25.0% | 25.0% | 12.5% |');
    expect(text).toContain('- seed 2: only process reached the target (16 rollouts)');
    expect(text).toContain('- target: held-out greedy accuracy 30.0%');
    expect(formatRolloutsReport(rows, parseRolloutsArgs(['--out', '/tmp/x', '--metric', 'sampled']), 0.3, quickConfig(4), 'cpu'))
      .toContain('- target: held-out sampled accuracy (evaluation temperature 0.6) 30.0%');
    // One process's report (--modes outcome) while the process runs are still being written.
    const partial = formatRolloutsReport([row('outcome', 0, 48, 0.35), row('outcome', 1, null, 0.3), row('outcome', 2, null, 0.25)], o, 0.3, quickConfig(4), 'cpu');
    expect(partial).toContain('2 outcome run(s) and 0 process run(s) did not reach it; 3 run(s) not in this report).');
    expect(partial).not.toContain('only outcome reached');
  });

  it('pairs the final accuracies problem by problem, per seed and pooled', () => {
    const withTasks = (r: RunSummary, greedy: boolean[], sampled: boolean[], ids = ['a', 'b', 'c', 'd']): RunSummary =>
      ({ ...r, final: { ...r.final!, perTask: { ids, greedy, sampled } } });
    const T = true, F = false;
    // seed 0: greedy process 2/4 vs outcome 1/4 (+25 points), sampled 1/4 vs 1/4 (0);
    // seed 1 lists the problems in another order: aligned by id, process 3/4 vs outcome 3/4.
    const rows = [
      withTasks(row('process', 0, null, 0.5), [T, T, F, F], [T, F, F, F]), withTasks(row('outcome', 0, null, 0.25), [T, F, F, F], [F, T, F, F]),
      withTasks(row('process', 1, null, 0.75), [T, T, T, F], [F, F, F, F]), withTasks(row('outcome', 1, null, 0.75), [F, T, T, T], [F, F, F, F], ['d', 'c', 'b', 'a']),
      row('process', 2, null, 0.5), row('outcome', 2, null, 0.5),
    ];
    const text = pairedFinals(rows, [0, 1, 2], 0.6).join('\n');
    expect(text).toMatch(/\| seed 0 \(4 problems\) \| 50.0 % \| 25.0 % \| \+25.0 pts \[[^\]]+\] \| 25.0 % \| 25.0 % \| \+?0.0 pts/);
    expect(text).toMatch(/\| seed 1 \(4 problems\) \| 75.0 % \| 75.0 % \| \+?0.0 pts/);
    // Pooled: 8 pairs, greedy 5/8 vs 4/8 -> +12.5 points.
    expect(text).toMatch(/\| seeds pooled \(8 pairs\) \| 62.5 % \| 50.0 % \| \+12.5 pts/);
    expect(text).toContain('Seeds without both final per-problem results, left out: 2.');
  });

  it('--quick runs both modes into run folders that mappa compare reads; finished runs are reused', async () => {
    const out = path.join(mkdtempSync(path.join(os.tmpdir(), 'mappa-rollouts-')), 'runs');
    // One mode first (as one of two processes would), then the plain command: it reuses that run.
    const first = await runRolloutsBenchmark(parseRolloutsArgs(['--quick', '--seeds', '0', '--iterations', '1', '--modes', 'process', '--out', out]));
    expect(first).toMatch(/\| process \| 0 \| /);
    expect(first).not.toMatch(/\| outcome \| 0 \| /);
    // The other process's run still in progress (no summary yet): left out here, not an error.
    const busy = path.join(out, 'process-seed0', 'summary.json');
    const held = readFileSync(busy, 'utf8');
    rmSync(busy);
    const other = await runRolloutsBenchmark(parseRolloutsArgs(['--quick', '--seeds', '0', '--iterations', '1', '--modes', 'outcome', '--out', out]));
    expect(other).toMatch(/\| outcome \| 0 \| /);
    expect(other).not.toMatch(/\| process \| 0 \| /);
    writeFileSync(busy, held);
    const processSummary = readFileSync(path.join(out, 'process-seed0', 'summary.json'), 'utf8');
    const text = await runRolloutsBenchmark(parseRolloutsArgs(['--quick', '--seeds', '0', '--iterations', '1', '--out', out]));
    expect(readFileSync(path.join(out, 'process-seed0', 'summary.json'), 'utf8')).toBe(processSummary);
    // A different config over the same folders is refused, not mixed in.
    await expect(runRolloutsBenchmark(parseRolloutsArgs(['--quick', '--seeds', '0', '--iterations', '2', '--out', out]))).rejects.toThrow(/a run of another config/);
    expect(text).toContain('| reward | seed | rollouts to target | final greedy [95 %] | best greedy | final sampled [95 %] |');
    // Final accuracies carry their Wilson interval: "0.0 % [0.0, 79.3]" on the quick run's one problem.
    expect(text).toMatch(/\| process \| 0 \| (\d+|not reached) \| [\d.]+ % \[[\d.]+, [\d.]+\] \| [\d.]+% \| [\d.]+ % \[[\d.]+, [\d.]+\] \|/);
    expect(text).toMatch(/\| outcome \| 0 \| /);
    expect(text).toContain('Rollouts ratio process / outcome:');
    for (const mode of ['process', 'outcome']) {
      const run = await readRun(path.join(out, `${mode}-seed0`));
      expect(run).toMatchObject({ reward: mode, seed: 0, iterations: 1, rollouts: 2 });
      expect(run.baseline).not.toBeNull();
      expect(existsSync(path.join(out, `${mode}-seed0`, 'summary.json'))).toBe(true);
    }
  }, 300_000);
});
