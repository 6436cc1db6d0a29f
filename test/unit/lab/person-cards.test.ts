/**
 * Tier 3 in the page, the worker's side (src/core/lab/person-cards.ts): asking posts the cards with the wait's end;
 * each answer or skip comes back as the page's request, a wrong one is refused by name; the wait ends when all are
 * answered, at Pause (release) or after the stated seconds, and a last event says what came of it.
 */
import { describe, expect, it } from 'vitest';
import { CardPerson } from '../../../src/core/lab/person-cards.ts';
import { personQuestion } from '../../../src/core/coach/person-tier.ts';
import type { WorkerEvent } from '../../../src/core/lab/protocol.ts';

const action = { problem: '1 + 1', agentId: 'agent1', role: 'Relay agent 1', input: '1 + 1', output: '2', final: false };
const questions = [personQuestion(2, 3, action, { chain: 0, step: 0, failed: false }, 0, 10), personQuestion(2, 7, action, undefined, 6, 6)];

describe('the page\'s person', () => {
  it('posts the cards, takes the answers, refuses a wrong one by name and reports what came of them', async () => {
    const events: WorkerEvent[] = [];
    const p = new CardPerson((e) => events.push(e));
    expect(() => p.answer({ id: '2-3', score: 4 })).toThrow(/no card waits for an answer now/);
    const t0 = Date.now();
    const asked = p.ask(questions, 60);
    expect(events[0]).toMatchObject({ kind: 'person', waitSeconds: 60, questions: [{ id: '2-3' }, { id: '2-7' }] });
    expect((events[0] as { until: number }).until).toBeGreaterThanOrEqual(t0 + 60_000);
    expect(() => p.answer({ id: '9-9', score: 4 })).toThrow('no card "9-9" waits now (the cards open: 2-3, 2-7)');
    expect(() => p.answer({ id: '2-3', score: 11 })).toThrow('card 2-3: score must be a whole number from 0 to 10, got 11');
    expect(p.answer({ id: '2-3', score: 4 })).toEqual({ open: 1 });
    p.answer({ skipAll: true });
    expect(await asked).toEqual(new Map([['2-3', 4], ['2-7', null]]));
    expect(events[1]).toEqual({ kind: 'person', questions: [], waitSeconds: 60, until: 0, outcome: { answered: 1, skipped: 1, unanswered: 0 } });
  });

  it('Pause (release) or the stated seconds end the wait: what is open is unanswered', async () => {
    const events: WorkerEvent[] = [];
    const p = new CardPerson((e) => events.push(e));
    const asked = p.ask(questions, 60);
    p.answer({ id: '2-7', score: 9 });
    p.release();
    expect(await asked).toEqual(new Map([['2-7', 9]]));
    expect(await p.ask(questions, 0.2)).toEqual(new Map());
    expect(events.at(-1)).toMatchObject({ outcome: { answered: 0, skipped: 0, unanswered: 2 } });
  });
});
