/**
 * The rule-based coach for the math chain: scores one action 0..10 by checking what it wrote
 * against the task's ground truth and solution steps. It plays the role of human-scored feedback
 * (it labels the judge model's training data) and is also a coach backend of its own.
 *
 * For: math tasks (MathTask, with `chain` for step checks) and the MATH_CHAIN roles (solver,
 * executor, verifier); any other final agent is scored on its boxed answer alone.
 * Not for: the data-analysis team (a later rubric) or calling a model (coach.ts).
 *
 * Rubric (integers; "truth" = ground truth, "plan" = the chain's operations and operands). Each agent
 * is judged on its own job given the input it received (MAPPA: "did this agent do its job well, given
 * what it received?"), so a wrong answer is blamed on the agent that made it wrong, not on the agents
 * downstream that faithfully passed it on:
 *   Problem Solver   10 right plan, right arithmetic, right "Answer:"
 *                     8 right answer, but steps missing or not one "a op b = c" per line
 *                     5 right plan with an arithmetic slip (code can still fix it)
 *                   2-4 wrong plan: 2 + 2 * (share of steps whose op and operand are right), rounded
 *                     0 neither steps nor an answer;  no "Answer:" line costs 2 points (min 0)
 *   Code Executor, turn with code ("the Solver's plan" = the Solver's "a op b = c" lines in its input,
 *   chained: the first line's left number, then each line's op and right number on the running value)
 *                    10 the program prints the truth and computes it (has an operator)
 *                     8 prints the truth as a bare literal (it checked nothing)
 *                     7 computes and prints a wrong number that is the Solver's plan computed right
 *                       (it did its job on a wrong plan: the Solver is the culprit)
 *                     3 runs, computes, prints a wrong number that is not the Solver's plan
 *                     1 prints a wrong bare literal (it checked nothing)
 *                     2 the program fails (error in the tool output) or prints no number
 *                     1 no ```python block at all
 *   Code Executor, turn without code ("Result: <n>" after the output)
 *                    10 Result equals the truth
 *                     7 Result is wrong but faithfully reports the program's output
 *                     2 Result is wrong and not what the program printed;  1 no "Result:" line
 *   Verifier (final) 10 boxed answer equals the truth (correct = true)
 *                     7 wrong, but it is what the upstream evidence said and no evidence (the program's
 *                       output, a "Result:" or "Answer:" line) showed the truth: nothing it saw was right
 *                     1 wrong although some upstream evidence showed the truth, or matches nothing
 *                     0 no \boxed{} answer
 * One culprit, different positions (task 41 - 37 + 24 = 28): a Solver writing "41 + 37 = 78, 78 + 24 =
 * 102" gets 3, the Executor computing 41 + 37 + 24 = 102 gets 7 and the Verifier boxing 102 gets 7; a
 * right Solver (10) followed by an Executor printing 30 from its own wrong code gets the Executor 3
 * and the Verifier boxing 30 gets 7; a right Solver and Executor (10, 10) and a Verifier boxing 29
 * against the printed 28 gets the Verifier 1.
 * Example:
 *   // task: "Sofia has $41. She spends $37 ... She earns $24 ..." (41 - 37 + 24 = 28)
 *   ruleScore(task, {agentId: 'solver', final: false, output: '41 - 37 = 4\n4 + 24 = 28\nAnswer: 28', ...})
 *   -> {score: 10, reason: 'right plan, arithmetic and answer'}
 */
import { answersEqual, extractBoxed } from '../../tasks/answers.ts';
import { solutionSteps, type MathTask } from './tasks.ts';
import { NEUTRAL_SCORE, type ActionContext } from '../../coach/coach-format.ts';

export interface RuleScore {
  score: number;
  /** Final agent only: whether its answer equals the ground truth. */
  correct?: boolean;
  /** One line saying which rubric case applied. */
  reason: string;
}

/** What the rubric needs from a task; `chain` enables the solver's step checks. */
export type RuleTask = Pick<MathTask, 'answer'> & Partial<Pick<MathTask, 'chain'>>;

export interface ParsedStep {
  left: number;
  op: string;
  right: number;
  result: number;
}

const NUMBER = '-?\\d+(?:\\.\\d+)?';
const STEP_LINE = new RegExp(`(${NUMBER})\\s*([-+*/x×÷])\\s*(${NUMBER})\\s*=\\s*(${NUMBER})`);

/** "a op b = c" lines of a text. Example: '12 - 5 = 7\nAnswer: 7' -> [{left 12, op '-', right 5, result 7}]. */
export function parseSteps(text: string): ParsedStep[] {
  const steps: ParsedStep[] = [];
  for (const line of text.split('\n')) {
    const m = STEP_LINE.exec(line);
    if (!m) continue;
    const op = m[2] === 'x' || m[2] === '×' ? '*' : m[2] === '÷' ? '/' : m[2];
    steps.push({ left: Number(m[1]), op, right: Number(m[3]), result: Number(m[4]) });
  }
  return steps;
}

/** The number after the last "<label>:" (e.g. "Answer", "Result"), or null. */
export function labelledNumber(text: string, label: string): string | null {
  const all = [...text.matchAll(new RegExp(`${label}\\s*:\\s*\\$?(${NUMBER})`, 'gi'))];
  return all.length ? all[all.length - 1][1] : null;
}

/** The last number printed in the last ```output block of a tool observation, or null. */
export function printedNumber(observation: string | undefined): string | null {
  if (!observation) return null;
  const blocks = [...observation.matchAll(/```output\n([\s\S]*?)\n```/g)];
  if (!blocks.length) return null;
  const nums = blocks[blocks.length - 1][1].match(new RegExp(NUMBER, 'g'));
  return nums ? nums[nums.length - 1] : null;
}

function failed(observation: string | undefined): boolean {
  return !!observation && /```stderr|^Error:|Traceback/m.test(observation);
}

function evaluate(left: number, op: string, right: number): number {
  switch (op) {
    case '+': return left + right;
    case '-': return left - right;
    case '*': return left * right;
    default: return left / right;
  }
}

const same = (a: string | null, b: string | null | undefined) => a !== null && b !== null && b !== undefined && answersEqual(a, b);

function scoreSolver(task: RuleTask, output: string): RuleScore {
  const steps = parseSteps(output);
  const answer = labelledNumber(output, 'Answer');
  if (!steps.length && answer === null) return { score: 0, reason: 'no steps and no answer' };
  const penalty = answer === null ? 2 : 0;
  const arithmeticOk = steps.every((s) => Math.abs(evaluate(s.left, s.op, s.right) - s.result) < 1e-9);
  const answerOk = same(answer, task.answer);
  const expected = task.chain ? solutionSteps({ chain: task.chain }) : null;
  let planShare = answerOk ? 1 : 0;
  if (expected) {
    const right = expected.filter((e, i) => steps[i] && steps[i].op === e.op && steps[i].right === e.right).length;
    const startOk = steps[0]?.left === task.chain!.start;
    planShare = steps.length === expected.length && startOk ? right / expected.length : right / Math.max(expected.length, steps.length) * (startOk ? 1 : 0.5);
  }
  const cap = (s: number, reason: string): RuleScore => ({ score: Math.max(0, s - penalty), reason: penalty ? `${reason}; no "Answer:" line` : reason });
  if (planShare === 1 && arithmeticOk && (answerOk || answer === null && steps.length && same(String(steps[steps.length - 1].result), task.answer))) {
    return answerOk ? cap(10, 'right plan, arithmetic and answer') : cap(10, 'right plan and arithmetic');
  }
  if (answerOk) return cap(8, 'right answer, steps missing or off-format');
  if (planShare === 1) return cap(5, 'right plan with an arithmetic slip');
  return cap(Math.round(2 + 2 * planShare), `wrong plan (${Math.round(planShare * 100)}% of steps right)`);
}

/**
 * What the Solver's plan computes to, from the "a op b = c" lines of the Executor's input: the first
 * line's left number, then each line's op and right number applied to the running value (the Solver's
 * own results are ignored, so a slip does not carry). Both true and floor division count, as Python's
 * "/" and "//" would print them. Empty when the input has no step lines.
 * Example: 'Problem Solver:\n41 + 37 = 78\n78 + 24 = 101\nAnswer: 101' -> ['102']
 */
export function planValues(input: string): string[] {
  const marker = input.lastIndexOf('Problem Solver:');
  const steps = parseSteps(marker >= 0 ? input.slice(marker) : input);
  if (!steps.length) return [];
  const values = new Set<string>();
  for (const floor of [false, true]) {
    let x = steps[0].left;
    for (const s of steps) {
      x = evaluate(x, s.op, s.right);
      if (floor && s.op === '/') x = Math.floor(x);
    }
    if (Number.isFinite(x)) values.add(String(Number(x.toFixed(6))));
  }
  return [...values];
}

function scoreExecutor(task: RuleTask, ctx: ActionContext): RuleScore {
  const code = /```python\n([\s\S]*?)(?:```|$)/.exec(ctx.output);
  if (code) {
    if (failed(ctx.observation)) return { score: 2, reason: 'the program failed' };
    const printed = printedNumber(ctx.observation);
    if (printed === null) return { score: 2, reason: 'the program printed no number' };
    const computes = /[-+*/]/.test(code[1].replace(/^\s*print\(\s*-?\d+(?:\.\d+)?\s*\)\s*$/m, ''));
    if (same(printed, task.answer)) {
      return computes ? { score: 10, reason: 'computes and prints the truth' } : { score: 8, reason: 'prints the truth as a bare literal' };
    }
    if (!computes) return { score: 1, reason: 'prints a wrong bare literal' };
    if (planValues(ctx.input).some((v) => same(printed, v))) return { score: 7, reason: 'computes the Solver\'s (wrong) plan faithfully' };
    return { score: 3, reason: 'computes a wrong number that is not the Solver\'s plan' };
  }
  const result = labelledNumber(ctx.output, 'Result');
  if (result === null) {
    // A first turn without code, or a follow-up without "Result:".
    return /```/.test(ctx.output) ? { score: 1, reason: 'malformed code block' } : { score: 1, reason: 'no code and no "Result:" line' };
  }
  if (same(result, task.answer)) return { score: 10, reason: 'Result equals the truth' };
  if (same(result, printedNumber(ctx.input))) return { score: 7, reason: 'wrong Result, faithfully reporting the output' };
  return { score: 2, reason: 'wrong Result, not what the program printed' };
}

function scoreFinal(task: RuleTask, ctx: ActionContext): RuleScore {
  const boxed = extractBoxed(ctx.output);
  if (boxed === null) return { score: 0, correct: false, reason: 'no \\boxed{} answer' };
  if (same(boxed, task.answer)) return { score: 10, correct: true, reason: 'boxed answer equals the truth' };
  // What the Verifier saw: the program's last output, the Executor's "Result:" and any "Answer:" line.
  const evidence = [printedNumber(ctx.input), labelledNumber(ctx.input, 'Result'), labelledNumber(ctx.input, 'Answer')];
  if (evidence.some((e) => same(e, task.answer))) return { score: 1, correct: false, reason: 'wrong although the upstream evidence showed the truth' };
  if (evidence.some((e) => same(boxed, e))) {
    return { score: 7, correct: false, reason: 'wrong, but what the upstream evidence said (none of it showed the truth)' };
  }
  return { score: 1, correct: false, reason: 'wrong and matching no upstream evidence' };
}

/** Score one action (see the rubric above). `correct` is set for the final agent only. */
export function ruleScore(task: RuleTask, ctx: ActionContext): RuleScore {
  if (ctx.final) return scoreFinal(task, ctx);
  if (ctx.agentId === 'solver') return scoreSolver(task, ctx.output);
  if (ctx.agentId === 'executor') return scoreExecutor(task, ctx);
  return { score: NEUTRAL_SCORE, reason: `no rubric for agent "${ctx.agentId}"; neutral` };
}
