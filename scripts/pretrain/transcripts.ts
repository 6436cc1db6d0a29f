/**
 * Synthetic team transcripts: a scripted team plays a workflow on a task, with realistic flaws at
 * controlled rates, and every prompt is rendered from the workflow's own templates, so the data
 * follows any change to MATH_CHAIN. The transcripts become the agent model's training examples
 * (chat-rendered prompt, loss on the assistant tokens) and the judge's (coach prompt -> rule score).
 *
 * For: the math chain now; a new team (the data-analysis roles) is another `TeamScript` (a plan
 * drawn once per task plus one `RoleScript` per agent id), played by the same `playTeam`.
 * Not for: real model rollouts (src/core/loop/rollout.ts), which this mirrors turn for turn:
 * [system, user] -> reply; its code blocks run in the tool and, when a turn is left, the reply and
 * the rendered follow-up are appended; an agent's output is its turns joined by "\n".
 *
 * Math team flaws (rates in MATH_FLAW_RATES): the Solver misreads one operation (the plan is
 * wrong) or slips on one step's arithmetic (the slip carries into later steps); the Executor writes
 * code that fails, or prints the Solver's answer as a bare literal instead of recomputing it (most
 * often on work of one or two steps, which looks too simple to check); the Verifier copies the
 * Solver's answer instead of the program's output.
 *
 * Example:
 *   const t = await playTeam(MATH_TEAM, task, { rng: new Rng(1), runTool });
 *   t.actions.map((a) => `${a.agentId}#${a.turn}`)   // ['solver#1', 'executor#1', 'executor#2', 'verifier#1']
 *   t.actions[0].text                                  // '41 - 37 = 4\n4 + 24 = 28\nAnswer: 28'
 */
import { coachPrompt, formatCoachAnswer, type ActionContext } from '../../src/core/coach/coach-format.ts';
import { agentContext } from '../../src/core/loop/rewards.ts';
import type { Trajectory } from '../../src/core/loop/trajectory.ts';
import { labelledNumber, parseSteps, printedNumber, ruleScore } from '../../src/core/domains/math/rule-coach.ts';
import { placeVars, renderTemplate, type AgentSpec, type WorkflowSpec } from '../../src/core/loop/workflow.ts';
import { MATH_CHAIN } from '../../src/core/domains/math/index.ts';
import { answersEqual, extractFinalAnswer } from '../../src/core/tasks/answers.ts';
import type { MathOp, MathTask } from '../../src/core/domains/math/tasks.ts';
import type { Rng } from '../../src/core/stats/rng.ts';
import type { TextTokenizer } from '../../src/core/engine/tokenizer/tokenizer.ts';
import type { ChatMessage } from '../../src/core/engine/tokenizer/chat.ts';
import { extractCodeBlocks } from '../../src/core/tools/code-blocks.ts';

/** Runs one code block and returns the observation exactly as the rollout shows it (formatObservation). */
export type ToolRunner = (code: string, language: 'python' | 'javascript') => Promise<string>;

export interface TurnContext<P> {
  task: MathTask;
  agent: AgentSpec;
  turn: number;
  /** Tool observation of this agent's previous turn, if any. */
  observation?: string;
  /** Final text of each earlier agent, and each one's last observation. */
  outputs: Map<string, string>;
  lastTool: Map<string, string>;
  plan: P;
}

export type RoleScript<P> = (c: TurnContext<P>) => string;

export interface TeamScript<P> {
  workflow: WorkflowSpec;
  /** Draw the flaws of one transcript (all randomness happens here). */
  plan(task: MathTask, rng: Rng): P;
  roles: Record<string, RoleScript<P>>;
}

export interface ScriptedAction {
  agentId: string;
  role: string;
  turn: number;
  final: boolean;
  /** The conversation the agent saw before this turn. */
  messages: ChatMessage[];
  text: string;
  observation?: string;
}

export interface Transcript {
  task: MathTask;
  actions: ScriptedAction[];
  finalAnswer: string | null;
  correct: boolean;
  flaws: string[];
}

/** Play a scripted team on one task (mirrors runRollouts for one trajectory). */
export async function playTeam<P extends { flaws: string[] }>(team: TeamScript<P>, task: MathTask, opts: { rng: Rng; runTool: ToolRunner }): Promise<Transcript> {
  const plan = team.plan(task, opts.rng);
  const outputs = new Map<string, string>();
  const lastTool = new Map<string, string>();
  const actions: ScriptedAction[] = [];
  const w = team.workflow;
  for (const [index, agent] of w.agents.entries()) {
    const script = team.roles[agent.id];
    if (!script) throw new Error(`playTeam: team script has no role "${agent.id}" (workflow "${w.name}")`);
    const vars: Record<string, string | number> = { ...placeVars(w, index), problem: task.problem };
    for (const a of w.agents) {
      vars[`output:${a.id}`] = outputs.get(a.id) ?? '(none)';
      vars[`tool:${a.id}`] = lastTool.get(a.id) ?? '(none)';
    }
    let messages: ChatMessage[] = [
      { role: 'system', content: renderTemplate(agent.system, vars) },
      { role: 'user', content: renderTemplate(agent.user, vars) },
    ];
    const texts: string[] = [];
    let observation: string | undefined;
    for (let turn = 1; turn <= agent.turns; turn++) {
      const text = script({ task, agent, turn, observation, outputs, lastTool, plan });
      const action: ScriptedAction = { agentId: agent.id, role: agent.role, turn, final: !!agent.final, messages, text };
      texts.push(text);
      actions.push(action);
      const blocks = agent.tools.length ? extractCodeBlocks(text).filter((b) => (agent.tools as string[]).includes(b.language)) : [];
      if (!blocks.length) break;
      const observations: string[] = [];
      for (const b of blocks) observations.push(await opts.runTool(b.code, b.language));
      observation = action.observation = observations.join('\n');
      lastTool.set(agent.id, observation);
      if (turn >= agent.turns || !agent.followUp) break;
      messages = [...messages, { role: 'assistant', content: text }, { role: 'user', content: renderTemplate(agent.followUp, { ...vars, observation }) }];
    }
    outputs.set(agent.id, texts.join('\n'));
  }
  const finalId = w.agents.find((a) => a.final)!.id;
  const finalAnswer = extractFinalAnswer(outputs.get(finalId) ?? '');
  return { task, actions, finalAnswer, correct: finalAnswer !== null && answersEqual(finalAnswer, task.answer), flaws: plan.flaws };
}

// ---- the math team ---------------------------------------------------------------------------

export interface MathFlawRates {
  /** Solver uses a wrong operation at one step. */
  opMisread: number;
  /** Solver miscalculates one step (later steps build on the wrong value). */
  slip: number;
  /** Executor's program fails (syntax or name error). */
  malformedCode: number;
  /** Executor prints the Solver's answer as a literal instead of recomputing (Solver's work of 3+ steps). */
  literalCode: number;
  /**
   * The same, when the Solver's work has at most 2 steps: the scripted Executor skips the check on
   * work that looks simple. Above 0.5 the base model's greedy Executor does it too, and since the
   * tiny Solver's own arithmetic is rarely right, those problems fail: a habit a coach can train away.
   */
  literalShort: number;
  /** Verifier boxes the Solver's answer, ignoring the program's output. */
  verifierCopiesSolver: number;
}

export const MATH_FLAW_RATES: MathFlawRates = { opMisread: 0.1, slip: 0.3, malformedCode: 0.08, literalCode: 0.08, literalShort: 0.7, verifierCopiesSolver: 0.08 };

export interface MathPlan {
  flaws: string[];
  /** The Solver's lines as it will write them. */
  steps: { left: number; op: MathOp; right: number; result: number }[];
  answer: number;
  malformed: number; // 0 = fine, 1..3 = which failure
  literal: boolean;
  copySolver: boolean;
}

const CONFUSED: Record<MathOp, MathOp> = { '+': '-', '-': '+', '*': '+', '/': '*' };

function apply(left: number, op: MathOp, right: number): number {
  if (op === '+') return left + right;
  if (op === '-') return left - right;
  if (op === '*') return left * right;
  return Math.trunc(left / right); // a slipped value may not divide: the solver truncates (another slip)
}

export function mathPlan(task: MathTask, rng: Rng, rates: MathFlawRates = MATH_FLAW_RATES): MathPlan {
  const flaws: string[] = [];
  const n = task.chain.steps.length;
  const misread = rng.bernoulli(rates.opMisread) ? rng.int(0, n - 1) : -1;
  const slip = rng.bernoulli(rates.slip) ? rng.int(0, n - 1) : -1;
  const steps: MathPlan['steps'] = [];
  let value = task.chain.start;
  task.chain.steps.forEach((s, i) => {
    let op = s.op;
    if (i === misread) {
      op = CONFUSED[s.op];
      if (op === '-' && value - s.operand < 0) op = '*';
      flaws.push(`solver-op@${i + 1}`);
    }
    let result = apply(value, op, s.operand);
    if (i === slip) {
      const deltas = [-10, -2, -1, 1, 2, 10].filter((d) => result + d >= 0);
      const delta = rng.pick(deltas.length ? deltas : [1, 2, 10]); // a misread plan can go negative
      result += delta;
      flaws.push(`solver-slip@${i + 1}`);
    }
    steps.push({ left: value, op, right: s.operand, result });
    value = result;
  });
  const malformed = rng.bernoulli(rates.malformedCode) ? rng.int(1, 3) : 0;
  const literal = !malformed && rng.bernoulli(n <= 2 ? rates.literalShort : rates.literalCode);
  const copySolver = rng.bernoulli(rates.verifierCopiesSolver);
  if (malformed) flaws.push(`executor-malformed-${malformed}`);
  if (literal) flaws.push('executor-literal');
  if (copySolver) flaws.push('verifier-copies-solver');
  return { flaws, steps, answer: value, malformed, literal, copySolver };
}

/** Solver: one "a op b = c" line per operation, then "Answer: n". */
function solverText(plan: MathPlan): string {
  return [...plan.steps.map((s) => `${s.left} ${s.op} ${s.right} = ${s.result}`), `Answer: ${plan.answer}`].join('\n');
}

/** Executor's program, transcribed line by line from the Solver's steps (so a wrong plan stays wrong). */
function executorCode(solverOutput: string, plan: MathPlan): string {
  const steps = parseSteps(solverOutput);
  const answer = labelledNumber(solverOutput, 'Answer') ?? '0';
  if (plan.literal || !steps.length) return `print(${answer})`;
  const pyOp = (op: string) => (op === '/' ? '//' : op);
  const lines = [`x = ${steps[0].left} ${pyOp(steps[0].op)} ${steps[0].right}`, ...steps.slice(1).map((s) => `x = x ${pyOp(s.op)} ${s.right}`), 'print(x)'];
  if (plan.malformed === 1) lines[lines.length - 1] = 'print(x';
  if (plan.malformed === 2) lines[lines.length - 1] = 'print(y)';
  if (plan.malformed === 3) lines[lines.length - 2] = lines[lines.length - 2].replace(/ -?\d+$/, '');
  return lines.join('\n');
}

/**
 * pretrain's --flaws: math flaw rates that differ from MATH_FLAW_RATES, as JSON; unknown names and rates
 * outside 0..1 are refused. Example: parseFlawRates('{"literalShort": 0.5}') -> MATH_FLAW_RATES with literalShort 0.5.
 */
export function parseFlawRates(json: string): MathFlawRates {
  if (!json) return MATH_FLAW_RATES;
  let patch: Record<string, unknown>;
  try {
    patch = JSON.parse(json);
  } catch (e) {
    throw new Error(`pretrain: --flaws must be a JSON object like '{"literalCode": 0.5}': ${(e as Error).message}`);
  }
  const rates: Record<string, number> = { ...MATH_FLAW_RATES };
  for (const [k, v] of Object.entries(patch)) {
    if (!(k in rates)) throw new Error(`pretrain: --flaws: unknown flaw "${k}" (known: ${Object.keys(rates).join(', ')})`);
    if (typeof v !== 'number' || !(v >= 0 && v <= 1)) throw new Error(`pretrain: --flaws: ${k} must be a rate in 0..1, got ${JSON.stringify(v)}`);
    rates[k] = v;
  }
  return rates as unknown as MathFlawRates;
}

/** The scripted math team with the given flaw rates (MATH_TEAM: the defaults). */
export function mathTeam(rates: MathFlawRates = MATH_FLAW_RATES): TeamScript<MathPlan> {
  return { ...MATH_TEAM, plan: (task, rng) => mathPlan(task, rng, rates) };
}

export const MATH_TEAM: TeamScript<MathPlan> = {
  workflow: MATH_CHAIN,
  plan: (task, rng) => mathPlan(task, rng),
  roles: {
    solver: ({ plan }) => solverText(plan),
    executor: ({ turn, observation, outputs, plan }) => {
      const solver = outputs.get('solver') ?? '';
      if (turn === 1) return '```python\n' + executorCode(solver, plan) + '\n```';
      const printed = printedNumber(observation);
      return `Result: ${printed ?? labelledNumber(solver, 'Answer') ?? '0'}`;
    },
    verifier: ({ outputs, lastTool, plan }) => {
      const solverAnswer = labelledNumber(outputs.get('solver') ?? '', 'Answer');
      const evidence = printedNumber(lastTool.get('executor')) ?? labelledNumber(outputs.get('executor') ?? '', 'Result') ?? solverAnswer ?? '0';
      return `\\boxed{${plan.copySolver && solverAnswer !== null ? solverAnswer : evidence}}`;
    },
  },
};

// ---- training examples -----------------------------------------------------------------------

/** A token sequence with the positions whose next-token prediction is trained. */
export interface Example {
  ids: number[];
  /** lossMask[t] = 1: train the prediction of ids[t] (an assistant token or its <|im_end|>). */
  lossMask: number[];
}

/**
 * Tokenize a chat whose assistant turns are the targets. The text is exactly the chat template's
 * rendering; it is encoded piece by piece at the assistant spans (which start after "\n" and end
 * with <|im_end|>, both token boundaries), so the ids equal encoding the whole text at once.
 */
export function chatExample(tok: TextTokenizer, messages: ChatMessage[]): Example {
  const ids: number[] = [];
  const lossMask: number[] = [];
  let done = 0;
  const push = (text: string, train: boolean) => {
    if (!text) return;
    const piece = tok.encode(text, { addSpecialTokens: false });
    ids.push(...piece);
    lossMask.push(...piece.map(() => (train ? 1 : 0)));
  };
  let full = '';
  messages.forEach((m, k) => {
    if (m.role !== 'assistant') return;
    const prefix = tok.applyChatTemplate(messages.slice(0, k), { addGenerationPrompt: true });
    push(prefix.slice(done), false);
    full = m.content + '<|im_end|>';
    push(full, true);
    done = prefix.length + full.length;
  });
  return { ids, lossMask };
}

/** One agent example per agent of the transcript: its last turn's conversation with all its replies as targets. */
export function agentExamples(t: { actions: { agentId: string; messages: ChatMessage[]; text: string }[] }, tok: TextTokenizer): { agentId: string; example: Example }[] {
  const out: { agentId: string; example: Example }[] = [];
  const byAgent = new Map<string, { messages: ChatMessage[]; text: string }[]>();
  for (const a of t.actions) byAgent.set(a.agentId, [...(byAgent.get(a.agentId) ?? []), a]);
  for (const [agentId, acts] of byAgent) {
    const last = acts[acts.length - 1];
    out.push({ agentId, example: chatExample(tok, [...last.messages, { role: 'assistant', content: last.text }]) });
  }
  return out;
}

/** A scripted transcript in the rollout runner's shape, so rewards.agentContext builds the coach's view of it. */
export function asTrajectory(t: Transcript): Trajectory {
  const actions = t.actions.map((a) => ({ ...a, promptText: '', promptTokens: [], tokens: [], logprobs: [], truncated: false, codeBlocks: a.observation ? 1 : 0 }));
  return { task: t.task, sample: 0, actions, finalAnswer: t.finalAnswer, correct: t.correct };
}

/** What the coach sees for each agent of a math trajectory: its whole work (all turns), as training builds it. */
export function mathCoachContexts(t: Trajectory): ActionContext[] {
  return MATH_CHAIN.agents.map((a) => agentContext(MATH_CHAIN, t, a.id)).filter((c): c is ActionContext => c !== null);
}

export interface JudgeItem {
  context: ActionContext;
  score: number;
  correct?: boolean;
  /** Coach prompt (user turn) -> "PROCESS_SCORE: n[\nANSWER_CORRECT: c]" from the rule labeller. */
  example: Example;
}

/**
 * How a judge is asked and answers: the coach template, whose actions it sees the truth with (MAPPA:
 * the final agent's), and a scratchpad line it writes before the score (the numbers it compares).
 * Default: the generic template, the final agent's truth, no scratchpad (models/judge's recipe).
 */
export interface JudgeView {
  template?: string;
  truth?: 'final' | 'every';
  scratchpad?: (context: ActionContext) => string;
}

/** The context as a judge of this view sees it (the truth added for every agent under truth "every"). */
export function viewed(context: ActionContext, view: JudgeView = {}): ActionContext {
  return view.truth === 'every' && context.groundTruth === undefined && context.task ? { ...context, groundTruth: context.task.answer } : context;
}

export function judgeItem(tok: TextTokenizer, context: ActionContext, label: { score: number; correct?: boolean }, view: JudgeView = {}): JudgeItem {
  const correct = context.final ? label.correct ?? false : undefined;
  const seen = viewed(context, view);
  const pad = view.scratchpad ? `${view.scratchpad(seen)}\n` : '';
  const example = chatExample(tok, [{ role: 'user', content: coachPrompt(seen, view.template) }, { role: 'assistant', content: `${pad}${formatCoachAnswer(label.score, correct)}` }]);
  return { context: seen, score: label.score, correct, example };
}

/** Judge examples of a math trajectory, labelled by the rule coach, as `view` asks the judge (default: generic, truth for the final agent only). */
export function judgeExamples(t: Trajectory, tok: TextTokenizer, view: JudgeView = {}): JudgeItem[] {
  return mathCoachContexts(t).map((context) => judgeItem(tok, context, ruleScore(t.task as MathTask, context), view));
}

/**
 * Rebalance judge items so no score dominates: a score holding more than `maxShare` of the items
 * (in practice 10, the competent scripted action) is subsampled down to that share; seeded.
 * Example: 900 tens + 100 others, maxShare 0.4 -> 67 tens + 100 others.
 */
export function balanceByScore<T extends { score: number }>(items: T[], rng: Rng, maxShare = 0.4): T[] {
  const counts = new Map<number, number>();
  for (const it of items) counts.set(it.score, (counts.get(it.score) ?? 0) + 1);
  const keep = new Map<number, number>();
  for (const [score, n] of counts) {
    const others = items.length - n;
    const cap = Math.max(1, Math.floor((maxShare * others) / (1 - maxShare)));
    keep.set(score, n > cap && n / items.length > maxShare ? cap / n : 1);
  }
  return items.filter((it) => rng.next() < keep.get(it.score)!);
}
