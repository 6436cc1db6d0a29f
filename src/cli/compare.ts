/**
 * `mappa compare DIR DIR... [--target X] [--svg FILE]`: runs side by side. For each run folder
 * written by `mappa train` (metrics.jsonl, config.json, summary.json) it prints one table row and
 * draws held-out greedy accuracy against cumulative rollouts, one line per run, into an SVG.
 *
 * For: the process-vs-outcome experiment (MAPPA, arXiv 2601.23228, section 5) and any other set of runs.
 * Not for: training or evaluating (train.ts, eval.ts); it only reads what they wrote.
 *
 * How the columns are computed from metrics.jsonl (one JSON record per line):
 *   baseline  = eval.greedy of the record {iteration: 0, eval} (the untrained team)
 *   rollouts  = running sum of `trajectories` over records with iteration >= 1
 *   final     = the last record with an eval; best = the highest eval.greedy after iteration 0
 *   to target = cumulative rollouts at the first eval whose greedy accuracy >= target
 *               (target: --target, else this run's baseline + 0.10; 0 if the baseline meets it)
 * Example: evals at rollouts 0 / 16 / 32 with greedy 0.20 / 0.25 / 0.31 and no --target:
 *          target 0.30 -> reached at 32 rollouts; final 0.31, best 0.31.
 *
 * Every comparison carries its 95 % interval (core/stats/intervals.ts):
 *   final greedy / sampled   Wilson interval over the final evaluation's `tasks` problems
 *   vs first run             final greedy minus the first run's: paired (Newcombe, problem by
 *                            problem) when both final evaluations kept `perTask` on the same problem
 *                            ids, else "unpaired" (Newcombe's hybrid score, as independent samples)
 *   across seeds             runs grouped by reward mode; each group's rollouts to target against the
 *                            first group's: the ratio of geometric means with its log-scale t interval
 *                            (runs that never reach the target, or start there, are left out and counted)
 */
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import {
  accuracyInterval, formatPoints, formatRatio, logRatioInterval, pairedDifference, unpairedDifference, type Interval, type RatioInterval,
} from '../core/stats/intervals.ts';
import { CliError } from './common.ts';

const USAGE = `usage: mappa compare DIR DIR... [--target X] [--svg FILE]
  DIR          a run folder written by "mappa train" (metrics.jsonl, config.json, summary.json)
  --target X   held-out greedy accuracy in [0, 1] to reach (default: each run's baseline + 0.10)
  --svg FILE   where to draw accuracy vs rollouts (default: compare.svg in the current folder)
Accuracies carry 95 % Wilson intervals; each run's final greedy accuracy is compared with the first
run's (paired on the same problems where both kept per-problem results, else unpaired); with two or
more reward modes, a second table gives rollouts to target across seeds as a ratio with its interval.\n`;

export interface EvalPoint {
  iteration: number;
  /** Rollouts (trajectories) used up to and including this iteration. */
  rollouts: number;
  greedy: number;
  sampled: number;
  /** Problems the accuracies are over (absent in hand-made records). */
  tasks?: number;
  /** Each problem's result (records written since evaluations keep them). */
  perTask?: PerTask;
}

/** An evaluation's per-problem results, in task order (EvalResult.perTask). */
export interface PerTask {
  ids: string[];
  greedy: boolean[];
  sampled: boolean[];
}

export interface RunCurve {
  dir: string;
  label: string;
  reward: string;
  seed: number | null;
  iterations: number;
  plannedIterations: number | null;
  rollouts: number;
  baseline: { greedy: number; sampled: number } | null;
  /** Evaluations after training started, in iteration order. */
  evals: EvalPoint[];
}

/** Which held-out accuracy a target is on: greedy, or sampled at the run's evaluation temperature. */
export type TargetMetric = 'greedy' | 'sampled';

export interface RunSummary {
  run: RunCurve;
  target: number | null;
  /** The accuracy the target is on (default greedy). */
  metric?: TargetMetric;
  /** Rollouts at the first eval reaching the target; null = not reached. */
  rolloutsToTarget: number | null;
  final: EvalPoint | null;
  bestGreedy: number | null;
  /** 95 % Wilson intervals of the final accuracies; null without a final eval or its `tasks`. */
  finalGreedyInterval: Interval | null;
  finalSampledInterval: Interval | null;
}

interface MetricsRecord {
  iteration: number;
  trajectories?: number;
  eval?: { greedy: number; sampled: number; tasks?: number; perTask?: PerTask };
}

async function readJson(file: string): Promise<Record<string, unknown> | null> {
  if (!existsSync(file)) return null;
  try {
    return JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>;
  } catch (e) {
    throw new CliError(`${file}: not valid JSON (${(e as Error).message})`);
  }
}

/** Read one run folder. Throws a CliError naming the folder (and line) when it is not a run. */
export async function readRun(dir: string, label = path.basename(path.resolve(dir))): Promise<RunCurve> {
  if (!existsSync(dir)) throw new CliError(`"${dir}" does not exist; pass run folders written by "mappa train --out DIR"`);
  const file = path.join(dir, 'metrics.jsonl');
  if (!existsSync(file)) {
    throw new CliError(`"${dir}" has no metrics.jsonl, so it is not a training run (or its first iteration never finished); ` +
      'pass folders written by "mappa train --out DIR"');
  }
  const byIteration = new Map<number, MetricsRecord>();
  (await readFile(file, 'utf8')).split('\n').forEach((line, i) => {
    if (!line.trim()) return;
    let r: MetricsRecord;
    try {
      r = JSON.parse(line) as MetricsRecord;
    } catch (e) {
      throw new CliError(`${file}, line ${i + 1}: not valid JSON (${(e as Error).message})`);
    }
    if (!Number.isInteger(r.iteration) || r.iteration < 0) throw new CliError(`${file}, line ${i + 1}: "iteration" must be a non-negative integer`);
    byIteration.set(r.iteration, r); // a resumed run may repeat an iteration: the last one counts
  });
  const records = [...byIteration.values()].sort((a, b) => a.iteration - b.iteration);
  const config = await readJson(path.join(dir, 'config.json'));
  const summary = await readJson(path.join(dir, 'summary.json'));
  const rewards = config?.rewards as { mode?: string; processWeight?: number } | undefined;
  const mode = rewards?.mode ?? (summary?.reward as string | undefined) ?? '?';
  const seed = (config?.seed ?? summary?.seed ?? null) as number | null;

  let rollouts = 0;
  let baseline: RunCurve['baseline'] = null;
  const evals: EvalPoint[] = [];
  for (const r of records) {
    if (r.iteration === 0) {
      if (r.eval) baseline = { greedy: r.eval.greedy, sampled: r.eval.sampled };
      continue;
    }
    rollouts += r.trajectories ?? 0;
    if (r.eval) {
      const { greedy, sampled, tasks, perTask } = r.eval;
      evals.push({ iteration: r.iteration, rollouts, greedy, sampled, ...(tasks ? { tasks } : {}), ...(perTask ? { perTask } : {}) });
    }
  }
  return {
    dir, label,
    reward: mode === 'mixed' && rewards?.processWeight !== undefined ? `mixed ${rewards.processWeight}` : mode,
    seed,
    iterations: records.length ? records[records.length - 1].iteration : 0,
    plannedIterations: typeof config?.iterations === 'number' ? config.iterations : null,
    rollouts, baseline, evals,
  };
}

/** The table numbers of one run (see the top comment for the definitions). */
export function summarizeRun(run: RunCurve, target?: number, metric: TargetMetric = 'greedy'): RunSummary {
  const t = target ?? (run.baseline ? Math.min(1, run.baseline[metric] + 0.1) : null);
  let rolloutsToTarget: number | null = null;
  if (t !== null) {
    const eps = 1e-9; // accuracies are ratios of small integers: 0.3 may arrive as 0.29999999999999993
    if (run.baseline && run.baseline[metric] >= t - eps) rolloutsToTarget = 0;
    else rolloutsToTarget = run.evals.find((e) => e[metric] >= t - eps)?.rollouts ?? null;
  }
  const final = run.evals[run.evals.length - 1] ?? null;
  const interval = (m: TargetMetric) => (final?.tasks ? accuracyInterval(final[m], final.tasks, final.perTask?.[m]) : null);
  return {
    run, target: t, metric, rolloutsToTarget, final,
    bestGreedy: run.evals.length ? Math.max(...run.evals.map((e) => e.greedy)) : null,
    finalGreedyInterval: interval('greedy'), finalSampledInterval: interval('sampled'),
  };
}

/**
 * `b`'s per-problem results reordered to `a`'s problems, when both evaluations are on the same
 * problem ids (each once); else null.
 */
export function alignPerTask(a: PerTask, b: PerTask, metric: TargetMetric): [boolean[], boolean[]] | null {
  if (a.ids.length !== b.ids.length || a[metric].length !== a.ids.length || b[metric].length !== b.ids.length) return null;
  const where = new Map(b.ids.map((id, i) => [id, i]));
  if (where.size !== b.ids.length || new Set(a.ids).size !== a.ids.length) return null;
  const bs: boolean[] = [];
  for (const id of a.ids) {
    const i = where.get(id);
    if (i === undefined) return null;
    bs.push(b[metric][i]);
  }
  return [a[metric], bs];
}

/** A run's final accuracy minus the reference run's, with its 95 % interval, paired where it can be. */
export interface FinalDifference {
  diff: Interval;
  paired: boolean;
}

/**
 * Final `metric` accuracy of `s` minus that of `ref`: paired (Newcombe, problem by problem) when both
 * final evaluations kept perTask on the same problems, else unpaired (Newcombe hybrid score); null
 * when either has no final evaluation or does not say how many problems it was over.
 */
export function finalDifference(s: RunSummary, ref: RunSummary, metric: TargetMetric = 'greedy'): FinalDifference | null {
  const a = s.final;
  const b = ref.final;
  if (!a || !b) return null;
  const aligned = a.perTask && b.perTask ? alignPerTask(a.perTask, b.perTask, metric) : null;
  if (aligned) return { diff: pairedDifference(aligned[0], aligned[1]), paired: true };
  if (!a.tasks || !b.tasks) return null;
  const k = (e: EvalPoint) => Math.round(accuracyInterval(e[metric], e.tasks!, e.perTask?.[metric]).p * e.tasks!);
  return { diff: unpairedDifference(k(a), a.tasks, k(b), b.tasks), paired: false };
}

/** One reward mode's runs (seeds) and their rollouts to target, against the first mode's. */
export interface SeedGroup {
  reward: string;
  runs: number;
  /** Rollouts to target of the runs that reached it after training started (> 0). */
  reached: number[];
  /** Runs whose baseline already met the target (left out of the ratio). */
  atStart: number;
  /** Geometric mean of `reached`; null when none did. */
  geoMean: number | null;
  /** This group's rollouts to target over the first group's (ratio of geometric means); null for the first group or too few runs. */
  ratio: RatioInterval | null;
}

/** Runs grouped by reward mode (in order of first appearance), with the log-ratio interval of rollouts to target vs the first group. */
export function seedGroups(rows: RunSummary[]): SeedGroup[] {
  const byReward = new Map<string, RunSummary[]>();
  for (const s of rows) byReward.set(s.run.reward, [...(byReward.get(s.run.reward) ?? []), s]);
  const groups = [...byReward].map(([reward, ss]) => {
    const reached = ss.flatMap((s) => (s.rolloutsToTarget ? [s.rolloutsToTarget] : []));
    return {
      reward, runs: ss.length, reached, atStart: ss.filter((s) => s.rolloutsToTarget === 0).length,
      geoMean: reached.length ? Math.exp(reached.reduce((a, x) => a + Math.log(x), 0) / reached.length) : null,
      ratio: null as RatioInterval | null,
    };
  });
  for (const g of groups.slice(1)) g.ratio = logRatioInterval(groups[0].reached, g.reached);
  return groups;
}

const pct = (x: number | null | undefined) => (x === null || x === undefined ? 'n/a' : `${(x * 100).toFixed(1)}%`);
/** "28.0% [19.5, 31.4]", or just "28.0%" without an interval. */
const pctIn = (x: number | null | undefined, i: Interval | null) =>
  (i && x !== null && x !== undefined ? `${pct(x)} [${(i.low * 100).toFixed(1)}, ${(i.high * 100).toFixed(1)}]` : pct(x));

/** The "vs first run" cell: "+2.0 pts [-3.1, +7.0] paired", "... unpaired", or why there is none. */
function differenceCell(s: RunSummary, ref: RunSummary): string {
  if (s === ref) return 'reference';
  const d = finalDifference(s, ref);
  if (!d) return 'n/a';
  return `${formatPoints(d.diff)} ${d.paired ? 'paired' : 'unpaired'}`;
}

/**
 * The markdown table `mappa compare` prints: one row per run, intervals in brackets (95 %), and the
 * final greedy accuracy of each run against the first run's.
 */
export function formatCompareTable(rows: RunSummary[]): string {
  const lines = [
    '| run | reward | seed | iterations | rollouts | baseline greedy | final greedy [95 %] | best greedy | final sampled [95 %] | target | ' +
      'rollouts to target | final greedy vs first run [95 %] |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const s of rows) {
    const r = s.run;
    const iters = r.plannedIterations && r.plannedIterations !== r.iterations ? `${r.iterations}/${r.plannedIterations}` : `${r.iterations}`;
    lines.push(`| ${r.label} | ${r.reward} | ${r.seed ?? '?'} | ${iters} | ${r.rollouts} | ${pct(r.baseline?.greedy)} | ` +
      `${pctIn(s.final?.greedy, s.finalGreedyInterval)} | ${pct(s.bestGreedy)} | ${pctIn(s.final?.sampled, s.finalSampledInterval)} | ` +
      `${pct(s.target)} | ${s.rolloutsToTarget ?? 'not reached'} | ${differenceCell(s, rows[0])} |`);
  }
  return lines.join('\n') + '\n';
}

/**
 * Rollouts to target across seeds, one row per reward mode, the ratio against the first mode's with
 * its 95 % interval; empty when there is only one mode.
 */
export function formatSeedTable(rows: RunSummary[]): string {
  const groups = seedGroups(rows);
  if (groups.length < 2) return '';
  const lines = [
    `| reward | runs | reached target | rollouts to target (geometric mean) | vs ${groups[0].reward} [95 %] |`,
    '|---|---:|---:|---:|---:|',
  ];
  for (const [i, g] of groups.entries()) {
    const reached = `${g.reached.length}/${g.runs}` + (g.atStart ? ` (+${g.atStart} at start)` : '');
    const ratio = i === 0 ? 'reference'
      : g.ratio ? `${formatRatio(g.ratio)} x (df ${g.ratio.df})` : 'n/a (needs 3 runs that reached it, both modes)';
    lines.push(`| ${g.reward} | ${g.runs} | ${reached} | ${g.geoMean === null ? 'n/a' : Math.round(g.geoMean)} | ${ratio} |`);
  }
  return lines.join('\n') + '\n';
}

const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22', '#17becf'];

const escapeXml = (s: string) => s.replace(/[<>&"']/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&apos;' })[c]!);

/** A "nice" tick step (1, 2 or 5 times a power of ten) giving about `count` ticks up to `max`. */
function tickStep(max: number, count: number): number {
  const raw = max / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw) ?? 10 * power;
}

/**
 * Held-out greedy accuracy vs cumulative rollouts as a standalone SVG: one <polyline> per run
 * (starting at its baseline, rollouts 0), a dot per evaluation, axes with ticks, a legend.
 */
export function compareSvg(runs: RunCurve[], opts: { width?: number; height?: number; title?: string } = {}): string {
  const legend = runs.map((r) => `${r.label} (${r.reward}, seed ${r.seed ?? '?'})`);
  // The legend sits right of the plot; its width follows the longest label (~6.5 px a character at 12 px).
  const m = { left: 64, right: 60 + 6.5 * Math.max(10, ...legend.map((l) => l.length)), top: 40, bottom: 56 };
  const width = opts.width ?? Math.round(520 + m.left + m.right);
  const height = opts.height ?? 440;
  const plotW = width - m.left - m.right;
  const plotH = height - m.top - m.bottom;
  const series = runs.map((r) => [
    ...(r.baseline ? [{ rollouts: 0, greedy: r.baseline.greedy }] : []),
    ...r.evals.map((e) => ({ rollouts: e.rollouts, greedy: e.greedy })),
  ]);
  const all = series.flat();
  const xStep = tickStep(Math.max(1, ...all.map((p) => p.rollouts)), 6);
  const xMax = xStep * Math.ceil(Math.max(1, ...all.map((p) => p.rollouts)) / xStep);
  const yMax = Math.min(1, Math.max(0.1, Math.ceil((Math.max(0, ...all.map((p) => p.greedy)) + 1e-9) * 10) / 10));
  const yStep = tickStep(yMax, 5);
  const x = (v: number) => (m.left + (v / xMax) * plotW).toFixed(1);
  const y = (v: number) => (m.top + plotH - (v / yMax) * plotH).toFixed(1);

  const out: string[] = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" ` +
    'font-family="sans-serif" font-size="12">');
  out.push(`<rect x="0" y="0" width="${width}" height="${height}" fill="white"/>`);
  out.push(`<text x="${m.left}" y="${m.top - 16}" font-size="14" font-weight="bold">${escapeXml(opts.title ?? 'Held-out greedy accuracy vs rollouts')}</text>`);
  // Grid and ticks.
  for (let v = 0; v <= yMax + 1e-9; v += yStep) {
    out.push(`<line x1="${m.left}" y1="${y(v)}" x2="${m.left + plotW}" y2="${y(v)}" stroke="#e5e5e5"/>`);
    out.push(`<text x="${m.left - 8}" y="${y(v)}" text-anchor="end" dominant-baseline="middle">${Math.round(v * 100)}%</text>`);
  }
  for (let v = 0; v <= xMax + 1e-9; v += xStep) {
    out.push(`<line x1="${x(v)}" y1="${m.top + plotH}" x2="${x(v)}" y2="${m.top + plotH + 5}" stroke="#333"/>`);
    out.push(`<text x="${x(v)}" y="${m.top + plotH + 18}" text-anchor="middle">${Math.round(v)}</text>`);
  }
  // Axes and their titles.
  out.push(`<line x1="${m.left}" y1="${m.top}" x2="${m.left}" y2="${m.top + plotH}" stroke="#333"/>`);
  out.push(`<line x1="${m.left}" y1="${m.top + plotH}" x2="${m.left + plotW}" y2="${m.top + plotH}" stroke="#333"/>`);
  out.push(`<text x="${m.left + plotW / 2}" y="${height - 14}" text-anchor="middle">rollouts (cumulative trajectories)</text>`);
  out.push(`<text x="16" y="${m.top + plotH / 2}" text-anchor="middle" transform="rotate(-90 16 ${m.top + plotH / 2})">held-out accuracy (greedy)</text>`);
  // One polyline per run, dots at its evaluations, and its legend entry.
  runs.forEach((r, i) => {
    const color = COLORS[i % COLORS.length];
    const pts = series[i];
    out.push(`<polyline fill="none" stroke="${color}" stroke-width="2" points="${pts.map((p) => `${x(p.rollouts)},${y(p.greedy)}`).join(' ')}">` +
      `<title>${escapeXml(r.label)}</title></polyline>`);
    for (const p of pts) out.push(`<circle cx="${x(p.rollouts)}" cy="${y(p.greedy)}" r="2.5" fill="${color}"/>`);
    const ly = m.top + 8 + i * 18;
    const lx = m.left + plotW + 16;
    out.push(`<line x1="${lx}" y1="${ly}" x2="${lx + 22}" y2="${ly}" stroke="${color}" stroke-width="2"/>`);
    out.push(`<text x="${lx + 28}" y="${ly}" dominant-baseline="middle">${escapeXml(legend[i])}</text>`);
  });
  out.push('</svg>');
  return out.join('\n') + '\n';
}

/** Labels: folder names, or the paths as given when two folders share a name. */
function labels(dirs: string[]): string[] {
  const names = dirs.map((d) => path.basename(path.resolve(d)));
  return names.map((n, i) => (names.filter((x) => x === n).length > 1 ? dirs[i] : n));
}

export async function compareCommand(argv: string[]): Promise<void> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(USAGE);
    return;
  }
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: { target: { type: 'string' }, svg: { type: 'string' } }, allowPositionals: true, strict: true });
  } catch (err) {
    throw new CliError(`${(err as Error).message}\n\n${USAGE}`);
  }
  const dirs = parsed.positionals;
  if (dirs.length === 0) throw new CliError(`no run folders given\n\n${USAGE}`);
  let target: number | undefined;
  if (parsed.values.target !== undefined) {
    target = Number(parsed.values.target);
    if (!Number.isFinite(target) || target < 0 || target > 1) {
      throw new CliError(`--target must be an accuracy in [0, 1] (e.g. 0.35 for 35%), got "${parsed.values.target}"`);
    }
  }
  const names = labels(dirs);
  const runs: RunCurve[] = [];
  for (const [i, dir] of dirs.entries()) runs.push(await readRun(dir, names[i]));
  const rows = runs.map((r) => summarizeRun(r, target));
  process.stdout.write(formatCompareTable(rows));
  const seeds = formatSeedTable(rows);
  if (seeds) process.stdout.write(`\nRollouts to target across seeds (ratio of geometric means, log-scale t interval):\n\n${seeds}`);
  const svgFile = parsed.values.svg ?? 'compare.svg';
  await writeFile(svgFile, compareSvg(runs));
  process.stderr.write(`wrote ${svgFile} (${runs.length} run${runs.length === 1 ? '' : 's'})\n`);
}
