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
import { accuracyInterval, formatPercent, formatPoints, pairedDifference, unpairedDifference, wilson, type Interval } from '../stats/intervals.ts';
import type { EvalResult } from '../loop/records.ts';

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

/**
 * The change of both passes, greedy then sampled (at `evalTemperature`), from the untrained team's evaluation to the
 * trained one's; greedy alone at evalTemperature 0 (one pass was played).
 */
export function heldOutChanges(baseline: EvalResult | null, final: EvalResult | null, evalTemperature: number): HeldOutChange[] {
  return (evalTemperature > 0 ? ['greedy', 'sampled'] as const : ['greedy'] as const).map((pass) => {
    const acc = (r: EvalResult | null) => (r ? accuracyInterval(r[pass], r.tasks, r.perTask?.[pass]) : null);
    const same = baseline?.perTask && final?.perTask && baseline.perTask.ids.join() === final.perTask.ids.join();
    const d = same ? pairedDifference(final!.perTask![pass], baseline!.perTask![pass]) : null;
    const paired = d ? { p: d.p, low: d.low, high: d.high, n: d.n } : null;
    const verdict = paired ? verdictOf(paired) : null;
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

/**
 * For a team whose steps the rubric checks (the relay): its greedy step accuracy over every agent's held-out
 * steps, untrained -> trained, with Wilson intervals and the difference's (unpaired: the steps of a chain
 * depend on the ones before them, so this interval is a little narrow). Null when the evaluations hold no
 * per-agent step counts. Example (relay of 128, 200 problems):
 *   'held-out greedy step accuracy on 25600 steps: untrained 84.6 % [84.1, 85.0] -> trained 97.6 % [97.4, 97.8],
 *    +13.1 pts [+12.6, +13.5] — a gain beyond the noise'
 */
export function stepChangeWords(baseline: EvalResult | null, final: EvalResult | null): string | null {
  const [a, b] = [stepTotals(baseline), stepTotals(final)];
  if (!a || !b || !a.judged || !b.judged) return null;
  const d = unpairedDifference(b.right, b.judged, a.right, a.judged);
  return `held-out greedy step accuracy on ${b.judged} steps: untrained ${formatPercent(wilson(a.right, a.judged))} -> `
    + `trained ${formatPercent(wilson(b.right, b.judged))}, ${formatPoints(d)} — ${STEP_WORDS[verdictOf(d)]}`;
}

const STEP_WORDS = { gain: 'a gain beyond the noise', loss: 'a loss beyond the noise', none: 'no change beyond the noise' } as const;

/**
 * Steps right and steps judged over every agent of an evaluation (null without per-agent counts).
 * Example: agentSteps {right: [3, 4], judged: [5, 5]} -> {right: 7, judged: 10}
 */
export function stepTotals(r: EvalResult | null | undefined): { right: number; judged: number } | null {
  if (!r?.agentSteps) return null;
  return { right: r.agentSteps.right.reduce((x, y) => x + y, 0), judged: r.agentSteps.judged.reduce((x, y) => x + y, 0) };
}

/** A difference's verdict: 'gain' / 'loss' when its interval excludes zero, else 'none'. */
function verdictOf(d: Interval): 'gain' | 'loss' | 'none' {
  return d.low > 0 ? 'gain' : d.high < 0 ? 'loss' : 'none';
}
