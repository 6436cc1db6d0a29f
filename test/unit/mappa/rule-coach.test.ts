// Rubric cases of the rule-based math coach, worked by hand from src/core/mappa/rule-coach.ts's table.
import { describe, expect, it } from 'vitest';
import type { ActionContext } from '../../../src/core/mappa/coach-format.ts';
import { labelledNumber, parseSteps, printedNumber, ruleScore } from '../../../src/core/mappa/rule-coach.ts';
import type { MathTask } from '../../../src/core/tasks/math.ts';

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
    expect(ruleScore(task, ctx('executor', code, { observation: out('30') })).score).toBe(3);
    expect(ruleScore(task, ctx('executor', '```python\nprint(29)\n```', { observation: out('29') })).score).toBe(1);
    expect(ruleScore(task, ctx('executor', '```python\nprint(y)\n```', { observation: '```stderr\nNameError\n```\nError: NameError' })).score).toBe(2);
    expect(ruleScore(task, ctx('executor', 'just text')).score).toBe(1);
  });
  it('scores the Result turn against the truth and the printed output', () => {
    expect(ruleScore(task, ctx('executor', 'Result: 28', { input: 'Output:\n' + out('28') })).score).toBe(10);
    expect(ruleScore(task, ctx('executor', 'Result: 30', { input: 'Output:\n' + out('30') })).score).toBe(4);
    expect(ruleScore(task, ctx('executor', 'Result: 31', { input: 'Output:\n' + out('30') })).score).toBe(2);
  });
});

describe('Verifier (final)', () => {
  it('sets correct and blames ignoring the evidence hardest', () => {
    expect(ruleScore(task, ctx('verifier', '\\boxed{28}'))).toMatchObject({ score: 10, correct: true });
    expect(ruleScore(task, ctx('verifier', 'the answer is 28'))).toMatchObject({ score: 0, correct: false });
    expect(ruleScore(task, ctx('verifier', '\\boxed{29}', { input: 'Last output:\n' + out('28') }))).toMatchObject({ score: 1, correct: false });
    expect(ruleScore(task, ctx('verifier', '\\boxed{30}', { input: 'Result: 30\n\nLast output:\n' + out('30') }))).toMatchObject({ score: 3, correct: false });
    expect(ruleScore(task, ctx('verifier', '\\boxed{99}', { input: 'Last output:\n' + out('30') }))).toMatchObject({ score: 1, correct: false });
  });
});
