// Rubric cases of the rule-based math coach, worked by hand from src/core/domains/math/rule-coach.ts's table.
import { describe, expect, it } from 'vitest';
import type { ActionContext } from '../../../src/core/coach/coach-format.ts';
import { agentContext } from '../../../src/core/loop/rewards.ts';
import type { Action, Trajectory } from '../../../src/core/loop/trajectory.ts';
import { labelledNumber, parseSteps, planValues, printedNumber, ruleScore } from '../../../src/core/domains/math/rule-coach.ts';
import { placeVars, renderTemplate } from '../../../src/core/loop/workflow.ts';
import { MATH_CHAIN } from '../../../src/core/domains/math/index.ts';
import type { MathTask } from '../../../src/core/domains/math/tasks.ts';

// 41 - 37 = 4, 4 + 24 = 28
const task: MathTask = {
  kind: 'math', id: 't', problem: 'Sofia has $41. She spends $37 on lunch. She earns $24 walking dogs. How many dollars does Sofia have now?',
  answer: '28', difficulty: { steps: 2, maxNumber: 41 }, level: 2, source: 'generated',
  chain: { start: 41, steps: [{ op: '-', operand: 37 }, { op: '+', operand: 24 }] },
};
const ctx = (agentId: string, output: string, extra: Partial<ActionContext> = {}): ActionContext => ({
  problem: task.problem, agentId, role: agentId, input: `Problem: ${task.problem}`, output, final: agentId === 'verifier', ...extra,
});
const out = (n: string) => '```output\n' + n + '\n```';

describe('parsers', () => {
  it('reads steps, labels and printed numbers', () => {
    expect(parseSteps('41 - 37 = 4\nso 4 + 24 = 28\nAnswer: 28')).toEqual([
      { left: 41, op: '-', right: 37, result: 4 }, { left: 4, op: '+', right: 24, result: 28 }]);
    expect(labelledNumber('Answer: 3\nAnswer: 28', 'Answer')).toBe('28');
    expect(labelledNumber('no label', 'Result')).toBeNull();
    expect(printedNumber(out('7\n28'))).toBe('28');
    expect(printedNumber('```stderr\nNameError\n```')).toBeNull();
  });
  it('computes the Solver\'s plan from its step lines, chained, ignoring its own results', () => {
    expect(planValues('Problem: ...\n\nProblem Solver:\n41 + 37 = 78\n78 + 24 = 101\nAnswer: 101')).toEqual(['102']);
    expect(planValues('Problem Solver:\n41 - 37 = 5\n5 + 24 = 29\nAnswer: 29')).toEqual(['28']); // a slip does not carry
    expect(planValues('Problem Solver:\n7 / 2 = 3')).toEqual(['3.5', '3']); // Python's / and //
    expect(planValues('Problem Solver:\nAnswer: 5')).toEqual([]);
  });
});

describe('Problem Solver', () => {
  it('scores each rubric case', () => {
    expect(ruleScore(task, ctx('solver', '41 - 37 = 4\n4 + 24 = 28\nAnswer: 28')).score).toBe(10);
    expect(ruleScore(task, ctx('solver', 'Answer: 28')).score).toBe(8); // right answer, no steps
    expect(ruleScore(task, ctx('solver', '41 - 37 = 5\n5 + 24 = 29\nAnswer: 29')).score).toBe(5); // slip, right plan
    expect(ruleScore(task, ctx('solver', '41 + 37 = 78\n78 + 24 = 102\nAnswer: 102')).score).toBe(3); // 1 of 2 ops right: 2 + 2 * 0.5
    expect(ruleScore(task, ctx('solver', '41 - 37 = 5\n5 + 24 = 29')).score).toBe(3); // slip and no Answer line: 5 - 2
    expect(ruleScore(task, ctx('solver', 'I do not know')).score).toBe(0);
  });
});

describe('Code Executor', () => {
  const code = '```python\nx = 41 - 37\nx = x + 24\nprint(x)\n```';
  it('scores the code turn', () => {
    expect(ruleScore(task, ctx('executor', code, { observation: out('28') })).score).toBe(10);
    expect(ruleScore(task, ctx('executor', '```python\nprint(28)\n```', { observation: out('28') })).score).toBe(8);
    expect(ruleScore(task, ctx('executor', code, { observation: out('30') })).score).toBe(3); // not the Solver's plan (no steps in its input)
    const wrongPlan = 'Problem: x\n\nProblem Solver:\n41 + 37 = 78\n78 + 24 = 102\nAnswer: 102';
    const faithful = '```python\nx = 41 + 37\nx = x + 24\nprint(x)\n```';
    expect(ruleScore(task, ctx('executor', faithful, { input: wrongPlan, observation: out('102') })).score).toBe(7); // the Solver's plan, computed
    expect(ruleScore(task, ctx('executor', '```python\nprint(102)\n```', { input: wrongPlan, observation: out('102') })).score).toBe(1); // the same number, uncomputed
    expect(ruleScore(task, ctx('executor', '```python\nx = 41 + 37\nx = x - 24\nprint(x)\n```', { input: wrongPlan, observation: out('54') })).score).toBe(3); // neither truth nor plan
    expect(ruleScore(task, ctx('executor', code, { input: wrongPlan, observation: out('28') })).score).toBe(10); // corrects the plan
    expect(ruleScore(task, ctx('executor', '```python\nprint(29)\n```', { observation: out('29') })).score).toBe(1);
    expect(ruleScore(task, ctx('executor', '```python\nprint(y)\n```', { observation: '```stderr\nNameError\n```\nError: NameError' })).score).toBe(2);
    expect(ruleScore(task, ctx('executor', 'just text')).score).toBe(1);
  });
  it('scores the Result turn against the truth and the printed output', () => {
    expect(ruleScore(task, ctx('executor', 'Result: 28', { input: 'Output:\n' + out('28') })).score).toBe(10);
    expect(ruleScore(task, ctx('executor', 'Result: 30', { input: 'Output:\n' + out('30') })).score).toBe(7);
    expect(ruleScore(task, ctx('executor', 'Result: 31', { input: 'Output:\n' + out('30') })).score).toBe(2);
  });
});

describe('Verifier (final)', () => {
  it('sets correct and blames ignoring the evidence hardest', () => {
    expect(ruleScore(task, ctx('verifier', '\\boxed{28}'))).toMatchObject({ score: 10, correct: true });
    expect(ruleScore(task, ctx('verifier', 'the answer is 28'))).toMatchObject({ score: 0, correct: false });
    expect(ruleScore(task, ctx('verifier', '\\boxed{29}', { input: 'Last output:\n' + out('28') }))).toMatchObject({ score: 1, correct: false });
    expect(ruleScore(task, ctx('verifier', '\\boxed{30}', { input: 'Result: 30\n\nLast output:\n' + out('30') }))).toMatchObject({ score: 7, correct: false });
    expect(ruleScore(task, ctx('verifier', '\\boxed{30}', { input: 'Result: 28\n\nLast output:\n' + out('30') }))).toMatchObject({ score: 1, correct: false }); // the Result showed the truth
    expect(ruleScore(task, ctx('verifier', '\\boxed{99}', { input: 'Last output:\n' + out('30') }))).toMatchObject({ score: 1, correct: false });
  });
});

/**
 * A whole trajectory with its prompts rendered from MATH_CHAIN's own templates and the coach's view
 * built by rewards.agentContext, as training builds them: the Solver's text, the Executor's program and
 * what it printed (its "Result:" follow-up reports that), and the Verifier's box.
 */
function chain(solver: string, program: string, printed: string, boxed: string): Record<string, number> {
  const observation = out(printed);
  const outputs: Record<string, string> = {};
  const tool: Record<string, string> = {};
  const actions: Action[] = [];
  const act = (index: number, turn: number, messages: { role: 'system' | 'user' | 'assistant'; content: string }[], text: string, obs?: string) => {
    const spec = MATH_CHAIN.agents[index];
    actions.push({ agentId: spec.id, role: spec.role, turn, messages, promptText: '', promptTokens: [], tokens: [], logprobs: [], text, truncated: false, observation: obs, codeBlocks: obs ? 1 : 0 });
  };
  const first = (index: number) => {
    const spec = MATH_CHAIN.agents[index];
    const vars: Record<string, string | number> = { ...placeVars(MATH_CHAIN, index), problem: task.problem };
    for (const a of MATH_CHAIN.agents) {
      vars[`output:${a.id}`] = outputs[a.id] ?? '(none)';
      vars[`tool:${a.id}`] = tool[a.id] ?? '(none)';
    }
    return [{ role: 'system' as const, content: renderTemplate(spec.system, vars) }, { role: 'user' as const, content: renderTemplate(spec.user, vars) }];
  };
  act(0, 1, first(0), solver);
  outputs.solver = solver;
  const code = '```python\n' + program + '\n```';
  const executorMessages = first(1);
  act(1, 1, executorMessages, code, observation);
  act(1, 2, [...executorMessages, { role: 'assistant', content: code }, { role: 'user', content: `Output:\n${observation}` }], `Result: ${printed}`);
  outputs.executor = `${code}\nResult: ${printed}`;
  tool.executor = observation;
  act(2, 1, first(2), `\\boxed{${boxed}}`);
  const t: Trajectory = { task, sample: 0, actions, finalAnswer: boxed, correct: boxed === task.answer };
  return Object.fromEntries(MATH_CHAIN.agents.map((a) => [a.id, ruleScore(task, agentContext(MATH_CHAIN, t, a.id)!).score]));
}

describe('one culprit, different positions: the culprit scores at least 3 below the agents that did their part', () => {
  const right = '41 - 37 = 4\n4 + 24 = 28\nAnswer: 28';
  const rightCode = 'x = 41 - 37\nx = x + 24\nprint(x)';
  const expectBlamed = (s: Record<string, number>, culprit: string) => {
    for (const [id, score] of Object.entries(s)) if (id !== culprit) expect(s[culprit], `${culprit} vs ${id}: ${JSON.stringify(s)}`).toBeLessThanOrEqual(score - 3);
  };

  it('nobody is at fault: 10 each', () => {
    expect(chain(right, rightCode, '28', '28')).toEqual({ solver: 10, executor: 10, verifier: 10 });
  });

  it('the Solver: a wrong plan computed faithfully and boxed as printed', () => {
    const s = chain('41 + 37 = 78\n78 + 24 = 102\nAnswer: 102', 'x = 41 + 37\nx = x + 24\nprint(x)', '102', '102');
    expect(s).toEqual({ solver: 3, executor: 7, verifier: 7 });
    expectBlamed(s, 'solver');
    // Every operation misread: the Solver's floor, 2.
    expect(chain('41 + 37 = 78\n78 - 24 = 54\nAnswer: 54', 'x = 41 + 37\nx = x - 24\nprint(x)', '54', '54')).toEqual({ solver: 2, executor: 7, verifier: 7 });
  });

  it('the Solver with a slip in a wrong plan: the faithful Executor computes the plan, not the slip', () => {
    const s = chain('41 + 37 = 79\n79 + 24 = 103\nAnswer: 103', 'x = 41 + 37\nx = x + 24\nprint(x)', '102', '102');
    expect(s).toEqual({ solver: 3, executor: 7, verifier: 7 });
    expectBlamed(s, 'solver');
  });

  it('the Executor: a right plan, its own wrong program, and the Verifier boxes what it printed', () => {
    const s = chain(right, 'x = 41 + 37\nx = x + 24\nprint(x)', '102', '102');
    expect(s).toEqual({ solver: 10, executor: 3, verifier: 7 });
    expectBlamed(s, 'executor');
  });

  it('the Executor: a right plan printed as a wrong bare literal', () => {
    const s = chain(right, 'print(30)', '30', '30');
    expect(s).toEqual({ solver: 10, executor: 1, verifier: 7 });
    expectBlamed(s, 'executor');
  });

  it('the Verifier: right plan and program, a wrong box against the printed truth', () => {
    const s = chain(right, rightCode, '28', '29');
    expect(s).toEqual({ solver: 10, executor: 10, verifier: 1 });
    expectBlamed(s, 'verifier');
  });

  it('two at fault: a wrong plan printed as a bare literal leaves both Solver and Executor low', () => {
    const s = chain('41 + 37 = 78\n78 + 24 = 102\nAnswer: 102', 'print(102)', '102', '102');
    expect(s).toEqual({ solver: 3, executor: 1, verifier: 7 });
  });
});
