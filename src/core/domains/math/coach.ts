/**
 * The math team's own coach template and the scratchpad its judge writes before the score: what a
 * judge of the math chain reads, with the fields it checks last, and the numbers it copies to compare.
 *
 * The template puts the agent's input first and its own work last: the output, the tool output, then
 * the ground truth where the coach is shown it (MAPPA shows it to the final agent only; `coach.truth:
 * "every"` shows it for every agent, so a coach can check a Code Executor's printed number without
 * solving the problem). The scratchpad copies, per role, the number the agent gave, the truth (or "-"
 * where the coach is not shown it) and the upstream number the rubric compares it with:
 *   Problem Solver   its "Answer:"                                 vs the truth
 *   Code Executor    the number its program printed (else "Result:") vs the truth, and the Solver's "Answer:"
 *   Verifier         its \boxed{}                                  vs the truth, and the printed number it saw
 * The score then follows from which of those are equal (the rubric, rule-coach.ts), a comparison of
 * adjacent copies, as the relay judge's is.
 *
 * For: coaching the math team with a model (`Domain.coachTemplate`) and building its judge
 * (scripts/pretrain-team-judge.ts). Not for: the rubric itself (rule-coach.ts).
 * Example: mathScratchpad({agentId: 'executor', output: '```python\nprint(41-37+24)\n```\nResult: 28',
 *            observation: '```output\n28\n```', input: '...Problem Solver:\n...Answer: 28', groundTruth: '28', ...})
 *          -> '28 28 28'
 */
import { extractBoxed } from '../../tasks/answers.ts';
import type { ActionContext } from '../../coach/coach-format.ts';
import { labelledNumber, printedNumber } from './rule-coach.ts';

/** The math team's coach template ({{…}} as in coach-format.ts's DEFAULT_COACH_TEMPLATE). */
export const MATH_COACH_TEMPLATE = `Coach of the math team. Score the {{role}}'s work from 0 to 10.
Problem: {{problem}}
Its input:
{{input}}
Its work:
{{output}}
Tool output: {{observation}}{{truth}}
Reply with "PROCESS_SCORE: <0-10>"{{answerLine}}.`;

/** What a number slot of the scratchpad holds when there is none. */
const NONE = '-';

/**
 * The judge's scratchpad for one action: the agent's number, the truth as the coach sees it ("-" when
 * not shown), and for the Executor and the Verifier the upstream number the rubric compares with.
 */
export function mathScratchpad(ctx: ActionContext): string {
  const truth = ctx.groundTruth ?? NONE;
  if (ctx.agentId === 'solver') return `${labelledNumber(ctx.output, 'Answer') ?? NONE} ${truth}`;
  if (ctx.final) {
    const evidence = printedNumber(ctx.input) ?? labelledNumber(ctx.input, 'Result') ?? NONE;
    return `${extractBoxed(ctx.output) ?? NONE} ${truth} ${evidence}`;
  }
  const given = printedNumber(ctx.observation) ?? labelledNumber(ctx.output, 'Result') ?? NONE;
  return `${given} ${truth} ${labelledNumber(ctx.input, 'Answer') ?? NONE}`;
}
