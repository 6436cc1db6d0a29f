// The rated-action format: what a person's corrections look like on disk, refused in one line naming the line.
import { describe, expect, it } from 'vitest';
import { carelessVerdicts, folds, formatRatings, parseRatings, rankAgainst, SIMULATED_RATER } from '../../../src/core/coach/corrections.ts';
import { wilson } from '../../../src/core/stats/intervals.ts';

describe('parseRatings', () => {
  it('reads rated actions and writes them back the same', () => {
    const text = formatRatings([
      { prompt: 'Agent 1 replied "2".\n7 + 5', score: 10, by: 'person', group: '2:agent1', was: 0 },
      { prompt: 'Agent 2 replied "7".\n7 + 5', score: 0, correct: false, by: SIMULATED_RATER, answer: '2 7\nPROCESS_SCORE: 0' },
    ]);
    const back = parseRatings(`${text}\n\n`, 'r.jsonl');
    expect(back).toHaveLength(2);
    expect(back[1]).toMatchObject({ score: 0, correct: false, by: 'rubric (simulated person)', answer: '2 7\nPROCESS_SCORE: 0' });
    expect(formatRatings(back)).toBe(text);
  });

  it.each([
    ['{"prompt": "p", "score": 11}', 'r.jsonl line 2: "score" must be a number from 0 to 10, got 11'],
    ['{"prompt": "p", "score": 5', 'r.jsonl line 2: not JSON'],
    ['{"prompt": "", "score": 5}', 'r.jsonl line 2: needs "prompt"'],
    ['{"prompt": "p", "score": null}', 'r.jsonl line 2: has no verdict yet: fill in "score" (0 to 10)'],
    ['{"prompt": "p", "score": 5, "correct": 2}', 'r.jsonl line 2: "correct" must be 0, 1, true or false, got 2'],
    ['{"prompt": "p", "score": 5, "scroe": 5}', 'r.jsonl line 2: has an unknown key "scroe"'],
    ['{"prompt": "p", "score": 5, "answer": "ten"}', 'r.jsonl line 2: "answer" must hold a "PROCESS_SCORE: <n>" line'],
    ['[1, 2]', 'r.jsonl line 2: is not a JSON object'],
  ])('refuses %s in one line naming the line', (bad, message) => {
    const text = `{"prompt": "fine", "score": 3}\n${bad}\n{"prompt": "never read", "score": 4}\n`;
    let error = '';
    try {
      parseRatings(text, 'r.jsonl');
    } catch (e) {
      error = (e as Error).message;
    }
    expect(error.startsWith(message)).toBe(true);
    expect(error).not.toContain('\n');
  });

  it('refuses an empty file', () => {
    expect(() => parseRatings('\n \n', 'e.jsonl')).toThrow(/^e\.jsonl: no rated actions/);
  });
});

describe('rankAgainst', () => {
  it('counts within-group pairs rated differently, ties half (the worked example)', () => {
    const r = rankAgainst([0, 10, 10], [2, 9, 1], ['a', 'a', 'a']);
    expect(r.pairs).toBe(2);
    expect(r.concordant).toBe(1);
    expect(r.interval).toEqual(wilson(1, 2));
  });

  it('never pairs actions of different groups, and a tie counts half', () => {
    const r = rankAgainst([0, 10, 0, 10], [5, 5, 10, 0], ['a', 'a', 'b', 'c']);
    expect(r.pairs).toBe(1);
    expect(r.concordant).toBe(0.5);
  });
});

describe('folds', () => {
  it('deals a shuffled order round the folds', () => {
    expect(folds(5, 2, [4, 0, 3, 1, 2])).toEqual([[4, 3, 2], [0, 1]]);
  });
});

describe('carelessVerdicts', () => {
  const r = (score: number, correct?: boolean) => ({ prompt: `p${score}`, score, ...(correct === undefined ? {} : { correct }), by: SIMULATED_RATER });
  const identity = (xs: number[]) => xs;
  it('flips round(fraction x n) verdicts to the other end of the scale, hand-worked', () => {
    const out = carelessVerdicts([r(10, true), r(0), r(5), r(10)], 0.5, identity, () => 0.9);
    // round(0.5 x 4) = 2 flipped: the first two in the shuffled order (identity: indices 0 and 1)
    expect(out.map((x) => x.score)).toEqual([0, 10, 5, 10]);
    expect(out[0].correct).toBe(false);
    expect(out.every((x) => x.by === `${SIMULATED_RATER} (careless: 50 % flipped)`)).toBe(true);
  });
  it('sends a middling 5 to one end by the coin, and flips none at 0', () => {
    expect(carelessVerdicts([r(5)], 1, identity, () => 0.1)[0].score).toBe(0);
    expect(carelessVerdicts([r(5)], 1, identity, () => 0.7)[0].score).toBe(10);
    expect(carelessVerdicts([r(10), r(0)], 0, identity, () => 0)).toEqual([r(10), r(0)]);
    expect(() => carelessVerdicts([r(10)], 1.5, identity, () => 0)).toThrow(/from 0 to 1, got 1.5/);
  });
  it('flips 10 % and 20 % of the same draw: the 20 % flips hold the 10 % ones', () => {
    const rs = Array.from({ length: 40 }, (_, i) => r(i % 2 ? 10 : 0));
    const order = (xs: number[]) => xs.map((_, i) => (i * 7) % 40);
    const flipped = (f: number) => carelessVerdicts(rs, f, order, () => 0).flatMap((x, i) => (x.score !== rs[i].score ? [i] : []));
    expect(flipped(0.1)).toHaveLength(4);
    expect(flipped(0.2)).toHaveLength(8);
    expect(flipped(0.1).every((i) => flipped(0.2).includes(i))).toBe(true);
  });
});
