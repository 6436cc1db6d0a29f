/**
 * The page's progress bars, from the run's events: downloads, pre-fill, decoding, each phase of an
 * iteration (timed by how long it took last time) and the evaluation measured alongside (counted:
 * problems done of all).
 *
 * Decoding and pre-fill bars change every few milliseconds; a bar is sent at most every
 * PROGRESS_MS (a redraw costs the same cores the model needs: on a CPU every repaint competes with
 * training). Starts and finishes always go through.
 *
 * For: lab.ts, which turns trainer events into bars here. Not for: drawing (src/ui/ProgressBars).
 *
 * Example: const bars = new ProgressBars((p) => post({ kind: 'progress', progress: p }));
 *          bars.phase('update', 'start');   // -> { task: 'update', label: 'updating adapters', done: 0, total: 1, expected: 8.8 }
 *          bars.phase('update', 'end');     // -> { ..., done: 1, finished: true }; 'expected' next time is the seconds it took
 */
import type { GenerationProgress } from '../engine/model/generate.ts';
import type { EvalResult, Phase } from '../loop/records.ts';
import type { ProgressInfo } from './protocol.ts';

const PROGRESS_MS = 250;

const PHASE_LABELS: Record<Phase, string> = {
  rollout: 'rollouts', coach: 'coaching every action', update: 'updating adapters', eval: 'held-out evaluation', checkpoint: 'saving checkpoint',
};

export class ProgressBars {
  private last = new Map<string, number>();
  private phaseStarts = new Map<Phase, number>();
  /** Seconds each phase took last time: the expected length of its bar. */
  private phaseSeconds: Partial<Record<Phase, number>> = {};
  /** Pre-fill bars are timed by the last measured rate (prompt tokens per second); decoding bars by step. */
  private prefillRate = 0;
  private prefillStarted = 0;
  private decodeStarted = 0;

  constructor(private readonly send: (p: ProgressInfo) => void) {}

  /** Any bar, throttled (starts and finishes always go through). */
  report(p: ProgressInfo): void {
    const now = performance.now();
    const edge = p.finished || p.done === 0;
    if (!edge && now - (this.last.get(p.task) ?? -Infinity) < PROGRESS_MS) return;
    this.last.set(p.task, p.finished ? -Infinity : now);
    this.send(p);
  }

  /** An iteration's phase began or ended. The rollouts' end (or the coaching's or the update's start) takes down their pre-fill and decoding bars. */
  phase(phase: Phase, status: 'start' | 'end'): void {
    const now = performance.now();
    if ((phase === 'rollout' && status === 'end') || (status === 'start' && (phase === 'coach' || phase === 'update'))) {
      // A generation whose rows all stopped early never reports its last step: its bar would stay up through the update.
      for (const task of ['prefill', 'decode'] as const) this.report({ task, label: '', done: 1, total: 1, finished: true });
    }
    if (status === 'start' && !this.phaseStarts.has(phase)) this.phaseStarts.set(phase, now);
    const started = this.phaseStarts.get(phase) ?? now;
    const finished = status === 'end';
    if (finished) {
      this.phaseSeconds[phase] = (now - started) / 1000;
      this.phaseStarts.delete(phase);
    }
    this.report({ task: phase, label: PHASE_LABELS[phase], done: finished ? 1 : 0, total: 1, expected: this.phaseSeconds[phase], finished });
  }

  /** One agent's pre-fill (a timed bar) or decoding step (a counted bar with the time left). */
  generation(agentId: string, p: GenerationProgress): void {
    const now = performance.now();
    if (p.phase === 'prefill') {
      const label = `pre-fill: ${agentId}, ${p.rows} prompt${p.rows === 1 ? '' : 's'} (${p.tokens} tokens)`;
      if (p.done === 0) {
        this.prefillStarted = now;
        this.report({ task: 'prefill', label, done: 0, total: 1, expected: this.prefillRate > 0 ? p.tokens / this.prefillRate : undefined });
      } else {
        const seconds = (now - this.prefillStarted) / 1000;
        if (seconds > 0) this.prefillRate = p.tokens / seconds;
        this.report({ task: 'prefill', label, done: 1, total: 1, finished: true });
      }
      return;
    }
    // A generation's first step starts a new bar (rows that stop early never reach the last step).
    if (p.done <= 1) {
      this.report({ task: 'decode', label: '', done: 0, total: 0, finished: true });
      this.decodeStarted = now;
    }
    // Time left from this generation's own step rate, measured here (the page's clock lags its messages).
    const perStep = p.done > 1 ? (now - this.decodeStarted) / 1000 / (p.done - 1) : undefined;
    this.report({ task: 'decode', label: `decoding: ${agentId}, ${p.rows} row${p.rows === 1 ? '' : 's'} still writing`, done: p.done, total: p.total,
      finished: p.done >= p.total, eta: perStep === undefined ? undefined : perStep * (p.total - p.done) });
  }

  /** The evaluation measured alongside training: problems done of all, as a counted bar. */
  evaluation(iteration: number, r: EvalResult): void {
    const label = iteration === 0 ? 'measuring the untrained team (held-out problems)' : `measuring the team after iteration ${iteration} (held-out problems)`;
    this.report({ task: 'baseline', label, done: r.tasks, total: r.of ?? r.tasks, finished: r.of === undefined });
  }

  /** Bars of a loop that stopped (pause, error) would otherwise stay on screen. */
  clear(): void {
    for (const task of ['prefill', 'decode', 'rollout', 'coach', 'update', 'eval', 'checkpoint', 'baseline'] as const) {
      this.report({ task, label: '', done: 1, total: 1, finished: true });
    }
    this.phaseStarts.clear();
  }
}
