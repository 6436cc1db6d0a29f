/**
 * The relay experiment's bench (bench/relay.ts): the predicted ratio against hand-worked values, rollouts
 * to target on hand-made curves, and one real run of the shipped relay model (N = 2, one seed, one
 * iteration per reward) whose report and plot are written.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { main, parseRelayArgs, predictedRatio, rolloutsToTarget, type RelayRun } from '../../../bench/relay.ts';

describe('bench relay', () => {
  it('predicts the rollout ratio with the luck floor, P (1 - P) / (p (1 - p) lambda^(2(N-1))), worked by hand', () => {
    // By hand: N = 4, p = 0.6 -> lambda = 5/9, lambda^4 = 0.095260, P = 0.1 + 0.9 x 0.095260 = 0.185734,
    // P (1 - P) = 0.151237; p (1 - p) = 0.24, lambda^6 = 0.029401 -> 0.151237 / (0.24 x 0.029401) = 21.4329.
    const table: [number, number, number][] = [[1, 0.6, 1], [2, 0.6, 3.173333], [4, 0.6, 21.432917], [6, 0.6, 164.343654],
      [2, 0.8, 2.367347], [4, 0.8, 6.917186]];
    for (const [n, p, want] of table) expect(predictedRatio(n, p)).toBeCloseTo(want, 5);
  });

  it('reads rollouts to target from a curve; null when the budget ends first', () => {
    const point = (rollouts: number, step: number) => ({ rollouts, step, team: step ** 2, tasks: 200 });
    const run: RelayRun = { label: 'process', n: 2, mode: 'process', seed: 0, budget: 240, baseline: point(0, 0.5), evals: [point(80, 0.6), point(160, 0.76), point(240, 0.8)] };
    expect(rolloutsToTarget(run, 0.75)).toBe(160);
    expect(rolloutsToTarget(run, 0.5)).toBe(0);
    expect(rolloutsToTarget(run, 0.9)).toBeNull();
  });

  it('parses options and refuses bad ones by name', () => {
    expect(parseRelayArgs([])).toMatchObject({ agents: [2, 4, 6], seeds: [0, 1, 2], target: 0.75, coachSweep: false });
    expect(parseRelayArgs(['--agents', '3', '--coach-sweep'])).toMatchObject({ agents: [3], coachSweep: true });
    expect(parseRelayArgs(['--judge', '/tmp/ckpt/step-500'])).toMatchObject({ coach: 'model', judge: '/tmp/ckpt/step-500' }); // a judge folder implies --coach model
    expect(() => parseRelayArgs(['--agents', '7'])).toThrow(/--agents takes integers in 1\.\.6/);
    expect(() => parseRelayArgs(['--target', '75'])).toThrow(/--target is a step accuracy/);
  });

  it('runs the shipped relay model for one iteration per reward and writes the table and the plot', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'relay-bench-'));
    const chunks: string[] = [];
    const write = process.stdout.write.bind(process.stdout);
    process.stdout.write = ((s: string) => (chunks.push(String(s)), true)) as typeof process.stdout.write;
    try {
      await main(['--agents', '2', '--seeds', '0', '--iterations', '1', '--out', path.join(dir, 'runs'), '--results', path.join(dir, 'results'), '--backend', 'wasm']);
    } finally {
      process.stdout.write = write;
    }
    const text = chunks.join('');
    expect(text).toMatch(/\| 2 \| \d+\.\d % \|/);
    expect(existsSync(path.join(dir, 'runs', 'n2-process-seed0', 'summary.json'))).toBe(true);
    expect(existsSync(path.join(dir, 'runs', 'n2-outcome-seed0', 'summary.json'))).toBe(true);
    expect(readFileSync(path.join(dir, 'results', 'relay-gap.svg'), 'utf8')).toContain('<svg');
    rmSync(dir, { recursive: true, force: true });
  }, 240_000);
});
