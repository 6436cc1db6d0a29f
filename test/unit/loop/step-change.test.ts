/**
 * The end of a relay run in words: the greedy step accuracy over every agent's held-out steps, untrained ->
 * trained, against hand-worked Wilson intervals and the unpaired (Newcombe) difference (src/core/measure/held-out-change.ts).
 */
import { describe, expect, it } from 'vitest';
import { stepChangeWords } from '../../../src/core/measure/held-out-change.ts';
import type { EvalResult } from '../../../src/core/loop/records.ts';

const ev = (right: number[], judged: number[]): EvalResult =>
  ({ greedy: 0, sampled: 0, tasks: 10, agentSteps: { ids: right.map((_, i) => `agent${i + 1}`), right, judged } }) as EvalResult;

describe('stepChangeWords', () => {
  it('sums every agent\'s steps and says whether the change is beyond the noise', () => {
    // 70/100 -> 90/100: Wilson [60.4, 78.1] and [82.6, 94.5]; Newcombe's square-and-add:
    // low = 0.2 - sqrt((0.900 - 0.826)^2 + (0.781 - 0.700)^2) = 0.090, high = 0.2 + sqrt((0.945 - 0.900)^2 + (0.700 - 0.604)^2) = 0.306
    expect(stepChangeWords(ev([35, 35], [50, 50]), ev([45, 45], [50, 50])))
      .toBe('held-out greedy step accuracy on 100 steps: untrained 70.0 % [60.4, 78.1] -> trained 90.0 % [82.6, 94.5], +20.0 pts [+9.0, +30.6] — a gain beyond the noise');
    expect(stepChangeWords(ev([40], [50]), ev([41], [50]))).toMatch(/no change beyond the noise$/);
    expect(stepChangeWords(ev([45], [50]), ev([30], [50]))).toMatch(/a loss beyond the noise$/);
  });
  it('is null without per-agent step counts (a team the rubric does not check step by step)', () => {
    expect(stepChangeWords({ greedy: 0.5, sampled: 0.5, tasks: 10 } as EvalResult, ev([1], [2]))).toBeNull();
    expect(stepChangeWords(null, null)).toBeNull();
  });
});
