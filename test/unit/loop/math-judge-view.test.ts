/**
 * How a math judge is asked: the math team's own template (its work and the truth last), the truth shown
 * for the final agent (MAPPA) or for every agent, and the scratchpad of the numbers the rubric compares.
 */
import { describe, expect, it } from 'vitest';
import { coachPrompt, type ActionContext } from '../../../src/core/coach/coach-format.ts';
import { RuleCoach } from '../../../src/core/coach/coach.ts';
import { truthForEvery } from '../../../src/core/coach/coaches.ts';
import { MATH_COACH_TEMPLATE, mathScratchpad } from '../../../src/core/domains/math/coach.ts';
import { mathView } from '../../../scripts/pretrain-team-judge.ts';
import { viewed } from '../../../scripts/pretrain/transcripts.ts';

const task = { answer: '28' };
const ctx = (agentId: string, output: string, extra: Partial<ActionContext> = {}): ActionContext => ({
  problem: 'Sofia has $41. She spends $37, then earns $24. How much does she have?', agentId, role: agentId, input: 'the input', output,
  final: agentId === 'verifier', task, ...(agentId === 'verifier' ? { groundTruth: '28' } : {}), ...extra,
});

describe('the math judge\'s scratchpad', () => {
  it('copies the agent\'s number, the truth it is shown, and the upstream number the rubric compares with', () => {
    expect(mathScratchpad(ctx('solver', '41 - 37 = 4\n4 + 24 = 28\nAnswer: 28'))).toBe('28 -'); // no truth shown to the Solver (MAPPA)
    expect(mathScratchpad({ ...ctx('solver', 'Answer: 27'), groundTruth: '28' })).toBe('27 28');
    const executor = ctx('executor', '```python\nprint(41 - 37 + 24)\n```\nResult: 28', {
      observation: '```output\n28\n```', input: 'Problem Solver:\n41 - 37 = 4\nAnswer: 29', groundTruth: '28',
    });
    expect(mathScratchpad(executor)).toBe('28 28 29');
    expect(mathScratchpad(ctx('verifier', '\\boxed{28}', { input: 'Last output:\n```output\n30\n```' }))).toBe('28 28 30');
    expect(mathScratchpad(ctx('verifier', 'no box'))).toBe('- 28 -');
  });
});

describe('whose actions the judge sees the truth with', () => {
  it('MAPPA shows the final agent\'s alone; "every" shows every agent\'s, from the task', async () => {
    const solver = ctx('solver', 'Answer: 28');
    expect(coachPrompt(solver, MATH_COACH_TEMPLATE)).not.toContain('Ground truth');
    expect(coachPrompt(viewed(solver, { truth: 'every' }), MATH_COACH_TEMPLATE)).toMatch(/Answer: 28\nTool output: \(none\)\nGround truth: 28\nReply with/);
    const seen: ActionContext[] = [];
    const spy = new RuleCoach('spy', (a) => (seen.push(a), { score: 5 }));
    await truthForEvery(spy).scoreBatch([solver]);
    expect(seen[0].groundTruth).toBe('28');
    // The answer line (ANSWER_CORRECT) stays the final agent's.
    expect(coachPrompt(viewed(solver, { truth: 'every' }), MATH_COACH_TEMPLATE)).not.toContain('ANSWER_CORRECT');
    expect(coachPrompt(ctx('verifier', '\\boxed{28}'), MATH_COACH_TEMPLATE)).toContain('ANSWER_CORRECT');
  });

  it('the build script\'s flags name the view, and refuse others by name', () => {
    expect(mathView({ template: 'team', truth: 'every', scratchpad: 1 })).toMatchObject({ template: MATH_COACH_TEMPLATE, truth: 'every' });
    expect(() => mathView({ template: 'mine', truth: 'final', scratchpad: 0 })).toThrow(/--template: team \(the math team's own\) or generic/);
    expect(() => mathView({ template: 'team', truth: 'all', scratchpad: 0 })).toThrow(/--truth: final \(MAPPA\) or every/);
  });
});
