/**
 * The math team, as one folder: the MAPPA math chain (Problem Solver -> Code Executor -> Verifier), its
 * generated problems by level (tasks.ts), its held-out set in a level-balanced order, and its rubric
 * (rule-coach.ts) as the team's rule coach.
 *
 * For: `MATH_TEAM`, what domains/index.ts registers; `MATH_CHAIN`, the default workflow; `mathEvalTasks`.
 * Not for: the loop (loop/) or the coach's machinery (coach/).
 *
 * Example: MATH_TEAM.trainPool(0, 2, 400) -> 400 generated level-2 problems;
 *          MATH_TEAM.heldOut(50) -> 50 held-out problems, levels interleaved.
 */
import { RuleCoach, type Coach } from '../../coach/coach.ts';
import { TEAM_LINE, type WorkflowSpec } from '../../loop/workflow.ts';
import type { RolloutTask, Trajectory, TrajectoryOutcome } from '../../loop/trajectory.ts';
import { answersEqual, extractFinalAnswer } from '../../tasks/answers.ts';
import { stratifiedOrder } from '../../stats/order.ts';
import type { Team } from '../../loop/team.ts';
import { ruleScore, type RuleTask } from './rule-coach.ts';
import { generateMathTasks, mathHeldOut } from './tasks.ts';

/** The seed of the held-out evaluation order (stratifiedOrder); a new seed changes every running estimate. */
export const HELD_OUT_ORDER_SEED = 'heldout-order-v1';

/** The MAPPA math chain: Problem Solver -> Code Executor (up to 2 turns) -> Verifier. */
export const MATH_CHAIN: WorkflowSpec = {
  name: 'math-chain',
  domain: 'math',
  agents: [
    {
      id: 'solver',
      role: 'Problem Solver',
      system: `You are the Problem Solver, ${TEAM_LINE}. Solve the problem step by step, one operation per line, and end with "Answer: <number>". ` +
        'Use at most {{budget}} tokens.',
      user: 'Problem: {{problem}}',
      maxTokens: 96,
      turns: 1,
      tools: [],
      trainable: true,
    },
    {
      id: 'executor',
      role: 'Code Executor',
      system: `You are the Code Executor, ${TEAM_LINE}. Check the solution with Python: write one \`\`\`python block that prints the answer. ` +
        'After you see its output, reply "Result: <number>". Use at most {{budget}} tokens.',
      user: 'Problem: {{problem}}\n\nProblem Solver:\n{{output:solver}}',
      followUp: 'Output:\n{{observation}}',
      maxTokens: 96,
      turns: 2,
      tools: ['python'],
      trainable: true,
    },
    {
      id: 'verifier',
      role: 'Verifier',
      system: `You are the Verifier, ${TEAM_LINE}. Decide the final answer from the work so far and give it as \\boxed{<number>}. ` +
        'Use at most {{budget}} tokens.',
      user: 'Problem: {{problem}}\n\nCode Executor:\n{{output:executor}}\n\nLast output:\n{{tool:executor}}',
      maxTokens: 48,
      turns: 1,
      tools: [],
      trainable: true,
      final: true,
    },
  ],
};

/**
 * A fixed, level-balanced subset of the 200 held-out math problems (every (200 / count)-th of the
 * level-sorted list, as before), in the order they are evaluated: stratified by level, so that every
 * prefix holds each level in proportion (docs/eval-order.md).
 *
 * Why an order at all: the page evaluates in chunks and shows the running accuracy with its 95 %
 * interval after each one. In level order (easiest first) that prefix is a biased sample: the
 * untrained team showed 61.9 % after 42 problems and ended at 25.0 %. Why stratified rather than a
 * plain seeded shuffle: accuracy differs far more between levels than within one, and a shuffled
 * prefix still drifts with the luck of its level mix; a stratified prefix carries only the
 * within-level spread, so the Wilson interval (which assumes a plain random sample) is conservative
 * for it. On the untrained team's recorded results the running interval covers the final accuracy
 * at all 192 prefix sizes 8..199 (greedy and sampled), against 38 % / 55 % in level order. A
 * stratified prefix has 80 % of a shuffled one's variance there (greedy; 88 % sampled), and over 500
 * seeds (greedy) it covers at 99.4 % on average against 98.8 %, 96.9 % against 92.7 % at the 5th
 * percentile. test/unit/loop/eval-order.test.ts, docs/eval-order.md.
 * Same order in `mappa train`, `mappa eval` and the page: all take their tasks from here (the domain's heldOut, heldOutTasks).
 */
export function mathEvalTasks(count: number): RolloutTask[] {
  const all = mathHeldOut();
  const step = all.length / count;
  const subset = Array.from({ length: Math.min(count, all.length) }, (_, i) => all[Math.floor(i * step)]);
  return stratifiedOrder(subset, (t) => t.level, HELD_OUT_ORDER_SEED);
}

/** The math rubric as a coach: it checks each step against the task attached to each action. */
export function mathRuleCoach(): Coach {
  return new RuleCoach('rule', (ctx) => {
    const task = (ctx.task ?? { answer: ctx.groundTruth ?? '' }) as RuleTask;
    const r = ruleScore(task, ctx);
    return { score: r.score, correct: ctx.final ? r.correct : undefined, reason: r.reason };
  });
}

/** Generated problems of `level` (0: every level mixed, five times as many), `size` of them, seeded per run. */
function mathTrainPool(seed: number, level: number, size: number): RolloutTask[] {
  const mixed = level === 0;
  return generateMathTasks({ seed: `train:${seed}:L${level}`, count: size * (mixed ? 5 : 1), level: mixed ? undefined : level });
}

/**
 * The team's answer, the final agent's last \boxed{} (else "Answer: x"), right when it equals the
 * task's answer as a number or normalised text (tasks/answers.ts).
 * Example: mathOutcome(t, ws, 'so \\boxed{0.5}') with t.task.answer '\\frac{1}{2}' -> { finalAnswer: '0.5', correct: true }
 */
export function mathOutcome(t: Trajectory, _ws: unknown, finalText: string): TrajectoryOutcome {
  const finalAnswer = extractFinalAnswer(finalText);
  return { finalAnswer, correct: finalAnswer !== null && answersEqual(finalAnswer, t.task.answer) };
}

export const MATH_TEAM: Team = {
  name: 'math',
  trainPool: mathTrainPool,
  leveled: true,
  heldOut: mathEvalTasks,
  outcome: mathOutcome,
  formats: {
    solver: (t) => /Answer:\s*-?\d/.test(t),
    executor: (t, turn) => (turn === 1 ? /```python\n[\s\S]*print\(/.test(t) : /Result:\s*-?\d/.test(t)),
    verifier: (t) => /\\boxed\{[^}]+\}/.test(t),
  },
  ruleCoach: mathRuleCoach,
  judgeModel: 'models/judge',
  metricNames: [],
  presets: () => [{ name: MATH_CHAIN.name, label: 'math chain (Solver → Executor → Verifier)', workflow: structuredClone(MATH_CHAIN) }],
};
