/**
 * A judge build's loss against its steps, and its checkpoints' ranking beside it (`npm run -s bench --
 * judge-loss BUILD.log [RANKING.md]`): the plateau and the sudden drop of scripts/pretrain-relay-judge.ts.
 *
 * For: docs/judges.md's plot (bench/results/relay-judge-loss.svg and its table). It reads what the build
 * printed ("step 3300: loss 0.0593 (1329 s)" every 25 steps) and, optionally, a `bench judge --relay`
 * report whose rows name checkpoint folders ending in step-<N>.
 * Not for: training or ranking anything itself.
 *
 * Example: npm run -s bench -- judge-loss bench/results/relay-judge-build.txt bench/results/relay-judge-team.md > bench/results/relay-judge-loss.md
 */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { svgPanels } from './plot.ts';

/** (step, loss, seconds) from a build log's "step N: loss L (S s)" lines. Example: "step 25: loss 8.0996 (10 s)" -> {step: 25, loss: 8.0996, seconds: 10}. */
export function lossLines(log: string): { step: number; loss: number; seconds: number }[] {
  return [...log.matchAll(/step (\d+): loss ([\d.]+) \((\d+) s\)/g)].map((m) => ({ step: Number(m[1]), loss: Number(m[2]), seconds: Number(m[3]) }));
}

/** (step, ranking %) from a `bench judge --relay` report's rows of checkpoints ("| judge `.../step-3300` | ... | 57.7 % [55.5, 60.0] |"). */
export function rankingRows(report: string): { step: number; p: number; low: number; high: number }[] {
  return [...report.matchAll(/\| judge `[^`]*step-(\d+)` \| \d+ \| [^|]+\| ([\d.]+) % \[([\d.]+), ([\d.]+)\]/g)]
    .map((m) => ({ step: Number(m[1]), p: Number(m[2]), low: Number(m[3]), high: Number(m[4]) }));
}

export async function main(argv: string[]): Promise<void> {
  const [logFile, rankingFile] = argv;
  if (!logFile) throw new Error('bench judge-loss: give the build log (what scripts/pretrain-relay-judge.ts printed, e.g. bench/results/relay-judge-build.txt), and optionally a bench judge --relay report');
  const losses = lossLines(await readFile(logFile, 'utf8'));
  if (!losses.length) throw new Error(`bench judge-loss: ${logFile} has no "step N: loss L (S s)" lines`);
  const ranks = rankingFile ? rankingRows(await readFile(rankingFile, 'utf8')) : [];
  const out = path.join(path.dirname(logFile), 'relay-judge-loss.svg');
  await writeFile(out, svgPanels([
    { title: 'Training loss per answer token', xLabel: 'training steps', yLabel: 'loss (log scale)', logY: true,
      series: [{ label: 'loss (every 25 steps)', points: losses.filter((l) => l.step > 0).map((l) => ({ x: l.step, y: Math.max(l.loss, 1e-4) })), color: '#1f77b4' }] },
    ...(ranks.length ? [{ title: 'Checkpoints: ranking vs the rater', xLabel: 'training steps', yLabel: 'within-agent ranking accuracy (%)', yMin: 40, yMax: 100,
      series: [{ label: 'ranking [95 %]', points: ranks.map((r) => ({ x: r.step, y: r.p, low: r.low, high: r.high })), color: '#2ca02c' }] }] : []),
  ], 'The relay judge: a plateau, then a sudden drop'));
  const at = (step: number) => losses.reduce((best, l) => (Math.abs(l.step - step) < Math.abs(best.step - step) ? l : best), losses[0]);
  const rows = ['| step | loss (nearest logged) | minutes in | ranking of the checkpoint [95 %] |', '|---:|---:|---:|---|'];
  for (let s = 500; s <= losses[losses.length - 1].step; s += 500) {
    const l = at(s);
    const r = ranks.find((x) => x.step === s);
    rows.push(`| ${s} | ${l.loss.toFixed(4)} | ${(l.seconds / 60).toFixed(1)} | ${r ? `${r.p.toFixed(1)} % [${r.low.toFixed(1)}, ${r.high.toFixed(1)}]` : '-'} |`);
  }
  process.stdout.write([`Loss of ${logFile} against its steps${rankingFile ? `, with the checkpoints ranked in ${rankingFile}` : ''}; plot: ${path.basename(out)}.`, '', ...rows, ''].join('\n'));
}
