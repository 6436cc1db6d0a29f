/**
 * The inspector's step list (src/ui/step-list.ts) on hand-made steps: wrong ones (verdict below 5, the
 * rater's before the coach's) in order with the first named, paging clamped at the end, and a jump to
 * an agent landing on a page that holds its step.
 */
import { describe, expect, it } from 'vitest';
import { isWrongStep, jumpStart, shownSteps } from '../../../src/ui/step-list.ts';

const step = (agent: number, score?: number, rater?: number) => ({
  agentId: `agent${agent}`,
  coach: score === undefined ? undefined : { raw: '', score, ok: true, attempts: 1 },
  rater: rater === undefined ? undefined : { score: rater },
});

describe('the inspector\'s step list', () => {
  it('a step is wrong by the verdict that colours it: the rater\'s first, else the coach\'s, below 5', () => {
    expect(isWrongStep(step(1, 10, 0))).toBe(true); // the judge liked a wrong step: the rater says wrong
    expect(isWrongStep(step(1, 0, 10))).toBe(false);
    expect(isWrongStep(step(1, 4))).toBe(true);
    expect(isWrongStep(step(1, 5))).toBe(false);
    expect(isWrongStep(step(1))).toBe(false); // unscored: not wrong
  });

  it('wrong steps only lists them in order, the first wrong step first, and pages by 16', () => {
    const actions = Array.from({ length: 128 }, (_, i) => step(i + 1, 10, i % 5 === 3 ? 0 : 10)); // agents 4, 9, 14, ... wrong
    const wrong = shownSteps(actions, { wrongOnly: true });
    expect(wrong.firstWrong).toBe(3);
    expect(wrong.indices[0]).toBe(3);
    expect(wrong.total).toBe(25); // 3, 8, ..., 123
    expect(wrong.indices).toHaveLength(16);
    expect(shownSteps(actions, { wrongOnly: true, start: 100 })).toMatchObject({ start: 9, indices: [48, 53, 58, 63, 68, 73, 78, 83, 88, 93, 98, 103, 108, 113, 118, 123] });
    expect(shownSteps(actions).indices).toEqual(Array.from({ length: 16 }, (_, i) => i));
    expect(shownSteps([step(1, 10)], { wrongOnly: true })).toEqual({ indices: [], firstWrong: null, total: 0, start: 0 });
  });

  it('a jump lands on a page holding the agent\'s first step, clamped at both ends', () => {
    const actions = Array.from({ length: 128 }, (_, i) => step(i + 1, 10));
    expect(jumpStart(actions, 'agent40')).toBe(37);
    expect(shownSteps(actions, { start: jumpStart(actions, 'agent40')! }).indices).toContain(39);
    expect(jumpStart(actions, 'agent1')).toBe(0);
    expect(jumpStart(actions, 'agent128')).toBe(112);
    expect(jumpStart(actions, 'agent999')).toBeNull();
  });
});
