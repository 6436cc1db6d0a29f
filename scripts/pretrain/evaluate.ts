/**
 * Measurements for the model cards: the base team's accuracy on its held-out set, read from the loop's
 * one evaluation (src/core/loop/eval-queue.ts `evaluateTeam`: the same held-out tasks, order, seeds,
 * real sandbox and the model loaded from its folder as `mappa train` and the page), per pass, per level
 * and per agent's format; and the judge's agreement with the rule-based labeller on held-out actions.
 *
 * For: scripts/pretrain.ts and bench/judge.ts. Not for: RL evaluation during training (the loop's own).
 *
 * Example:
 *   const { greedy, sampled } = await teamAccuracy(loadedAgent, { python: sandbox }, resolveTrainConfig({ evalTemperature: 1 }));
 *   greedy.accuracy   // share of the 200 held-out problems whose boxed answer is right
 */
import { parseCoachAnswer, coachPrompt } from '../../src/core/coach/coach-format.ts';
import { LocalCompute } from '../../src/core/compute/local.ts';
import { evaluateTeam } from '../../src/core/loop/eval-queue.ts';
import type { TrainConfig } from '../../src/core/loop/config.ts';
import type { RolloutTask, Trajectory } from '../../src/core/loop/trajectory.ts';
import { placeVars, renderTemplate, type WorkflowSpec } from '../../src/core/loop/workflow.ts';
import { MATH_CHAIN } from '../../src/core/domains/math/index.ts';
import { parseSteps } from '../../src/core/domains/math/rule-coach.ts';
import type { CausalLM } from '../../src/core/engine/model/llama.ts';
import type { TextTokenizer } from '../../src/core/engine/tokenizer/tokenizer.ts';
import { teamOf } from '../../src/core/domains/index.ts';
import { meanMetrics } from '../../src/core/loop/team.ts';
import { generate, promptBatches } from '../../src/core/engine/model/generate.ts';
import { stopTokenIds, type LoadedModel } from '../../src/core/engine/model/load.ts';
import type { MathTask } from '../../src/core/domains/math/tasks.ts';
import type { ToolRunners } from '../../src/core/tools/runners.ts';
import type { ActionContext } from '../../src/core/coach/coach-format.ts';

export interface TeamAccuracy {
  temperature: number;
  tasks: number;
  correct: number;
  accuracy: number;
  /** Accuracy per level (1..5; math only). */
  byLevel: Record<number, number>;
  /** Share of actions whose output has the role's expected structure. */
  onFormat: Record<string, number>;
  /** Mean quality metrics of the data team's trajectories (ROC-AUC, RMSE / IQR, ...). */
  metrics?: Record<string, number>;
  /** Seconds of the whole evaluation (both passes). */
  seconds: number;
  trajectories: Trajectory[];
}

/** One pass of an evaluation, summed up: accuracy, by level, each role's format, the domain's metrics. */
function passReport(workflow: WorkflowSpec, trajectories: Trajectory[], temperature: number, seconds: number): TeamAccuracy {
  const byLevel: Record<number, number> = {};
  for (const level of [1, 2, 3, 4, 5]) {
    const ts = trajectories.filter((t) => (t.task as Partial<MathTask>).level === level);
    if (ts.length) byLevel[level] = ts.filter((t) => t.correct).length / ts.length;
  }
  const onFormat: Record<string, number> = {};
  const team = teamOf(workflow);
  const formats = team.formats ?? {}; // each agent's format check, as its team states it
  for (const id of workflow.agents.map((a) => a.id).filter((id) => formats[id])) {
    const acts = trajectories.flatMap((t) => t.actions.filter((a) => a.agentId === id));
    onFormat[id] = acts.filter((a) => formats[id](a.text, a.turn)).length / Math.max(1, acts.length);
  }
  const names = team.metricNames;
  const metrics = names.length ? meanMetrics(trajectories, names) : undefined;
  const correct = trajectories.filter((t) => t.correct).length;
  return { temperature, tasks: trajectories.length, correct, accuracy: correct / Math.max(1, trajectories.length), byLevel, onFormat, metrics, seconds, trajectories };
}

/**
 * The untrained team (`agent` with no adapter) measured by the loop's one evaluation of `config` (its
 * workflow, held-out tasks, evaluation temperature and tool timeout; `heldOut`: a given held-out set
 * instead of the domain's), read per pass: greedy, and sampled at `config.evalTemperature`.
 */
export async function teamAccuracy(agent: LoadedModel, tools: ToolRunners, config: TrainConfig, heldOut?: RolloutTask[]): Promise<{ greedy: TeamAccuracy; sampled: TeamAccuracy }> {
  const team = teamOf(config.workflow);
  const chunk = await evaluateTeam(config, team, LocalCompute.forTeam({ team, agentModel: agent, tools }), { heldOut });
  return {
    greedy: passReport(config.workflow, chunk.greedy, 0, chunk.seconds),
    sampled: passReport(config.workflow, chunk.sampled, config.evalTemperature, chunk.seconds),
  };
}

export interface JudgeAgreement {
  actions: number;
  parsed: number;
  /** Mean absolute error of PROCESS_SCORE vs the rule label (unparsable answers count as 5). */
  mae: number;
  /** Share with |judge - label| <= 1. */
  within1: number;
  /** Final-agent actions: share whose ANSWER_CORRECT equals the label (null when there were none). */
  answerCorrectAccuracy: number | null;
  /** MAE of always answering the labels' mean (a baseline the judge should beat). */
  baselineMae: number;
  seconds: number;
  /** Per item, in input order: |judge - label| minus |labels' mean - label| (negative: the judge is closer). */
  gains?: number[];
  /** Per item, in input order: the judge's score (5 where unparsable), with `gains`. */
  scores?: number[];
}

/**
 * Greedy judge answers for labelled actions, compared with the labels. The judge reads `template`
 * (default: the generic one) and may answer up to `maxNewTokens` (default: the judge folder's
 * max_new_tokens, else 16; a scratchpad before the score needs more).
 */
export async function judgeAgreement(judge: LoadedModel, items: { context: ActionContext; score: number; correct?: boolean }[], batch = 32,
  opts: { gains?: boolean; template?: string; maxNewTokens?: number } = {}): Promise<JudgeAgreement> {
  const start = performance.now();
  const tok = judge.tokenizer!;
  let parsed = 0;
  let absErr = 0;
  let within = 0;
  let finals = 0;
  let finalsRight = 0;
  const errors = new Array<number>(items.length).fill(0);
  const scores = new Array<number>(items.length).fill(5);
  const allPrompts = items.map((it) => tok.encodeChat([{ role: 'user', content: coachPrompt(it.context, opts.template) }], { addGenerationPrompt: true }));
  const maxNewTokens = opts.maxNewTokens ?? judge.generation.maxNewTokens ?? 16;
  for (const indices of promptBatches(allPrompts.map((p) => p.length), batch)) {
    const slice = indices.map((i) => items[i]);
    const prompts = indices.map((i) => allPrompts[i]);
    const gens = await generate(judge.model, prompts, { maxNewTokens, temperature: 0, eosTokenIds: stopTokenIds(judge) });
    gens.forEach((g, j) => {
      const it = slice[j];
      const answer = parseCoachAnswer(tok.decode(g.tokens, { skipSpecialTokens: true }), it.context.final);
      if (answer.ok) parsed++;
      const err = Math.abs(answer.score - it.score);
      errors[indices[j]] = err;
      scores[indices[j]] = answer.score;
      absErr += err;
      if (err <= 1) within++;
      if (it.context.final) {
        finals++;
        if (answer.correct === it.correct) finalsRight++;
      }
    });
  }
  const mean = items.reduce((s, it) => s + it.score, 0) / items.length;
  const baselineMae = items.reduce((s, it) => s + Math.abs(it.score - mean), 0) / items.length;
  return { actions: items.length, parsed: parsed / items.length, mae: absErr / items.length, within1: within / items.length,
    answerCorrectAccuracy: finals ? finalsRight / finals : null, baselineMae, seconds: (performance.now() - start) / 1000,
    gains: opts.gains ? errors.map((e, i) => e - Math.abs(items[i].score - mean)) : undefined,
    scores: opts.gains ? scores : undefined };
}

/**
 * Does the greedy Solver read the problem's numbers? The share of problems whose Solver writes as its
 * first line "<start> <op> <operand> = ..." with both numbers of the chain's first operation (the
 * result may be wrong: arithmetic is the Executor's job). A tiny model learns this copying late and
 * suddenly; before it does, the team is right on almost nothing (a stage 1 stopped at loss 0.45 copied
 * the first number but invented the second: "4 + 4 = 17" for "costs 4 dollars ... 2 dollars less").
 * Example: solverReadsNumbers(model, tok, tasks) -> 0.85
 */
export async function solverReadsNumbers(model: CausalLM, tok: TextTokenizer, tasks: MathTask[]): Promise<number> {
  const solver = MATH_CHAIN.agents[0];
  const prompts = tasks.map((t) => tok.encodeChat([
    { role: 'system', content: renderTemplate(solver.system, placeVars(MATH_CHAIN, 0)) },
    { role: 'user', content: renderTemplate(solver.user, { problem: t.problem }) },
  ], { addGenerationPrompt: true }));
  const eos = tok.eosTokenIds;
  let read = 0;
  for (const indices of promptBatches(prompts.map((p) => p.length), 20)) {
    const gens = await generate(model, indices.map((i) => prompts[i]), { maxNewTokens: 24, temperature: 0, eosTokenIds: eos });
    gens.forEach((g, j) => {
      const t = tasks[indices[j]];
      const [first] = parseSteps(tok.decode(g.tokens, { skipSpecialTokens: true }));
      if (first && first.left === t.chain.start && first.right === t.chain.steps[0].operand) read++;
    });
  }
  return read / tasks.length;
}
