/**
 * The coach's prompt and answer format (MAPPA section 3), shared by every coach backend and by
 * the judge model's training data.
 *
 * For: building the text a judge model reads for one action, and parsing its answer.
 * Not for: calling a model (coach.ts) or rule-based scoring (rule-coach.ts).
 *
 * The coach sees: the problem, the agent's role, its full input, its output, the tool
 * observation (first 2000 characters) and the ground truth where the context carries it (MAPPA: the
 * final agent only; coach.truth "every" shows it for every agent, coach/coaches.ts).
 * It answers:
 *   PROCESS_SCORE: <0..10>
 *   ANSWER_CORRECT: <0|1>     (final agent only)
 * Example: parseCoachAnswer('PROCESS_SCORE: 7\nANSWER_CORRECT: 1', true) -> {ok: true, score: 7, correct: true}
 */

export interface ActionContext {
  problem: string;
  agentId: string;
  role: string;
  /** The agent's full input (its rendered prompt text). */
  input: string;
  /** What the agent produced (all its turns). */
  output: string;
  /** Tool observation(s), if any. */
  observation?: string;
  /** Ground truth: given for the final agent (and for every agent under coach.truth "every"). */
  groundTruth?: string;
  /** Extra facts for the coach (e.g. files and who made them, computed metrics). */
  facts?: string;
  final: boolean;
  /** The task itself, for coaches that check steps against it (never shown to a model coach). */
  task?: { readonly answer: string };
}

export const OBSERVATION_LIMIT = 2000;

/** The agent's full input as the coach reads it: its messages' contents, blank-line separated. */
export function actionInputText(messages: { content: string }[]): string {
  return messages.map((m) => m.content).join('\n\n');
}

export const DEFAULT_COACH_TEMPLATE = `You are the coach of a team of agents. Score one action of one agent.
Problem: {{problem}}
Agent: {{role}}
Input:
{{input}}
Output:
{{output}}
Tool output:
{{observation}}{{facts}}{{truth}}
Score from 0 to 10 how much this action helps the team reach the correct answer.
Reply with "PROCESS_SCORE: <0-10>"{{answerLine}}.`;

/** Render the coach prompt for one action (template editable; {{…}} as in DEFAULT_COACH_TEMPLATE). */
export function coachPrompt(a: ActionContext, template = DEFAULT_COACH_TEMPLATE): string {
  const observation = a.observation?.trim() ? a.observation.slice(0, OBSERVATION_LIMIT) : '(none)';
  const vars: Record<string, string> = {
    problem: a.problem,
    role: a.role,
    input: a.input,
    output: a.output,
    observation,
    facts: a.facts ? `\nFacts:\n${a.facts}` : '',
    truth: a.groundTruth !== undefined ? `\nGround truth: ${a.groundTruth}` : '',
    answerLine: a.final && a.groundTruth !== undefined ? ' and then "ANSWER_CORRECT: <0|1>"' : '',
  };
  return template.replace(/\{\{(\w+)\}\}/g, (m, k: string) => (k in vars ? vars[k] : m));
}

/** The reminder sent with the one retry after an unparsable answer. */
export const FORMAT_REMINDER = 'Your answer could not be read. Reply with exactly "PROCESS_SCORE: <integer 0-10>" on the first line.';

export interface ParsedCoachAnswer {
  ok: boolean;
  score: number;
  correct?: boolean;
  error?: string;
}

/**
 * The score of an action no coach could judge (an unparsable answer after the format reminder, a rubric
 * that does not apply, an input it cannot read): the middle of 0..10, so it pushes the action neither way.
 */
export const NEUTRAL_SCORE = 5;

/** Parse "PROCESS_SCORE: n" (0..10, integer or decimal) and, when wanted, "ANSWER_CORRECT: 0|1". */
export function parseCoachAnswer(text: string, wantCorrect: boolean): ParsedCoachAnswer {
  const m = /PROCESS_SCORE\s*:\s*(-?\d+(?:\.\d+)?)/i.exec(text);
  if (!m) return { ok: false, score: NEUTRAL_SCORE, error: 'no "PROCESS_SCORE: <n>" line' };
  const score = Number(m[1]);
  if (!(score >= 0 && score <= 10)) return { ok: false, score: NEUTRAL_SCORE, error: `PROCESS_SCORE ${m[1]} is outside 0..10` };
  if (!wantCorrect) return { ok: true, score };
  const c = /ANSWER_CORRECT\s*:\s*([01])\b/i.exec(text);
  if (!c) return { ok: false, score, error: 'no "ANSWER_CORRECT: 0|1" line for the final agent' };
  return { ok: true, score, correct: c[1] === '1' };
}

/** What a well-formed coach answer looks like (used to build the judge's training targets). */
export function formatCoachAnswer(score: number, correct?: boolean): string {
  return `PROCESS_SCORE: ${Math.round(score)}` + (correct === undefined ? '' : `\nANSWER_CORRECT: ${correct ? 1 : 0}`);
}
