/**
 * A chart's data as text, for readers who cannot see it: a one-line summary (the chart's accessible
 * label: each line's first and latest value, or for many lines their spread) and a table of every point
 * with its interval (ChartData.svelte shows it under a "table" toggle). Built from the same numbers the
 * chart draws, so the words cannot drift from the picture.
 *
 * For: every chart of the page (Chart.svelte's live charts, AgentHeat's heat maps, the lesson's and Scale
 * the team's SVG charts). Not for: drawing, or choosing what to draw.
 * Example: chartSummary({ title: 'Team accuracy', x: ITERATIONS, xs: [0, 5, 15], format: percent,
 *            series: [{ label: 'process reward', values: [0.31, 0.4, 0.52] }] })
 *   -> 'Team accuracy: process reward 31.0 % → 52.0 % over 15 iterations'
 */

export interface TextSeries {
  label: string;
  /** One per x (null: no point there). */
  values: (number | null)[];
  /** Per point, an interval (e.g. a 95 % Wilson interval); null where none. */
  low?: (number | null)[];
  high?: (number | null)[];
}

/** What the x axis counts: its column heading, and how a span of it is said. */
export interface XAxis {
  /** Column heading and singular noun: 'iteration', 'agents', 'agent'. */
  name: string;
  /** The span in words ('over 15 iterations'; 'from 2 to 6 agents'). */
  span: (first: number | string, last: number | string) => string;
}

export const ITERATIONS: XAxis = {
  name: 'iteration',
  span: (a, b) => (typeof a === 'number' && typeof b === 'number' ? `over ${b - a} iteration${b - a === 1 ? '' : 's'}` : `from ${a} to ${b}`),
};
export const AGENTS: XAxis = { name: 'agents', span: (a, b) => `from ${a} to ${b} agents` };
/** One point per agent of a team (agent 1, agent 2, ...). */
export const AGENT: XAxis = { name: 'agent', span: (a, b) => `from agent ${a} to agent ${b}` };

export interface ChartText {
  title: string;
  x: XAxis;
  /** The x of each point, shared by every series. */
  xs: (number | string)[];
  series: TextSeries[];
  /** A value in words (default: 3 significant digits). */
  format?: (v: number) => string;
  /** What each series is, as the first column's heading of a table with a row per series (default 'line'; a heat map: 'agent'). */
  lineName?: string;
  /** 'trend' (default): first → latest per line; 'spread': the lowest, the highest and the mean over x (a strip of agents). */
  kind?: 'trend' | 'spread';
}

/** Above this many lines the summary gives their spread, not each line (a relay of 128). */
export const MAX_SUMMARY_LINES = 6;

export const threeDigits = (v: number): string => {
  const a = Math.abs(v);
  if (a >= 1e4) return `${+(v / 1000).toPrecision(3)}k`;
  if (a > 0 && a < 1e-3) return v.toExponential(1);
  return String(+v.toPrecision(3));
};
export const percent = (v: number): string => `${(v * 100).toFixed(1)} %`;

const drawn = (v: number | null | undefined): v is number => v !== null && v !== undefined && Number.isFinite(v);

/** The first and latest drawn points of a series: their indices and values. */
function ends(s: TextSeries): { i: number; j: number; first: number; last: number } | null {
  const i = s.values.findIndex(drawn);
  if (i < 0) return null;
  let j = s.values.length - 1;
  while (!drawn(s.values[j])) j--;
  return { i, j, first: s.values[i]!, last: s.values[j]! };
}

/** "label 31.0 % → 52.0 % over 15 iterations", or "label 40.0 % at iteration 5" for a single point. */
function trend(t: ChartText, s: TextSeries, fmt: (v: number) => string): string {
  const e = ends(s);
  if (!e) return `${s.label}: no data yet`;
  if (e.i === e.j) return `${s.label} ${fmt(e.first)} at ${t.x.name} ${t.xs[e.i]}`;
  return `${s.label} ${fmt(e.first)} → ${fmt(e.last)} ${t.x.span(t.xs[e.i], t.xs[e.j])}`;
}

/**
 * The chart in one line: its title, then per line its first and latest value and the span between
 * ('trend'); past MAX_SUMMARY_LINES lines, how many, their mean first → latest and the lowest and highest
 * latest; for a 'spread' chart (one value per agent), each line's mean, lowest and highest over x.
 */
export function chartSummary(t: ChartText): string {
  const fmt = t.format ?? threeDigits;
  const live = t.series.filter((s) => s.values.some(drawn));
  if (!live.length) return `${t.title}: no data yet`;
  if (t.kind === 'spread') {
    const parts = live.map((s) => {
      const idx = s.values.flatMap((v, i) => (drawn(v) ? [i] : []));
      const lo = idx.reduce((a, i) => (s.values[i]! < s.values[a]! ? i : a));
      const hi = idx.reduce((a, i) => (s.values[i]! > s.values[a]! ? i : a));
      const mean = idx.reduce((a, i) => a + s.values[i]!, 0) / idx.length;
      return `${s.label} mean ${fmt(mean)}, lowest ${fmt(s.values[lo]!)} (${t.x.name} ${t.xs[lo]}), highest ${fmt(s.values[hi]!)} (${t.x.name} ${t.xs[hi]})`;
    });
    return `${t.title}: ${parts.join('; ')}`;
  }
  if (t.series.length <= MAX_SUMMARY_LINES) return `${t.title}: ${t.series.map((s) => trend(t, s, fmt)).join('; ')}`;
  // Many lines: their mean at the first and the latest x any of them has, and who is lowest and highest at the latest.
  const all = live.map((s) => ({ s, e: ends(s)! }));
  const first = Math.min(...all.map((a) => a.e.i));
  const last = Math.max(...all.map((a) => a.e.j));
  const at = (k: number) => live.map((s) => s.values[k]).filter(drawn);
  const mean = (vs: number[]) => vs.reduce((a, v) => a + v, 0) / vs.length;
  const latest = all.filter((a) => a.e.j === last).sort((a, b) => a.e.last - b.e.last);
  const head = `${t.title}: ${t.series.length} lines, mean ${fmt(mean(at(first)))}`
    + (last > first ? ` → ${fmt(mean(at(last)))} ${t.x.span(t.xs[first], t.xs[last])}` : ` at ${t.x.name} ${t.xs[first]}`);
  return `${head}; lowest ${latest[0].s.label} ${fmt(latest[0].e.last)}, highest ${latest.at(-1)!.s.label} ${fmt(latest.at(-1)!.e.last)}`;
}

/** A table: its header row and body rows, every cell text ('–' where a series has no point). */
export interface TextTable { head: string[]; rows: string[][] }

/**
 * The chart's points as a table. 'x' (default): one row per x with a point, a column per series and,
 * for a series with intervals, its interval beside it ("[25.0 %, 38.0 %]"). 'line': one row per series,
 * a column per x (a heat map of 128 agents reads down its agents).
 */
export function chartTable(t: ChartText, rowsPer: 'x' | 'line' = 'x'): TextTable {
  const fmt = t.format ?? threeDigits;
  const cell = (s: TextSeries, k: number) => (drawn(s.values[k]) ? fmt(s.values[k]!) : '–');
  const banded = (s: TextSeries) => Boolean(s.low && s.high && s.low.some(drawn));
  const interval = (s: TextSeries, k: number) => (drawn(s.low?.[k]) && drawn(s.high?.[k]) ? `[${fmt(s.low![k]!)}, ${fmt(s.high![k]!)}]` : '–');
  const kept = t.xs.map((_, k) => k).filter((k) => t.series.some((s) => drawn(s.values[k])));
  if (rowsPer === 'line') {
    return { head: [t.lineName ?? 'line', ...kept.map((k) => `${t.x.name} ${t.xs[k]}`)],
      rows: t.series.map((s) => [s.label, ...kept.map((k) => cell(s, k) + (banded(s) && drawn(s.values[k]) ? ` ${interval(s, k)}` : ''))]) };
  }
  const head = [t.x.name, ...t.series.flatMap((s) => (banded(s) ? [s.label, `${s.label}: 95 % interval`] : [s.label]))];
  const rows = kept.map((k) => [String(t.xs[k]), ...t.series.flatMap((s) => (banded(s) ? [cell(s, k), interval(s, k)] : [cell(s, k)]))]);
  return { head, rows };
}
