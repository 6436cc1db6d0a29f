/**
 * Seconds per phase of training runs, compared: `npm run bench -- phases RUN_A RUN_B [...]`.
 * Reads each run folder's metrics.jsonl (what `mappa train` writes) and prints one table: per run
 * and phase (rollout, coach, update, eval), the mean seconds per iteration, and for every run after
 * the first its ratio to the first — the ratio of geometric means over iterations with its 95 %
 * interval (logRatioInterval: iterations as the samples, t on the log scale). Runs made back to
 * back on one machine with one command but two trees (e.g. a git worktree of an older commit)
 * give the before / after of a change to speed.
 *
 * Example: npm run bench -- phases /tmp/before /tmp/after
 *   | phase | /tmp/before s/it | /tmp/after s/it | after / before [95 %] |
 *   | rollout | 11.1 (6 it) | 4.6 (6 it) | 0.42 [0.36, 0.48] |
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { formatRatio, logRatioInterval } from '../src/core/stats/intervals.ts';

const PHASES = ['rollout', 'coach', 'update', 'eval'] as const;

/** Seconds of each phase per iteration (iterations that ran the phase: eval only every few). */
export function phaseSeconds(metricsJsonl: string): Record<string, number[]> {
  const out: Record<string, number[]> = Object.fromEntries(PHASES.map((p) => [p, []]));
  for (const line of metricsJsonl.split('\n')) {
    if (!line.trim()) continue;
    const seconds = (JSON.parse(line) as { seconds?: Record<string, number> }).seconds;
    if (!seconds) continue; // the untrained evaluation's record
    for (const p of PHASES) if (seconds[p] > 0) out[p].push(seconds[p]);
  }
  return out;
}

export function formatPhases(runs: { name: string; seconds: Record<string, number[]> }[]): string {
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const [first, ...rest] = runs;
  const head = `| phase | ${runs.map((r) => `${r.name} s / iteration`).join(' | ')} | ${rest.map((r) => `${r.name} / ${first.name} [95 %]`).join(' | ')} |`;
  const rule = `|---|${runs.map(() => '---:').join('|')}|${rest.map(() => '---:').join('|')}|`;
  const rows = PHASES.filter((p) => runs.some((r) => r.seconds[p].length)).map((p) => {
    const cells = runs.map((r) => (r.seconds[p].length ? `${mean(r.seconds[p]).toFixed(2)} (${r.seconds[p].length} it)` : '–'));
    const ratios = rest.map((r) => {
      const i = r.seconds[p].length && first.seconds[p].length ? logRatioInterval(first.seconds[p], r.seconds[p]) : null;
      return i ? formatRatio(i) : '–';
    });
    return `| ${p} | ${cells.join(' | ')} | ${ratios.join(' | ')} |`;
  });
  return [head, rule, ...rows].join('\n') + '\n';
}

export async function main(argv: string[]): Promise<void> {
  if (argv.length < 2) throw new Error('bench phases: give two or more run folders (each with a metrics.jsonl), the first being the baseline');
  const runs = argv.map((dir) => {
    let text: string;
    try {
      text = readFileSync(path.join(dir, 'metrics.jsonl'), 'utf8');
    } catch {
      throw new Error(`bench phases: ${dir} has no metrics.jsonl; give the folders that mappa train --out wrote`);
    }
    return { name: path.basename(dir), seconds: phaseSeconds(text) };
  });
  process.stdout.write(formatPhases(runs));
}
