/**
 * `mappa compare` on hand-made run folders: the table's numbers are worked out by hand below, the
 * SVG is checked for one polyline per run (and, where python3 is present, parsed by an XML parser).
 */
import { execFile, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { compareSvg, formatCompareTable, readRun, summarizeRun } from '../../../src/cli/compare.ts';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const hasPython = spawnSync('python3', ['-c', 'import xml.etree.ElementTree']).status === 0;

function writeRun(dir: string, records: object[], extra: Record<string, object> = {}) {
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'metrics.jsonl'), records.map((r) => JSON.stringify(r)).join('\n') + '\n');
  for (const [name, value] of Object.entries(extra)) writeFileSync(path.join(dir, name), JSON.stringify(value));
}

const ev = (greedy: number, sampled: number) => ({ greedy, sampled, tasks: 20 });

describe('mappa compare', () => {
  let root: string;
  let a: string;
  let b: string;
  beforeAll(() => {
    root = mkdtempSync(path.join(os.tmpdir(), 'mappa-compare-'));
    a = path.join(root, 'process-seed0');
    b = path.join(root, 'outcome-seed1');
    // Run A: 16 rollouts per iteration; evals after iterations 2, 4, 5 (rollouts 32, 64, 80).
    writeRun(a, [
      { iteration: 0, eval: ev(0.2, 0.1) },
      { iteration: 1, trajectories: 16 },
      { iteration: 2, trajectories: 16, eval: ev(0.25, 0.2) },
      { iteration: 3, trajectories: 16 },
      { iteration: 4, trajectories: 16, eval: ev(0.3, 0.25) },
      { iteration: 5, trajectories: 16, eval: ev(0.28, 0.3) },
    ], { 'config.json': { seed: 0, iterations: 5, rewards: { mode: 'process', processWeight: 0.5 } } });
    // Run B: only summary.json (reward and seed come from there); planned iterations unknown.
    writeRun(b, [
      { iteration: 0, eval: ev(0.2, 0.15) },
      { iteration: 1, trajectories: 16 },
      { iteration: 2, trajectories: 16, eval: ev(0.22, 0.2) },
      { iteration: 3, trajectories: 16 },
      { iteration: 4, trajectories: 16, eval: ev(0.24, 0.2) },
      { iteration: 5, trajectories: 16, eval: ev(0.26, 0.22) },
    ], { 'summary.json': { reward: 'outcome', seed: 1 } });
  });

  it('reads a run: baseline, cumulative rollouts at each eval, reward and seed', async () => {
    const run = await readRun(a);
    expect(run).toMatchObject({ label: 'process-seed0', reward: 'process', seed: 0, iterations: 5, plannedIterations: 5, rollouts: 80 });
    expect(run.baseline).toEqual({ greedy: 0.2, sampled: 0.1 });
    expect(run.evals.map((e) => [e.iteration, e.rollouts, e.greedy])).toEqual([[2, 32, 0.25], [4, 64, 0.3], [5, 80, 0.28]]);
    expect((await readRun(b)).reward).toBe('outcome');
  });

  it('default target is baseline + 0.10; final, best and rollouts to target by hand', async () => {
    const s = summarizeRun(await readRun(a));
    // target 0.2 + 0.1 = 0.3 (within rounding) -> first reached by the eval after iteration 4 = 64 rollouts.
    expect(s.target).toBeCloseTo(0.3, 12);
    expect(s.rolloutsToTarget).toBe(64);
    expect(s.final?.greedy).toBe(0.28);
    expect(s.final?.sampled).toBe(0.3);
    expect(s.bestGreedy).toBe(0.3);
    const sb = summarizeRun(await readRun(b));
    expect(sb.rolloutsToTarget).toBeNull(); // best 0.26 < 0.30
    // --target 0.25: A reaches it at iteration 2 (32 rollouts), B at iteration 5 (80); 0.15: the baseline already does.
    expect(summarizeRun(await readRun(a), 0.25).rolloutsToTarget).toBe(32);
    expect(summarizeRun(await readRun(b), 0.25).rolloutsToTarget).toBe(80);
    expect(summarizeRun(await readRun(b), 0.15).rolloutsToTarget).toBe(0);
    // On the sampled accuracy: A's baseline 0.1 -> target 0.2, first reached at iteration 2 (32 rollouts);
    // B's baseline 0.15 -> 0.25, never reached (best 0.22).
    expect(summarizeRun(await readRun(a), undefined, 'sampled')).toMatchObject({ metric: 'sampled', rolloutsToTarget: 32 });
    expect(summarizeRun(await readRun(a), undefined, 'sampled').target).toBeCloseTo(0.2, 12);
    expect(summarizeRun(await readRun(b), undefined, 'sampled').rolloutsToTarget).toBeNull();
  });

  it('prints one row per run with those numbers', async () => {
    const table = formatCompareTable([summarizeRun(await readRun(a)), summarizeRun(await readRun(b))]);
    const lines = table.trim().split('\n');
    expect(lines).toHaveLength(4);
    expect(lines[0]).toContain('| run | reward | seed | iterations | rollouts | baseline greedy | final greedy | best greedy | final sampled | target | rollouts to target |');
    expect(lines[2]).toBe('| process-seed0 | process | 0 | 5 | 80 | 20.0% | 28.0% | 30.0% | 30.0% | 30.0% | 64 |');
    expect(lines[3]).toBe('| outcome-seed1 | outcome | 1 | 5 | 80 | 20.0% | 26.0% | 26.0% | 22.0% | 30.0% | not reached |');
  });

  it('draws one polyline per run, starting at the baseline, with a legend', async () => {
    const svg = compareSvg([await readRun(a), await readRun(b)]);
    const polylines = [...svg.matchAll(/<polyline [^>]*points="([^"]+)"/g)];
    expect(polylines).toHaveLength(2);
    expect(polylines[0][1].split(' ')).toHaveLength(4); // baseline + 3 evals
    expect(svg).toContain('process-seed0 (process, seed 0)');
    expect(svg).toContain('rollouts (cumulative trajectories)');
    if (!hasPython) {
      console.warn('skipped the XML well-formedness check of the SVG: python3 is not available');
      return;
    }
    const parsed = spawnSync('python3', ['-c', 'import sys, xml.etree.ElementTree as E; r = E.fromstring(sys.stdin.read()); print(len(r.findall("{http://www.w3.org/2000/svg}polyline")))'], { input: svg });
    expect(parsed.stderr.toString()).toBe('');
    expect(parsed.stdout.toString().trim()).toBe('2');
  });

  it('the CLI prints the table, writes the SVG, and refuses a folder without metrics.jsonl', async () => {
    const svgFile = path.join(root, 'out.svg');
    const run = promisify(execFile);
    const { stdout } = await run(process.execPath, ['bin/mappa.js', 'compare', a, b, '--target', '0.25', '--svg', svgFile], { cwd: repoRoot });
    expect(stdout).toContain('| 30.0% | 25.0% | 32 |');
    expect(readFileSync(svgFile, 'utf8')).toMatch(/^<svg /);
    const empty = path.join(root, 'empty');
    mkdirSync(empty);
    await expect(run(process.execPath, ['bin/mappa.js', 'compare', a, empty], { cwd: repoRoot }))
      .rejects.toMatchObject({ code: 2, stderr: expect.stringMatching(/empty" has no metrics\.jsonl/) });
    await expect(run(process.execPath, ['bin/mappa.js', 'compare', a, '--target', '30'], { cwd: repoRoot }))
      .rejects.toMatchObject({ stderr: expect.stringMatching(/--target must be an accuracy in \[0, 1\]/) });
  }, 60_000);
});
