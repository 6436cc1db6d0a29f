/**
 * The corrections bench's report (bench/corrections.ts): every taught judge's row, the summary over
 * seeds, the findings computed from it, and the plot of ranking against K.
 *
 * For: bench/results/corrections.md and .svg. Not for: teaching or ranking (src/core/coach/).
 *
 * Summary: per judge, selection rule, careless fraction and K, the mean ranking over seeds with its 95 %
 * t interval across seeds (seeds differ in the teaching order, and for random picks in the picks; the
 * uncertainty picks are the judge's own and the same every seed). With one seed, the bootstrap over
 * held-out actions stands in, and the table says so.
 * Findings:
 *   - the fewest corrections whose mean ranking reaches 80 % (the line past which relay judges started to
 *     coach, docs/judges.md), per rule, else the best reached;
 *   - uncertainty minus random at each K, paired by seed, with its t interval: the label saving is claimed
 *     only where that interval lies above 0;
 *   - the careless person: each flipped fraction minus the careful person at the same K and rule.
 * Example: correctionsReport(rows, {command, machine, held: 480, pool: 960, minutes: 42})
 *            -> '# Corrections: ...\n\n| judge | picked by | ... |'
 */
import { formatPercent, tInterval, type Interval } from '../src/core/stats/intervals.ts';
import { svgPanels, type PlotPoint } from './plot.ts';

/** One taught judge (or, at K = 0, the judge as it came) ranked on the held-out steps. */
export interface Row {
  judge: string;
  rule: string;
  k: number;
  seed: number;
  /** The fraction of the K verdicts flipped (a careless person); 0 = careful. */
  flip: number;
  ranking: Interval;
  /** The same ranking with a bootstrap interval over actions (pairs sharing an action are not independent). */
  boot: Interval;
  pairs: number;
  mae: number;
  changed: number;
  teachSeconds: number;
  /** CPU seconds of this process while teaching (the cores may be shared: wall time alone overstates). */
  teachCpu: number;
  steps: number;
}

export interface ReportContext {
  command: string;
  machine: string;
  held: number;
  pool: number;
  minutes: number;
}

/** The line past which relay judges started to coach their team better than outcome reward (docs/judges.md). */
export const COACHING_LINE = 0.8;

interface Cell {
  judge: string;
  rule: string;
  flip: number;
  k: number;
  /** Mean over seeds, with the t interval across seeds (or one seed's bootstrap). */
  ranking: Interval;
  seeds: number;
  /** Per seed, for paired differences. */
  bySeed: Map<number, number>;
  teachCpu: number;
}

const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
const pts = (i: Interval) => `${(i.p * 100).toFixed(1)} [${(i.low * 100).toFixed(1)}, ${(i.high * 100).toFixed(1)}] points`;
const who = (flip: number) => (flip ? `careless (${Math.round(flip * 100)} % flipped)` : 'careful');
/** A judge's name in the tables: its folder and the one above it (two judges may share a folder name). */
const name = (judge: string) => judge.split('/').filter(Boolean).slice(-2).join('/');

/** The rows of every (judge, rule, flip, K > 0) pooled over seeds; the K = 0 rows are the untaught judges. */
export function cells(rows: readonly Row[]): { base: Map<string, Row>; cells: Cell[] } {
  const base = new Map(rows.filter((r) => r.k === 0).map((r) => [r.judge, r]));
  const groups = new Map<string, Row[]>();
  for (const r of rows.filter((x) => x.k > 0)) {
    const key = JSON.stringify([r.judge, r.rule, r.flip, r.k]);
    groups.set(key, [...(groups.get(key) ?? []), r]);
  }
  const out = [...groups.values()].map((rs): Cell => {
    const t = tInterval(rs.map((r) => r.ranking.p));
    const ranking = rs.length >= 2 ? t : { p: rs[0].ranking.p, low: rs[0].boot.low, high: rs[0].boot.high };
    return { judge: rs[0].judge, rule: rs[0].rule, flip: rs[0].flip, k: rs[0].k, ranking, seeds: rs.length,
      bySeed: new Map(rs.map((r) => [r.seed, r.ranking.p])), teachCpu: rs.reduce((s, r) => s + r.teachCpu, 0) / rs.length };
  });
  return { base, cells: out };
}

/** Seed-paired difference a - b (seeds both have), with its t interval; null below two shared seeds. */
function paired(a: Cell, b: Cell): Interval | null {
  const d = [...a.bySeed].filter(([s]) => b.bySeed.has(s)).map(([s, v]) => v - b.bySeed.get(s)!);
  return d.length >= 2 ? tInterval(d) : null;
}

/** The findings, in words, computed from the cells. */
export function findings(rows: readonly Row[]): string[] {
  const { base, cells: cs } = cells(rows);
  const out: string[] = [];
  for (const [judge, b] of base) {
    out.push(`- **${name(judge)}** (untaught ${formatPercent(b.boot)} bootstrap):`);
    const rules = [...new Set(cs.filter((c) => c.judge === judge).map((c) => c.rule))];
    for (const rule of rules) {
      const mine = cs.filter((c) => c.judge === judge && c.rule === rule && c.flip === 0).sort((x, y) => x.k - y.k);
      if (!mine.length) continue;
      const past = mine.find((c) => c.ranking.p >= COACHING_LINE);
      const best = mine.reduce((x, y) => (y.ranking.p > x.ranking.p ? y : x));
      const above = mine.find((c) => c.ranking.low > b.boot.high);
      out.push(`  - ${rule}: ${past ? `reaches ${pct(COACHING_LINE)} at K = ${past.k} (${formatPercent(past.ranking)})`
        : `does not reach ${pct(COACHING_LINE)} by K = ${mine[mine.length - 1].k}; best ${formatPercent(best.ranking)} at K = ${best.k}`}; `
        + (above ? `first K whose interval lies above the untaught judge's: ${above.k}` : 'no K whose interval lies above the untaught judge\'s'));
    }
    const ks = [...new Set(cs.filter((c) => c.judge === judge && c.flip === 0).map((c) => c.k))].sort((x, y) => x - y);
    const diffs = ks.flatMap((k) => {
      const u = cs.find((c) => c.judge === judge && c.rule === 'uncertainty' && c.flip === 0 && c.k === k);
      const r = cs.find((c) => c.judge === judge && c.rule === 'random' && c.flip === 0 && c.k === k);
      const d = u && r ? paired(u, r) : null;
      return d ? [{ k, d }] : [];
    });
    if (diffs.length) {
      const wins = diffs.filter(({ d }) => d.low > 0).map(({ k }) => k);
      const losses = diffs.filter(({ d }) => d.high < 0).map(({ k }) => k);
      out.push(`  - uncertainty minus random, paired by seed: ${diffs.map(({ k, d }) => `K = ${k}: ${pts(d)}`).join('; ')}. `
        + (wins.length ? `Uncertainty is ahead beyond the noise at K = ${wins.join(', ')}` : 'No label saving beyond the noise at any K')
        + (losses.length ? `; random is ahead beyond the noise at K = ${losses.join(', ')}.` : '.'));
    }
    for (const flip of [...new Set(cs.filter((c) => c.judge === judge && c.flip > 0).map((c) => c.flip))].sort()) {
      const parts = cs.filter((c) => c.judge === judge && c.flip === flip).sort((x, y) => x.k - y.k).flatMap((c) => {
        const careful = cs.find((x) => x.judge === judge && x.rule === c.rule && x.flip === 0 && x.k === c.k);
        if (!careful) return [];
        const d = paired(c, careful);
        return [`${c.rule} K = ${c.k}: ${d ? pts(d) : `${pct(c.ranking.p)} against ${pct(careful.ranking.p)} (one seed)`}`];
      });
      if (parts.length) out.push(`  - ${who(flip)} minus careful: ${parts.join('; ')}.`);
    }
  }
  return out;
}

export function correctionsReport(rows: readonly Row[], c: ReportContext): string {
  const { base, cells: cs } = cells(rows);
  const oneSeed = cs.some((x) => x.seeds < 2);
  return [
    '# Corrections: weak relay judges taught on K rated actions (the rubric plays the person)',
    '',
    `\`${c.command}\` on ${c.machine}; ${c.minutes.toFixed(0)} min of runs in all.`,
    `Held-out: ${c.held} relay steps (N = 2, 4, 6); pool asked about: ${c.pool} steps of training tasks. Every verdict is the relay rubric's,`,
    '"rubric (simulated person)"; a careless person is the same with that fraction of its verdicts turned over. Ranking: within-agent pairs',
    'with differing ratings. Summary: mean over seeds with the 95 % t interval across seeds'
      + (oneSeed ? ' (a cell of one seed shows its bootstrap over actions instead, 200 resamples)' : '') + '; a difference inside it is no gain.',
    '',
    '## Summary',
    '',
    '| judge | person | picked by | K | seeds | ranking [95 %] | teach CPU s (mean) |',
    '|---|---|---|---:|---:|---|---:|',
    ...[...base.values()].map((b) => `| ${name(b.judge)} | - | - | 0 | - | ${pct(b.ranking.p)} [${(b.boot.low * 100).toFixed(1)}, ${(b.boot.high * 100).toFixed(1)}] (bootstrap) | - |`),
    ...cs.map((x) => `| ${name(x.judge)} | ${who(x.flip)} | ${x.rule} | ${x.k} | ${x.seeds} | ${formatPercent(x.ranking)}${x.seeds < 2 ? ' (bootstrap)' : ''} | ${x.teachCpu.toFixed(0)} |`),
    '',
    '## Findings (computed from the rows)',
    '',
    ...findings(rows),
    '',
    '## Every taught judge',
    '',
    '| judge | person | picked by | K | seed | ranking [Wilson] | [bootstrap] | pairs | MAE | verdicts that changed the judge\'s score | teach s wall / CPU (steps) |',
    '|---|---|---|---:|---:|---|---|---:|---:|---:|---|',
    ...rows.map((r) => `| ${name(r.judge)} | ${r.k ? who(r.flip) : '-'} | ${r.rule} | ${r.k} | ${r.seed} | ${formatPercent(r.ranking)} | `
      + `[${(r.boot.low * 100).toFixed(1)}, ${(r.boot.high * 100).toFixed(1)}] | ${r.pairs} | ${r.mae.toFixed(2)} | `
      + `${r.k ? `${r.changed} / ${r.k}` : '-'} | ${r.k ? `${r.teachSeconds.toFixed(0)} / ${r.teachCpu.toFixed(0)} (${r.steps})` : '-'} |`),
    '',
  ].join('\n');
}

/** One panel per judge: ranking against K, a line per (rule, person), bars the summary's intervals. */
export function correctionsPlot(judges: readonly string[], rows: readonly Row[]): string {
  const { base, cells: cs } = cells(rows);
  return svgPanels(judges.map((judge) => {
    const b = base.get(judge)!;
    const lines = [...new Set(cs.filter((c) => c.judge === judge).map((c) => JSON.stringify([c.rule, c.flip])))].map((s) => JSON.parse(s) as [string, number]);
    return {
      title: `${name(judge)} (bars: 95 %; dashed: random)`, xLabel: 'corrections K', yLabel: 'ranking on held-out steps', yMin: 0.4, yMax: 1,
      series: [
        ...lines.map(([rule, flip]) => ({
          label: `${rule === 'uncertainty' ? 'judge\'s spread' : 'random'}, ${who(flip)}`,
          dashed: rule === 'random',
          points: [{ x: 0, y: b.ranking.p, low: b.boot.low, high: b.boot.high } as PlotPoint,
            ...cs.filter((c) => c.judge === judge && c.rule === rule && c.flip === flip).sort((x, y) => x.k - y.k)
              .map((c) => ({ x: c.k, y: c.ranking.p, low: c.ranking.low, high: c.ranking.high }))],
        })),
        { label: 'the coaching line (80 %)', dashed: true, color: '#777', points: [{ x: 0, y: COACHING_LINE }, { x: Math.max(...cs.map((c) => c.k), 1), y: COACHING_LINE }] },
      ],
    };
  }), 'Ranking against corrections (the rubric plays the person)');
}
