/**
 * What `mappa train` prints: progress on stderr (a redrawn bar on a terminal, one line per iteration
 * for logs and CI) and, at the end, a few readable lines on stdout: the accuracies with their 95 %
 * intervals, the change paired problem by problem and whether it is a gain, in words, and where the files are.
 * Example: summaryLines({...}, config, false) ->
 *   trained 30 of 30 iterations (process reward, coach rule): 720 rollouts in 14m05s
 *   held-out greedy on 200 problems: untrained 25.0 % [19.5, 31.4] -> trained 30.5 % [24.5, 37.2], +5.5 pts [+0.7, +10.3] paired — a gain beyond the noise
 *   (a relay team also: held-out greedy step accuracy on N steps: untrained ... -> trained ..., +x pts [...] — <the same words>)
 *   files: runs/math-chain-process-seed0/ (adapters/<agent>/ as PEFT, metrics.jsonl, trajectories.jsonl, summary.json)
 */
import type { EvalResult, Phase, TrainEvent } from '../core/loop/records.ts';
import type { TrainConfig } from '../core/loop/config.ts';
import { changeWords, heldOutChanges, stepChangeWords } from '../core/measure/held-out-change.ts';

function bar(done: number, total: number, width = 24): string {
  const n = Math.round((width * done) / Math.max(total, 1));
  return '[' + '#'.repeat(n) + '.'.repeat(width - n) + ']';
}

function fmtSeconds(s: number): string {
  return s >= 90 ? `${Math.floor(s / 60)}m${String(Math.round(s % 60)).padStart(2, '0')}s` : `${Math.round(s)}s`;
}

/** The run's end in a few lines: accuracies with 95 % intervals, the change paired by problem, where the files are. */
export function summaryLines(s: {
  out: string; iterations: number; reward: string; coach: string; seconds: number; rollouts: number;
  baseline: EvalResult | null; final: EvalResult | null;
}, config: TrainConfig, paused: boolean): string {
  const lines = [`${paused ? 'paused after' : 'trained'} ${s.iterations} of ${config.iterations} iterations (${s.reward} reward, coach ${s.coach}): ` +
    `${s.rollouts} rollouts in ${fmtSeconds(s.seconds)}`];
  // The same figures the page's verdict on a run shows (core/measure/held-out-change.ts).
  for (const change of heldOutChanges(s.baseline, s.final, config.evalTemperature)) {
    const line = changeWords(change);
    if (line) lines.push(line);
  }
  const steps = stepChangeWords(s.baseline, s.final);
  if (steps) lines.push(steps);
  lines.push(`files: ${s.out}/ (adapters/<agent>/ as PEFT, metrics.jsonl, trajectories.jsonl, summary.json)${paused ? '; continue with --resume' : ''}`);
  return lines.join('\n') + '\n';
}

export const pct = (x: number) => `${(x * 100).toFixed(1)}%`;

/** The sampled pass after the greedy one ("<sep>T=1 12.0%"), or nothing when the run evaluates greedy only (evalTemperature 0). */
export const sampledPct = (evalTemperature: number, sampled: number, sep = ' ') =>
  (evalTemperature > 0 ? `${sep}T=${evalTemperature} ${pct(sampled)}` : '');

/** Progress on stderr: a redrawn bar on a terminal, one line per iteration for logs and CI. */
export function printer(config: TrainConfig, startIteration: number): (e: TrainEvent) => void {
  const started = Date.now();
  let phase: Phase = 'rollout';
  const tty = process.stderr.isTTY;
  return (e) => {
    if (e.type === 'phase') phase = e.phase;
    if (tty && (e.type === 'phase' || e.type === 'iteration')) {
      const done = e.type === 'iteration' ? e.metrics.iteration : e.iteration - 1;
      const per = done > startIteration ? (Date.now() - started) / 1000 / (done - startIteration) : 0;
      const eta = per ? ` eta ${fmtSeconds(per * (config.iterations - done))}` : '';
      process.stderr.write(`\r${bar(done, config.iterations)} ${done}/${config.iterations} ${phase.padEnd(10)}${eta}   `);
    }
    if (e.type === 'iteration') {
      const m = e.metrics;
      const ev = m.eval ? ` | held-out greedy ${pct(m.eval.greedy)}${sampledPct(config.evalTemperature, m.eval.sampled)}` : '';
      const t = m.coach.tiers;
      const asked = t?.person ? ` person ${t.person.answered}/${t.person.asked} answered (${t.person.skipped} skipped, ${t.person.seconds.toFixed(0)} s)` : '';
      const tiers = t ? ` tiers ${t.scored.join('/')}${asked} judge ${t.judge}${t.taught ? ` taught -> ${t.taught.judge} on ${t.taught.corrections} answers` : ''}` : '';
      const scores = Object.entries(m.perAgent).map(([id, a]) => `${id} ${a.meanScore.toFixed(1)}`).join(' ');
      process.stderr.write(`${tty ? '\r' : ''}iter ${m.iteration}: train acc ${(m.trainAccuracy * 100).toFixed(0)}% reward ${m.meanReward.toFixed(2)} ` +
        `kl ${m.kl.toFixed(4)} scores ${scores} coach-fail ${m.coach.failures}${tiers} level ${m.filters.level}${ev}\n`);
    }
    if (e.type === 'warning') process.stderr.write(`${tty ? '\n' : ''}warning (iteration ${e.iteration}): ${e.message}\n`);
  };
}
