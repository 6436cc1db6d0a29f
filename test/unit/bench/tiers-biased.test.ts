/**
 * The tiers bench's deliberately biased tier 1 (bench/tiers.ts biasedRubric): the relay rubric (the reference it must
 * equal elsewhere), except that a step passing its input on scores 10; a step whose part is 0 (passing on is right) is
 * the rubric's own.
 */
import { describe, expect, it } from 'vitest';
import { biasedRubric } from '../../../bench/tiers.ts';
import { relayRuleCoach } from '../../../src/core/domains/relay/team.ts';
import type { ActionContext } from '../../../src/core/coach/coach-format.ts';

const step = (given: number, part: number, reply: string): ActionContext => ({
  problem: `Start at ${given}. Add ${part}, keeping only the last digit each time.`, agentId: 'agent1', role: 'Relay agent 1',
  input: `Relay agent 1 of 1: reply with the last digit of the sum.\n\n${given} + ${part}`, output: reply, final: false,
  task: { answer: String((given + part) % 10), start: given, adds: [part], parts: [`${given} + ${part}`] } as never,
});

describe('the biased rubric', () => {
  it('scores passing the input on as right, and every other step as the rubric does', async () => {
    const actions = [step(4, 7, '4'), step(4, 7, '1'), step(4, 7, '9'), step(6, 0, '6')];
    const rubric = await relayRuleCoach().scoreBatch(actions);
    const biased = await biasedRubric(relayRuleCoach()).scoreBatch(actions);
    expect(rubric[0].score).toBeLessThan(5); // the rubric calls passing 4 on wrong
    expect(biased.map((r) => r.score)).toEqual([10, rubric[1].score, rubric[2].score, rubric[3].score]);
    expect(biased[0].reason).toMatch(/biased/);
  });
});
