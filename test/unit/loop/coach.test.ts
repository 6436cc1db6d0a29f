/**
 * Coaches: the answer parser on well-formed and broken answers, a judge model that cannot keep the
 * format (one repair retry, then the neutral 5, counted), the content cache, and miscalibration.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../../src/core/engine/backend.ts';
import { coachPrompt, parseCoachAnswer, type ActionContext } from '../../../src/core/coach/coach-format.ts';
import { cachedCoach, MiscalibratedCoach, ModelCoach, RuleCoach } from '../../../src/core/coach/coach.ts';
import { mathRuleCoach as ruleCoach } from '../../../src/core/domains/math/index.ts';
import { generateMathTasks } from '../../../src/core/domains/math/tasks.ts';
import { tinyTeamModel } from '../../helpers/tiny-team.ts';

const ctx = (over: Partial<ActionContext> = {}): ActionContext => ({
  problem: 'Ann has 3 apples and buys 4 more. How many apples does she have?', agentId: 'solver', role: 'Problem Solver',
  input: 'Problem: ...', output: '3 + 4 = 7\nAnswer: 7', final: false, ...over,
});

describe('coach answer format', () => {
  it('parses scores and the final agent line; refuses what is not there', () => {
    expect(parseCoachAnswer('PROCESS_SCORE: 7', false)).toEqual({ ok: true, score: 7 });
    expect(parseCoachAnswer('process_score : 8.5\nANSWER_CORRECT: 1', true)).toEqual({ ok: true, score: 8.5, correct: true });
    expect(parseCoachAnswer('I think it is good. 9/10', false)).toMatchObject({ ok: false, score: 5 });
    expect(parseCoachAnswer('PROCESS_SCORE: 11', false)).toMatchObject({ ok: false, error: expect.stringMatching(/outside 0..10/) });
    expect(parseCoachAnswer('PROCESS_SCORE: 6', true)).toMatchObject({ ok: false, error: expect.stringMatching(/ANSWER_CORRECT/) });
  });

  it('shows the ground truth where the context carries it (the final agent\'s, as agentContext builds it), and clips tool output to 2000 characters', () => {
    const final = coachPrompt(ctx({ final: true, groundTruth: '7', observation: 'x'.repeat(5000) }));
    expect(final).toMatch(/Ground truth: 7/);
    expect(final).toMatch(/ANSWER_CORRECT/);
    expect(final).not.toMatch(/x{2001}/);
    expect(coachPrompt(ctx({}))).not.toMatch(/Ground truth/);
    // A non-final agent's context carries the truth only under coach.truth "every" (coaches.ts truthForEvery); no answer line then.
    expect(coachPrompt(ctx({ groundTruth: '7' }))).toMatch(/Ground truth: 7/);
    expect(coachPrompt(ctx({ groundTruth: '7' }))).not.toMatch(/ANSWER_CORRECT/);
  });
});

describe('coach backends', () => {
  beforeAll(async () => {
    await initBackend({ force: 'cpu' });
  });

  it('a judge that answers nonsense gets one format reminder, then the neutral 5, counted as a failure', async () => {
    const judge = await tinyTeamModel(5);
    const coach = new ModelCoach(judge, undefined, 4);
    const [r] = await coach.scoreBatch([ctx()]);
    expect(r.ok).toBe(false);
    expect(r.score).toBe(5);
    expect(r.attempts).toBe(2);
    judge.model.dispose();
  }, 300_000);

  it('the content cache never scores the same action twice', async () => {
    let calls = 0;
    const coach = cachedCoach(new RuleCoach('count', () => ({ score: ++calls })));
    const a = await coach.scoreBatch([ctx(), ctx(), ctx({ output: 'other' })]);
    const b = await coach.scoreBatch([ctx()]);
    expect(calls).toBe(2);
    expect(a.map((r) => r.score)).toEqual([1, 1, 2]);
    expect(b[0]).toMatchObject({ score: 1, cached: true });
  });

  it('miscalibration: favouring an agent and noise are clamped to 0..10 and reproducible', async () => {
    const flat = new RuleCoach('flat', () => ({ score: 6 }));
    const biased = new MiscalibratedCoach(flat, { favourAgent: { agentId: 'solver', points: 3 } });
    const [s, e] = await biased.scoreBatch([ctx(), ctx({ agentId: 'executor' })]);
    expect(s.score).toBe(9);
    expect(e.score).toBe(6);
    const noisy = new MiscalibratedCoach(flat, { noise: 2, seed: 1 });
    const x = await noisy.scoreBatch([ctx(), ctx({ output: 'y' })]);
    const y = await noisy.scoreBatch([ctx(), ctx({ output: 'y' })]);
    expect(x.map((r) => r.score)).toEqual(y.map((r) => r.score));
    expect(x[0].score).not.toBe(6);
    for (const r of x) expect(r.score).toBeGreaterThanOrEqual(0);
    const long = new MiscalibratedCoach(new RuleCoach('zero', () => ({ score: 9 })), { lengthBias: 1 });
    expect((await long.scoreBatch([ctx({ output: 'z'.repeat(400) })]))[0].score).toBe(10);
  });

  it('the rule-based verifier coach checks the solver against the task it is given', async () => {
    const [task] = generateMathTasks({ seed: 3, count: 1, level: 1 });
    const coach = ruleCoach();
    const steps = `${task.chain.start} ${task.chain.steps[0].op} ${task.chain.steps[0].operand} = ${task.answer}\nAnswer: ${task.answer}`;
    const [good, bad] = await coach.scoreBatch([
      ctx({ problem: task.problem, output: steps, task }),
      ctx({ problem: task.problem, output: 'Answer: 99999', task }),
    ]);
    expect(good.score).toBe(10);
    expect(bad.score).toBeLessThan(5);
  });
});

describe('WebLLM coach', () => {
  // A fake chat engine stands in for @mlc-ai/web-llm's: the real one needs WebGPU and a model download,
  // neither of which exists here. It answers from a script, so the shared ask / repair / neutral path is checked.
  it('asks once, repairs a broken answer with the reminder, and falls back to the neutral score', async () => {
    const { WebLlmCoach } = await import('../../../src/core/coach/webllm-coach.ts');
    const { NEUTRAL_SCORE, FORMAT_REMINDER, DEFAULT_COACH_TEMPLATE } = await import('../../../src/core/coach/coach-format.ts');
    const script = ['PROCESS_SCORE: 8', 'looks fine', 'PROCESS_SCORE: 3', 'no idea', 'still no idea'];
    const seen: { role: string; content: string }[][] = [];
    const engine = { chat: { completions: { create: async (req: { messages: { role: string; content: string }[] }) => {
      seen.push(req.messages);
      return { choices: [{ message: { content: script[seen.length - 1] } }] };
    } } } };
    const coach = new WebLlmCoach('fake', engine, DEFAULT_COACH_TEMPLATE, 16);
    const r = await coach.scoreBatch([ctx(), ctx({ agentId: 'executor' }), ctx({ agentId: 'verifier' })]);
    // First pass: 8, "looks fine" (broken), 3; then the repair of action 2 ("no idea"): still broken.
    expect(r.map((x) => [x.score, x.ok, x.attempts])).toEqual([[8, true, 1], [NEUTRAL_SCORE, false, 2], [3, true, 1]]);
    expect(seen).toHaveLength(4);
    expect(seen[3].map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    expect(seen[3][2].content).toBe(FORMAT_REMINDER);
    expect(r[1].raw).toBe('looks fine\n---\nno idea');
  });
});
