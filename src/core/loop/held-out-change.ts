/**
 * How a run ended, in numbers and in words: the held-out accuracy of the untrained team and of the
 * trained one, greedy and sampled, each with its 95 % Wilson interval, and the change paired problem by
 * problem with its interval (both evaluations play the same held-out problems). A change counts as a
 * gain or a loss only when its paired interval excludes zero.
 *
 * For: the end of `mappa train` (src/cli/train-output.ts summaryLines) and the page's verdict on a run
 * (the same figures, the same words). Not for: measuring (evaluate.ts, eval-queue.ts).
 *
 * Example: changeLine(heldOutChanges(baseline, final, 0.6)[0])
 *   -> 'held-out greedy on 200 problems: untrained 25.0 % [19.5, 31.4] -> trained 30.5 % [24.5, 37.2], +5.5 pts [+0.7, +10.3] paired'
 */
import { accuracyInterval, formatPercent, formatPoints, pairedDifference, type Interval } from '../stats/intervals.ts';
import type { EvalResult } from './records.ts';

export interface HeldOutChange {
  pass: 'greedy' | 'sampled';
  /** "greedy" or "T=0.6". */
  name: string;
  /** Problems of the evaluations. */
  tasks: number;
  untrained: Interval | null;
  trained: Interval | null;
  /** Trained - untrained, paired by problem (null unless both kept per-problem results on the same problems). */
  paired: (Interval & { n: number }) | null;
  /** 'gain' / 'loss' when the paired interval excludes zero, 'none' when it holds zero, null with no pairing. */
  verdict: 'gain' | 'loss' | 'none' | null;
}

/** The change of both passes, greedy then sampled (at `evalTemperature`), from the untrained team's evaluation to the trained one's. */
export function heldOutChanges(baseline: EvalResult | null, final: EvalResult | null, evalTemperature: number): HeldOutChange[] {
  return (['greedy', 'sampled'] as const).map((pass) => {
    const acc = (r: EvalResult | null) => (r ? accuracyInterval(r[pass], r.tasks, r.perTask?.[pass]) : null);
    const same = baseline?.perTask && final?.perTask && baseline.perTask.ids.join() === final.perTask.ids.join();
    const d = same ? pairedDifference(final!.perTask![pass], baseline!.perTask![pass]) : null;
    const paired = d ? { p: d.p, low: d.low, high: d.high, n: d.n } : null;
    const verdict = paired ? (paired.low > 0 ? 'gain' : paired.high < 0 ? 'loss' : 'none') : null;
    return {
      pass, name: pass === 'greedy' ? 'greedy' : `T=${evalTemperature}`, tasks: (final ?? baseline)?.tasks ?? 0,
      untrained: acc(baseline), trained: acc(final), paired, verdict,
    };
  });
}

/** The CLI's line: "held-out greedy on 200 problems: untrained 25.0 % [...] -> trained 30.5 % [...], +5.5 pts [...] paired" ('' when there is nothing). */
export function changeLine(c: HeldOutChange): string {
  const parts = [c.untrained ? `untrained ${formatPercent(c.untrained)}` : '', c.trained ? `trained ${formatPercent(c.trained)}` : ''].filter(Boolean);
  if (!parts.length) return '';
  return `held-out ${c.name} on ${c.tasks} problems: ${parts.join(' -> ')}${c.paired ? `, ${formatPoints(c.paired)} paired` : ''}`;
}

/** The same change as a sentence that says whether it is a gain: "... +1.0 pts [-5.0, +7.0] paired — no change beyond the noise". */
export function changeWords(c: HeldOutChange): string {
  const line = changeLine(c);
  if (!line || !c.verdict) return line;
  const verdict = {
    gain: 'a gain beyond the noise',
    loss: 'a loss beyond the noise, so the trained team is worse than the untrained one',
    none: 'no change beyond the noise',
  }[c.verdict];
  return `${line} — ${verdict}`;
}
