/** Tier 3's rules (src/core/coach/person-tier.ts), worked by hand: whom to ask, the answer lines, and the wait. */
import { describe, expect, it } from 'vitest';
import { AnswerBoard, parseAnswerLine, pickForPerson } from '../../../src/core/coach/person-tier.ts';

describe('the person tier', () => {
  it('asks about the escalated actions where the tiers disagree most, round(share x n) of them', () => {
    // picks 0, 2, 5 (tier 2's scores 3, 1, 6); tier 1 said 3, -, 8, -, -, 0: gaps 0, 7, 6.
    expect(pickForPerson([0, 2, 5], [3, 9, 8, 5, 5, 0], [3, 1, 6], 2 / 6, 6)).toEqual([2, 5]);
    expect(pickForPerson([0, 2, 5], [3, 9, 8, 5, 5, 0], [3, 1, 6], 1, 6)).toEqual([2, 5, 0]); // never more than tier 2 scored
    expect(pickForPerson([0, 2, 5], [3, 9, 8, 5, 5, 0], [3, 1, 6], 0, 6)).toEqual([]);
    expect(pickForPerson([4, 1], [5, 5, 5, 5, 5], [5, 5], 0.2, 5)).toEqual([1]); // a tie: the earlier place
  });

  it('reads answer lines, refusing what is not one with the reason', () => {
    expect(parseAnswerLine('{"id": "3-5", "score": 7}')).toEqual({ id: '3-5', score: 7 });
    expect(parseAnswerLine('  3-5   skip ')).toEqual({ id: '3-5', score: null });
    expect(parseAnswerLine('{"id": "3-5", "skip": true}')).toEqual({ id: '3-5', score: null });
    expect(parseAnswerLine('12-0 0')).toEqual({ id: '12-0', score: 0 });
    expect(parseAnswerLine('3-5 7.5')).toEqual({ error: 'score must be a whole number from 0 to 10, got 7.5' });
    expect(parseAnswerLine('3-5 seven')).toEqual({ error: 'score must be a whole number from 0 to 10, got "seven"' });
    expect(parseAnswerLine('{"id": 3, "score": 1}')).toMatchObject({ error: expect.stringMatching(/^id must be "<batch>-<index>"/) });
    expect(parseAnswerLine('{"id": "3-5"')).toMatchObject({ error: expect.stringMatching(/^not JSON/) });
    expect(parseAnswerLine('{"id": "3-5", "score": 2, "skip": true}')).toEqual({ error: 'give a score or skip, not both' });
    expect(parseAnswerLine('7')).toMatchObject({ error: expect.stringMatching(/^write "<batch>-<index>/) });
  });

  it('waits until every question has an answer, the first answer standing; the wait ends early at the source\'s end', async () => {
    const b = new AnswerBoard();
    expect(b.offer('1-0 4')).toBeNull();
    expect(b.offer('1-0 9')).toBe('question 1-0 is answered already (the first answer stands)');
    const waiting = b.wait(['1-0', '1-1'], 60);
    b.offer('1-1 skip');
    expect(await waiting).toEqual(new Map([['1-0', 4], ['1-1', null]]));
    const open = b.wait(['2-0'], 60);
    b.close();
    expect(await open).toEqual(new Map());
    const t0 = Date.now();
    expect(await new AnswerBoard().wait(['3-0'], 0.2)).toEqual(new Map());
    expect(Date.now() - t0).toBeGreaterThanOrEqual(150);
  });
});
