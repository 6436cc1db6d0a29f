/**
 * The relay team: N agents (1..128; the shipped models saw 1..6) in a chain, each doing one checkable step of a computation and
 * passing its digit on (tasks.ts). It is the sandbox's experiment where credit assignment is the
 * bottleneck: the answer is right when every step is, or when the wrong steps' errors cancel on the
 * dial (about 1 time in 10 in a long chain: the luck floor, luck.ts), so under outcome reward what an
 * agent's reward says about its own step shrinks as lambda^(N-1), lambda = (10p - 1) / 9, while a coach
 * that checks each step in its context gives every agent its own signal (docs/credit.md works the
 * prediction out: about 21x the rollouts at N = 4 with steps right 60 % of the time).
 *
 * For: `relayWorkflow(n)`, the rule coach's rubric (`relayStepVerdict`, `relayRuleScore`), the
 * domain's outcome, and the loop settings the team trains with (`relayConfig(n)`).
 * Not for: the loop (mappa/train.ts) or the shipped model that plays it (scripts/pretrain-relay.ts
 * builds models/relay, whose one removable habit is passing the input digit on unchanged).
 *
 * Rubric (the rule coach; every action judged given the input it received, whatever happened upstream):
 *   10  the reply is one digit, the last digit of input + its number        ("7 + 5" -> "2")
 *    0  the input digit passed on unchanged ("7 + 5" -> "7"), any other digit, or no single digit
 *    5  neutral: the input holds no number to add to (an upstream agent replied no digit)
 * Process reward is then 1 or 0 per step, exactly the per-step reward of the theory; outcome reward is
 * 1 for every agent when the last digit equals the true answer.
 * Example: relayStepVerdict('7 + 5', '2') -> {score: 10, right: true, reason: 'right: 7 + 5 -> 2'}
 */
import { RuleCoach, type Coach } from '../../coach/coach.ts';
import { NEUTRAL_SCORE, type ActionContext } from '../../coach/coach-format.ts';
import type { Trajectory, TrajectoryOutcome } from '../../loop/trajectory.ts';
import type { WorkflowSpec } from '../../loop/workflow.ts';
import { expandWorkflow } from '../../loop/workflow-repeat.ts';
import { relayStep } from './tasks.ts';

/** The agent ids of a team of n: agent1 .. agentN. */
export function relayAgentId(position: number): string {
  return `agent${position}`;
}

const RELAY_SYSTEM = 'Relay agent {{position}} of {{count}}: reply with the last digit of the sum.';

/**
 * The relay of n as written in its config: one repeated agent (loop/workflow-repeat.ts), agent i reading
 * agent i-1's reply and its own part, the first only its part, the last giving the team's answer.
 */
function relayWorkflowSpec(n: number): Record<string, unknown> {
  return {
    name: `relay-${n}`,
    domain: 'relay',
    agents: [{
      repeat: n,
      id: 'agent{{position}}', // relayAgentId's form
      role: 'Relay agent {{position}}',
      system: RELAY_SYSTEM,
      user: '{{output:{{previous}}}} {{part}}',
      maxTokens: 4,
      turns: 1,
      tools: [],
      trainable: true,
      first: { user: '{{part}}' },
      last: { final: true },
    }],
  };
}

/** The relay workflow for n agents, expanded: agent 1 reads its part ("3 + 4"), agent i reads agent i-1's reply and its part ("7 + 5"). */
export function relayWorkflow(n: number): WorkflowSpec {
  return expandWorkflow(relayWorkflowSpec(n)) as WorkflowSpec;
}

export interface RelayVerdict {
  score: number;
  /** The step is right given its input (undefined when there was no input to judge against). */
  right?: boolean;
  reason: string;
}

/** The digit a reply gives: one digit alone (spaces around it allowed), else null. */
export function relayDigit(output: string): number | null {
  const m = /^\s*(\d)\s*$/.exec(output);
  return m ? Number(m[1]) : null;
}

/**
 * One step judged in its context: `given` is what the agent was shown ("7 + 5", or " + 5" when its
 * predecessor replied nothing), `output` its reply.
 */
export function relayStepVerdict(given: string, output: string): RelayVerdict {
  const m = /(-?\d+)?\s*\+\s*(\d+)\s*$/.exec(given.trim());
  if (!m) return { score: NEUTRAL_SCORE, reason: `cannot read "x + k" in the input "${given.trim().slice(-40)}"; neutral` };
  if (m[1] === undefined) return { score: NEUTRAL_SCORE, reason: 'the input holds no digit (an upstream agent gave none); neutral' };
  const x = Number(m[1]);
  const k = Number(m[2]);
  const want = relayStep(x, k);
  const d = relayDigit(output);
  if (d === null) return { score: 0, right: false, reason: `no single digit in the reply (wanted ${want})` };
  if (d === want) return { score: 10, right: true, reason: `right: ${x} + ${k} -> ${d}` };
  if (d === relayStep(x, 0)) return { score: 0, right: false, reason: `passed the input ${x} on unchanged (wanted ${want})` };
  return { score: 0, right: false, reason: `wrong digit ${d} (wanted ${want})` };
}

/** What the agent was shown: the last line of its input (its user message). */
function givenOf(input: string): string {
  const lines = input.split('\n');
  return lines[lines.length - 1];
}

/** The rule coach's score for one relay action (the final agent also gets `correct` against the truth). */
export function relayRuleScore(ctx: ActionContext): RelayVerdict & { correct?: boolean } {
  const v = relayStepVerdict(givenOf(ctx.input), ctx.output);
  if (!ctx.final) return v;
  const d = relayDigit(ctx.output);
  return { ...v, correct: d !== null && String(d) === (ctx.groundTruth ?? ctx.task?.answer) };
}

/**
 * The relay team's own judge model (built by scripts/pretrain-relay-judge.ts, measured in docs/judges.md):
 * what `coach.kind: "model"` loads for the relay team unless the config names a judge other than the default.
 */
export const RELAY_JUDGE_MODEL = 'models/relay-judge';

/**
 * The relay team's own coach template: the verdict first, the agent's input last, so that the prompt
 * ends as the relay prompt itself does ("...\n\n7 + 5"), where a judge warm-started from models/relay
 * already works the step out. 54 tokens a step against the generic template's 153 (coach-format.ts).
 * The final agent's line carries the truth; the answer format is the generic one (PROCESS_SCORE, and
 * ANSWER_CORRECT for the final agent), so every coach backend parses it the same way.
 * Example: coachPrompt({role: 'Relay agent 2', output: '2', input: 'Relay agent 2 of 4: ...\n\n7 + 5', final: false, ...}, RELAY_COACH_TEMPLATE)
 *          -> 'Relay agent 2 replied "2".\nRelay agent 2 of 4: reply with the last digit of the sum.\n\n7 + 5'
 */
export const RELAY_COACH_TEMPLATE = '{{role}} replied "{{output}}".{{truth}}\n{{input}}';

export function relayRuleCoach(): Coach {
  return new RuleCoach('rule:relay', (ctx) => {
    const r = relayRuleScore(ctx);
    return { score: r.score, correct: ctx.final ? r.correct : undefined, reason: r.reason };
  });
}

/**
 * The domain's verdict: the final digit against the truth, and the share of steps right in their
 * context (`stepAccuracy`, what each agent learns under process reward).
 */
export function relayOutcome(t: Trajectory): TrajectoryOutcome {
  const last = t.actions[t.actions.length - 1];
  const d = last ? relayDigit(last.text) : null;
  const verdicts = t.actions.map((a) => relayStepVerdict(a.messages[a.messages.length - 1]?.content ?? '', a.text));
  const judged = verdicts.filter((v) => v.right !== undefined);
  return {
    correct: d !== null && String(d) === t.task.answer,
    finalAnswer: d === null ? null : String(d),
    metrics: { stepAccuracy: judged.length ? judged.filter((v) => v.right).length / judged.length : 0 },
  };
}

/**
 * The loop settings of the relay team (a whole config patch, the workflow expanded; all but the workflow
 * are the team's `settings`, which resolveTrainConfig applies to every relay config). Rollouts and evaluations sample at T = 1, where the shipped
 * relay model keeps its habit (greedy never shows it); held-out accuracy is measured every 5
 * iterations on the 200 held-out tasks; curriculum filters are off, so the reward alone differs
 * between a process and an outcome run. The coach is the team's own AI judge (models/relay-judge, its
 * own template): MAPPA's coach, no hand-written reward at training time; `--coach rule` (the page:
 * "rule (the rater)") puts the rubric back.
 */
export function relayConfig(n: number): Record<string, unknown> {
  return {
    agentModel: 'models/relay',
    workflow: relayWorkflow(n),
    iterations: 40,
    promptsPerIteration: 8,
    samplesPerPrompt: 2,
    temperature: 1.0,
    evalEvery: 5,
    evalTasks: 200,
    evalTemperature: 1.0,
    checkpointEvery: 10,
    lr: 2e-3,
    // 16 x N short samples an update: larger micro-batches, fewer passes (the same gradient, summed).
    update: { microBatchSize: 16 },
    coach: { kind: 'model' },
    curriculum: { skipDecided: false, adaptLevel: false, startLevel: 0 },
  };
}

/** The smallest shipped relay that runs on the scale recipe (relayScaleRecipe). */
const RELAY_SCALE_FROM = 16;

/**
 * The shipped configs' recipe for a relay of 16 or more (docs/relay-128-recipe.md has each lever measured):
 * 64 rollouts an iteration (32 prompts x 2 samples) played, coached and updated in wide batches (the
 * speed settings of docs/performance.md, "Speed at scale"), and the held-out set evaluated untrained and
 * at the end only (an evaluation of 200 tasks at 128 agents costs most of an iteration). The learning rate
 * stays 2e-3: 6e-3 moved sampled accuracy faster and broke greedy cells (off-by-one replies). Iterations
 * are what fits 15 min of one wasm thread. Smaller relays keep relayConfig's settings.
 * Example: relayScaleRecipe(128).iterations -> 64; relayScaleRecipe(8) -> {}
 */
export function relayScaleRecipe(n: number): Record<string, unknown> {
  if (n < RELAY_SCALE_FROM) return {};
  const iterations = n >= 128 ? 64 : n >= 32 ? 30 : 20;
  return {
    iterations,
    promptsPerIteration: 32,
    rolloutPasses: 1,
    rolloutBatch: 64,
    evalEvery: iterations,
    checkpointEvery: Math.ceil(iterations / 2),
    evalTemperature: 0,
    update: { microBatchSize: 64, sharedPrefix: true, reuseRolloutLogprobs: true, rememberReference: true, whitening: 'state' },
    coach: { kind: 'model', batch: 64 },
  };
}

/**
 * configs/relay-<n>.json, as `npx tsx scripts/relay-configs.ts` writes it: relayConfig(n) with the scale
 * recipe from 16 agents on, and the workflow as its config writes it, one repeated agent (relayWorkflowSpec),
 * which the loader expands to relayWorkflow(n).
 */
export function relayConfigFile(n: number): Record<string, unknown> {
  return { ...relayConfig(n), ...relayScaleRecipe(n), workflow: relayWorkflowSpec(n) };
}
