/**
 * Page benchmark: the page as a user meets it against the CLI, one after the other on the same
 * machine. Runs `mappa train --iterations N` (the CLI, `--threads` default: every core), then the
 * README's `npm start` in headless Chromium at its printed URL with no query string, presses Start
 * and lets N iterations run. Prints one markdown table: time from Start to the first iteration's
 * metrics, seconds per iteration (wall, and its rollout / coach / update phases), the workers used,
 * and the page / CLI ratio.
 *
 * For: the "first five minutes" figures (README "The page"). Not for: correctness (test/e2e).
 * The page measures its evaluations alongside training (the lane runs evaluation chunks during the
 * rollouts), the CLI evaluates inline before and after; the phase columns compare like with like,
 * the wall column includes that difference.
 *
 * Example: npm run bench -- page --iterations 4
 *          npm run bench -- page --whole       (the whole default run, 30 iterations and every evaluation, each side)
 *          npm run bench -- page --iterations 3 --no-cli --query '?baseline=0'   (diagnostics)
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { launchChromium, npmStart, repoRoot } from '../test/helpers/browser.ts';
import type { IterationMetrics } from '../src/core/loop/records.ts';
import { tInterval } from '../src/core/stats/intervals.ts';

interface Side {
  where: string;
  /** --whole: seconds from start to the last evaluation's result (CLI: the whole process). */
  total?: number;
  workers: string;
  firstIteration: number | null;
  perIteration: { wall: number; rollout: number; coach: number; update: number };
  /** Seconds of each iteration, by iteration (the page's first has no previous arrival: NaN). */
  iterationSeconds: number[];
  /** The page: the first iteration's own phases (what of the time from Start its work took). */
  first?: Omit<Side['perIteration'], 'wall'>;
}

function mean(xs: number[]): number {
  return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN;
}

function phases(ms: IterationMetrics[]): Omit<Side['perIteration'], 'wall'> {
  return {
    rollout: mean(ms.map((m) => m.seconds.rollout)),
    coach: mean(ms.map((m) => m.seconds.coach)),
    update: mean(ms.map((m) => m.seconds.update)),
  };
}

async function cli(iterations: number | null): Promise<Side> {
  const out = mkdtempSync(path.join(os.tmpdir(), 'mappa-bench-page-'));
  try {
    const t0 = Date.now();
    execFileSync(process.execPath, [path.join(repoRoot, 'bin/mappa.js'), 'train', ...(iterations ? ['--iterations', String(iterations)] : []), '--out', path.join(out, 'run')],
      { cwd: repoRoot, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    const total = (Date.now() - t0) / 1000;
    const records = readFileSync(path.join(out, 'run/metrics.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    const ms = records.filter((r) => r.perAgent) as IterationMetrics[];
    const loopSeconds = ms.map((m) => m.seconds.rollout + m.seconds.coach + m.seconds.update + m.seconds.checkpoint);
    return { where: '`npm run train`', workers: `${os.cpus().length} threads`, firstIteration: null, total, perIteration: { wall: mean(loopSeconds), ...phases(ms) }, iterationSeconds: loopSeconds };
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

async function page(iterations: number | null, query: string): Promise<Side> {
  const site = await npmStart();
  const browser = await launchChromium();
  try {
    const p = await browser.newPage({ viewport: { width: 1000, height: 700 } });
    await p.goto(site.url + query, { waitUntil: 'load' });
    const read = () => p.evaluate(() => {
      type Run = { state: string; metrics: IterationMetrics[]; lanes?: number; errors: string[]; config?: { iterations: number }; evals: { iteration: number; result: { of?: number } }[] };
      const run = (window as unknown as { __mappa?: { run?: Run } }).__mappa?.run;
      const last = run?.config?.iterations ?? Infinity;
      const finalDone = Boolean(run?.evals.some((e) => e.iteration === last && e.result.of === undefined));
      return { state: run?.state, metrics: JSON.parse(JSON.stringify(run?.metrics ?? [])) as IterationMetrics[], lanes: run?.lanes, errors: [...(run?.errors ?? [])], planned: last, finalDone };
    });
    for (let s = await read(); s.state !== 'ready'; s = await read()) {
      if (s.errors.length) throw new Error(`the page shows errors: ${s.errors.join(' | ')}`);
      await p.waitForTimeout(250);
    }
    const start = Date.now();
    await p.getByTestId('btn-start').click();
    const arrivals: number[] = [];
    for (;;) {
      const s = await read();
      if (s.errors.length) throw new Error(`the page shows errors: ${s.errors.join(' | ')}`);
      while (arrivals.length < s.metrics.length) arrivals.push((Date.now() - start) / 1000);
      const whole = iterations === null;
      if (whole ? s.metrics.length >= s.planned && s.finalDone && s.state === 'ready' : s.metrics.length >= iterations) {
        const gaps = arrivals.slice(1).map((t, i) => t - arrivals[i]);
        const lanes = s.lanes ?? 0;
        return {
          where: query ? `the page (\`npm start\`, ${query})` : 'the page (`npm start`, no query string)', workers: `1 training worker + ${lanes} lane worker${lanes === 1 ? '' : 's'}`,
          firstIteration: arrivals[0], perIteration: { wall: mean(gaps), ...phases(whole ? s.metrics : s.metrics.slice(0, iterations)) },
          total: whole ? (Date.now() - start) / 1000 : undefined,
          iterationSeconds: [NaN, ...gaps],
          first: phases(s.metrics.slice(0, 1)),
        };
      }
      await p.waitForTimeout(250);
    }
  } finally {
    await browser.close();
    await site.close();
  }
}

/**
 * Page / CLI seconds per iteration, paired by iteration (the same config and seed: iteration k does
 * the same rollouts and update on both sides): the geometric mean of the per-iteration ratios with its
 * 95 % t interval on the log scale. Example: ratios 1.1, 1.2, 1.3 -> 1.20x [0.97x, 1.47x].
 */
export function pairedRatio(cli: Pick<Side, 'iterationSeconds'>, page: Pick<Side, 'iterationSeconds'>): string {
  const logs = page.iterationSeconds.flatMap((p, k) => (Number.isFinite(p) && cli.iterationSeconds[k] > 0 ? [Math.log(p / cli.iterationSeconds[k])] : []));
  if (logs.length < 2) return 'Paired ratio: fewer than two iterations on both sides.';
  const r = tInterval(logs);
  return `Paired by iteration (${logs.length} iterations, 2nd onwards): page / CLI seconds per iteration ${Math.exp(r.p).toFixed(2)}x, 95 % interval [${Math.exp(r.low).toFixed(2)}x, ${Math.exp(r.high).toFixed(2)}x] (geometric mean of the per-iteration ratios, t interval on the log scale).`;
}

export async function main(argv: string[]): Promise<void> {
  const at = argv.indexOf('--iterations');
  // --whole: the whole default run (30 iterations and every evaluation) on both sides.
  const iterations = argv.includes('--whole') ? null : at >= 0 ? Number(argv[at + 1]) : 4;
  if (iterations !== null && (!Number.isInteger(iterations) || iterations < 2)) throw new Error('--iterations takes a whole number >= 2 (the page needs two arrivals to time an iteration)');
  const q = argv.indexOf('--query'); // diagnostics only, e.g. --query '?baseline=0'; the figures are without
  const query = q >= 0 ? argv[q + 1] : '';
  const skipCli = argv.includes('--no-cli');
  process.stderr.write(`CLI: mappa train${iterations ? ` --iterations ${iterations}` : ""}...\n`);
  const a = skipCli ? null : await cli(iterations);
  process.stderr.write(`page: npm start, Start, ${iterations} iterations...\n`);
  const b = await page(iterations, query);
  const f = (x: number) => x.toFixed(1);
  const lines = [
    `Page vs CLI, ${iterations ?? 'all (the whole default run)'} iterations each, one after the other; ${os.cpus().length} cores, tfjs wasm (SIMD, one thread per worker).`,
    '',
    `| where | workers | first iteration after Start (s) | s / iteration | rollout | coach | update |${iterations === null ? ' whole run (s) |' : ''}`,
    `|---|---|---:|---:|---:|---:|---:|${iterations === null ? '---:|' : ''}`,
    ...[a, b].filter((s): s is Side => s !== null).map((s) => `| ${s.where} | ${s.workers} | ${s.firstIteration === null ? '-' : f(s.firstIteration)} | ${f(s.perIteration.wall)} | ${f(s.perIteration.rollout)} | ${f(s.perIteration.coach)} | ${f(s.perIteration.update)} |${iterations === null ? ` ${f(s.total ?? NaN)} |` : ''}`),
    '',
    ...(a ? [pairedRatio(a, b), ''] : []),
    ...(b.first && b.firstIteration !== null ? [`The page's first iteration: ${f(b.firstIteration)} s from Start to its metrics, of which its rollout ${f(b.first.rollout)} s, `
      + `coach ${f(b.first.coach)} s, update ${f(b.first.update)} s; the rest (${f(b.firstIteration - b.first.rollout - b.first.coach - b.first.update)} s) `
      + 'is the press reaching the worker, the checkpoint and the metrics reaching the page.', ''] : []),
    `Load average at the end: ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}.`, '',
    a ? `Ratio page / CLI: s per iteration ${(b.perIteration.wall / a.perIteration.wall).toFixed(2)}x; rollout ${(b.perIteration.rollout / a.perIteration.rollout).toFixed(2)}x; update ${(b.perIteration.update / a.perIteration.update).toFixed(2)}x${a.total && b.total ? `; whole run ${(b.total / a.total).toFixed(2)}x` : ''}.` : '(--no-cli: no ratio)',
    `(CLI s / iteration: rollout + coach + update + checkpoint of its metrics, its evaluations excluded; page: time between two iterations' metrics, its evaluations running alongside.)`,
  ];
  console.log(lines.join('\n'));
}
