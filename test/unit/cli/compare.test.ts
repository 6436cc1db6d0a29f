/**
 * `mappa compare` on hand-made run folders: the table's numbers are worked out by hand below, the
 * SVG is checked for one polyline per run (and, where python3 is present, parsed by an XML parser).
 * The intervals' own arithmetic is checked in test/unit/stats/intervals.test.ts; here, that compare
 * picks the right one: Wilson per accuracy, paired only on the same problem ids, the seed ratio.
 */
import { execFile, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  alignPerTask, compareSvg, finalDifference, formatCompareTable, formatSeedTable, readRun, seedGroups, summarizeRun, type RunCurve,
} from '../../../src/cli/compare.ts';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const hasPython = spawnSync('python3', ['-c', 'import xml.etree.ElementTree']).status === 0;

function writeRun(dir: string, records: object[], extra: Record<string, object> = {}) {
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'metrics.jsonl'), records.map((r) => JSON.stringify(r)).join('\n') + '\n');
  for (const [name, value] of Object.entries(extra)) writeFileSync(path.join(dir, name), JSON.stringify(value));
}

const ev = (greedy: number, sampled: number) => ({ greedy, sampled, tasks: 100 });

/** A final evaluation that kept each problem's result: `right` says which ids were solved (greedy = sampled). */
function evPerTask(ids: string[], right: (id: string) => boolean) {
  const results = ids.map(right);
  const acc = results.filter(Boolean).length / ids.length;
  return { greedy: acc, sampled: acc, tasks: ids.length, perTask: { ids, greedy: results, sampled: results } };
}

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
    expect(lines[0]).toBe('| run | reward | seed | iterations | rollouts | baseline greedy | final greedy [95 %] | best greedy | final sampled [95 %] | ' +
      'target | rollouts to target | final greedy vs first run [95 %] |');
    // Wilson over the 100 problems: 28/100 -> [20.1, 37.5], 30/100 -> [21.9, 39.6], 26/100 -> [18.4, 35.4], 22/100 -> [15.0, 31.1].
    // No perTask in these records: B - A is unpaired, 0.26 - 0.28 -> Newcombe hybrid score [-14.2, +10.2].
    expect(lines[2]).toBe('| process-seed0 | process | 0 | 5 | 80 | 20.0% | 28.0% [20.1, 37.5] | 30.0% | 30.0% [21.9, 39.6] | 30.0% | 64 | reference |');
    expect(lines[3]).toBe('| outcome-seed1 | outcome | 1 | 5 | 80 | 20.0% | 26.0% [18.4, 35.4] | 26.0% | 22.0% [15.0, 31.1] | 30.0% | not reached | ' +
      '-2.0 pts [-14.2, +10.2] unpaired |');
    // Records without `tasks` (older hand-made ones): the accuracy alone, and no difference.
    const old = await readRun(a);
    for (const e of old.evals) delete e.tasks;
    const bare = formatCompareTable([summarizeRun(await readRun(b)), summarizeRun(old)]).trim().split('\n')[3];
    expect(bare).toBe('| process-seed0 | process | 0 | 5 | 80 | 20.0% | 28.0% | 30.0% | 30.0% | 30.0% | 64 | n/a |');
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
    expect(stdout).toContain('| 30.0% [21.9, 39.6] | 25.0% | 32 | reference |');
    // Two reward modes, one run each: the seeds table says it needs more runs.
    expect(stdout).toContain('| outcome | 1 | 1/1 | 80 | n/a (needs 3 runs that reached it, both modes) |');
    expect(readFileSync(svgFile, 'utf8')).toMatch(/^<svg /);
    const empty = path.join(root, 'empty');
    mkdirSync(empty);
    await expect(run(process.execPath, ['bin/mappa.js', 'compare', a, empty], { cwd: repoRoot }))
      .rejects.toMatchObject({ code: 2, stderr: expect.stringMatching(/empty" has no metrics\.jsonl/) });
    await expect(run(process.execPath, ['bin/mappa.js', 'compare', a, '--target', '30'], { cwd: repoRoot }))
      .rejects.toMatchObject({ stderr: expect.stringMatching(/--target must be an accuracy in \[0, 1\]/) });
  }, 300_000);

  describe('paired differences and rollouts to target across seeds', () => {
    const ids = Array.from({ length: 20 }, (_, i) => `t${i}`);
    let p0: string;
    let o0: string;
    let o1: string;
    beforeAll(() => {
      // P0 solves t0-t7 (8/20); O0 solves t0-t4 and t8 (6/20), its ids in another order; O1 kept no perTask.
      // So O0 vs P0 is the paired table 5 both / 1 only O0 / 3 only P0 / 11 neither.
      p0 = path.join(root, 'P0');
      o0 = path.join(root, 'O0');
      o1 = path.join(root, 'O1');
      const cfg = (mode: string, seed: number) => ({ 'config.json': { seed, iterations: 4, rewards: { mode } } });
      writeRun(p0, [
        { iteration: 0, eval: ev(0.2, 0.2) },
        { iteration: 1, trajectories: 16, eval: { greedy: 0.3, sampled: 0.3, tasks: 20 } },
        { iteration: 2, trajectories: 16, eval: evPerTask(ids, (id) => Number(id.slice(1)) < 8) },
      ], cfg('process', 0));
      writeRun(o0, [
        { iteration: 0, eval: ev(0.2, 0.2) },
        { iteration: 1, trajectories: 16 },
        { iteration: 2, trajectories: 16, eval: { greedy: 0.25, sampled: 0.25, tasks: 20 } },
        { iteration: 3, trajectories: 16 },
        { iteration: 4, trajectories: 16, eval: evPerTask([...ids].reverse(), (id) => Number(id.slice(1)) < 5 || id === 't8') },
      ], cfg('outcome', 0));
      writeRun(o1, [
        { iteration: 0, eval: ev(0.2, 0.2) },
        { iteration: 1, trajectories: 16 },
        { iteration: 2, trajectories: 16, eval: { greedy: 0.2, sampled: 0.2, tasks: 20 } },
        { iteration: 3, trajectories: 16, eval: { greedy: 0.3, sampled: 0.3, tasks: 20 } },
      ], cfg('outcome', 1));
    });

    it('pairs problem by problem on the same ids (in any order), unpaired otherwise', async () => {
      const [sp, s0, s1] = [await readRun(p0), await readRun(o0), await readRun(o1)].map((r) => summarizeRun(r, 0.3));
      expect(alignPerTask(s0.final!.perTask!, sp.final!.perTask!, 'greedy')).not.toBeNull();
      // 0.30 - 0.40 on the same 20 problems: the mirror of intervals.test.ts's hand example, [-29.6, +10.9].
      const d0 = finalDifference(s0, sp)!;
      expect(d0.paired).toBe(true);
      expect(d0.diff.p).toBeCloseTo(-0.1, 12);
      expect(d0.diff.low).toBeCloseTo(-0.29641, 4);
      expect(d0.diff.high).toBeCloseTo(0.10896, 4);
      // O1 kept no perTask: 6/20 - 8/20 as independent samples, [-36.3, +18.4], wider than paired.
      const d1 = finalDifference(s1, sp)!;
      expect(d1.paired).toBe(false);
      expect(d1.diff.low).toBeCloseTo(-0.36349, 4);
      expect(d1.diff.high).toBeCloseTo(0.18422, 4);
      // Different problem ids: unpaired, though both kept perTask.
      const other = structuredClone(s0);
      other.final!.perTask!.ids = ids.map((id) => `u${id}`);
      expect(alignPerTask(other.final!.perTask!, sp.final!.perTask!, 'greedy')).toBeNull();
      expect(finalDifference(other, sp)!.paired).toBe(false);
      const lines = formatCompareTable([sp, s0, s1]).trim().split('\n');
      expect(lines[2]).toMatch(/\| 40\.0% \[21\.9, 61\.3\] \|.*\| reference \|$/);
      expect(lines[3]).toMatch(/\| -10\.0 pts \[-29\.6, \+10\.9\] paired \|$/);
      expect(lines[4]).toMatch(/\| -10\.0 pts \[-36\.3, \+18\.4\] unpaired \|$/);
    });

    it('groups runs by reward mode: rollouts to target as a ratio of geometric means with its interval', async () => {
      // --target 0.3: P0 reaches it at 16 rollouts, O0 at 64, O1 at 48. Outcome vs process:
      // sqrt(64 * 48) / 16 = 3.46; pooled log variance (ln(64/48))^2 / 2 = 0.04138 on df 1;
      // se = sqrt(0.04138 * (1 + 1/2)) = 0.24914; t(1) = 12.706 -> 3.46 * exp(-+3.1656) = [0.15, 82.11].
      const rows = [await readRun(p0), await readRun(o0), await readRun(o1)].map((r) => summarizeRun(r, 0.3));
      const [process, outcome] = seedGroups(rows);
      expect(process).toMatchObject({ reward: 'process', runs: 1, reached: [16], atStart: 0, ratio: null });
      expect(process.geoMean).toBeCloseTo(16, 9);
      expect(outcome).toMatchObject({ reward: 'outcome', runs: 2, reached: [64, 48] });
      expect(outcome.ratio!.p).toBeCloseTo(3.4641, 4);
      expect(outcome.ratio!.low).toBeCloseTo(0.14614, 4);
      expect(outcome.ratio!.high).toBeCloseTo(82.1114, 3);
      expect(formatSeedTable(rows).trim().split('\n')[3]).toBe('| outcome | 2 | 2/2 | 55 | 3.46 [0.15, 82.11] x (df 1) |');
      expect(formatSeedTable(rows.slice(0, 1))).toBe('');
    });

    it("three seeds a mode, by hand: process needs 0.60 x outcome's rollouts [0.38, 0.95]", () => {
      // Curves in memory: outcome seeds reach 0.30 at 960 / 1200 / 1440 rollouts, process at 0.6 x those;
      // one more process run never does and one starts there: both are counted, not in the ratio.
      const curve = (reward: string, seed: number, rollouts: number | null, baseline = 0.2): RunCurve => ({
        dir: `${reward}${seed}`, label: `${reward}${seed}`, reward, seed, iterations: 1, plannedIterations: 1, rollouts: rollouts ?? 2000,
        baseline: { greedy: baseline, sampled: baseline },
        evals: [{ iteration: 1, rollouts: rollouts ?? 2000, greedy: rollouts ? 0.3 : 0.25, sampled: 0.2 }],
      });
      const rows = [
        curve('outcome', 0, 960), curve('outcome', 1, 1200), curve('outcome', 2, 1440),
        curve('process', 0, 576), curve('process', 1, 720), curve('process', 2, 864), curve('process', 3, null), curve('process', 4, 100, 0.35),
      ].map((r) => summarizeRun(r, 0.3));
      const [, process] = seedGroups(rows);
      expect(process).toMatchObject({ runs: 5, reached: [576, 720, 864], atStart: 1 });
      expect(process.ratio).toMatchObject({ df: 4 });
      expect(process.ratio!.p).toBeCloseTo(0.6, 12);
      expect(process.ratio!.low).toBeCloseTo(0.37863, 4);
      expect(process.ratio!.high).toBeCloseTo(0.95079, 4);
      const table = formatSeedTable(rows).trim().split('\n');
      expect(table[0]).toBe('| reward | runs | reached target | rollouts to target (geometric mean) | vs outcome [95 %] |');
      expect(table[2]).toBe('| outcome | 3 | 3/3 | 1184 | reference |');
      expect(table[3]).toBe('| process | 5 | 3/5 (+1 at start) | 710 | 0.60 [0.38, 0.95] x (df 4) |');
    });
  });
});
