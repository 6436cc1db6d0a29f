/**
 * What a MARTI export costs on the cluster: GPUs in total, coach calls for training and for
 * evaluation (from their evaluation schedule, fixture `evaluation`, and the export's settings), and an
 * hour estimate per iteration worked from the sandbox's measured tokens per action (marti-measure.ts)
 * under throughput assumptions stated with it (COST_ASSUMPTIONS; nothing here ran on a GPU).
 *
 * For: the export README's "Cost" section (marti-readme.ts). Not for: scheduling or any run-time check.
 *
 * Example: martiCost(resolveTrainConfig({}), plan, {train: 2000, heldOut: 200, bench: []}, SHIPPED_DEFAULT_MEASURE)
 *          -> {gpus: 3, evaluations: 4, coachCalls: {training: 2160, evaluation: 0}, secondsPerIteration: ~69, ...}
 */
import type { TrainConfig } from '../core/loop/config.ts';
import { EVAL_SAMPLES, EVAL_WORKERS, WORKFLOW_CONCURRENCY, type MartiPlan } from './marti-plan.ts';
import { WORKFLOW_LANGUAGES } from './marti-workflow.ts';
import type { TokenMeasure } from './marti-measure.ts';

/** Share of train.jsonl their trainer also evaluates (no "test" split in a JSONL: common.py blending_datasets). */
export const EVAL_TRAIN_SHARE = 0.03;

/** The GPUs the estimate is for, and what it assumes of them (assumptions, not measurements). */
export const COST_ASSUMPTIONS = {
  gpu: 'NVIDIA H100 80GB',
  /** vLLM's time per decoding step of one sequence at a batch of at most 16 (a model up to ~1.5B, bf16). */
  decodeSecondsPerToken: 0.015,
  /** One SandboxFusion run of a short script. */
  toolSeconds: 1,
  /** One hosted coach call (gemini-2.5-flash class); an agent's calls of a trajectory run at once. */
  coachSeconds: 5,
  /** Update tokens (prompt + action) per second per GPU of an agent (ZeRO-3, CPU Adam, checkpointing). */
  updateTokensPerSecondPerGpu: 5_000,
  /** Per step whatever the size: engines woken and put to sleep, reference log-probs, weight sync. */
  stepOverheadSeconds: 60,
};

export interface MartiCost {
  gpus: number;
  trajectoriesPerStep: number;
  evaluations: number;
  evalProblems: number;
  evalTrajectories: number;
  coachCalls: { training: number; evaluation: number };
  /** Tokens the team generates in sequence on one trajectory, its code runs, and where the figures came from. */
  chainTokens: number;
  codeRuns: number;
  measured: string;
  secondsPerIteration: number;
  secondsPerEvaluation: number;
  /** The arithmetic, one markdown line each. */
  lines: string[];
}

/** Evaluations their loop runs: step 0, every eval_steps, and the last step again when eval_steps divides it. */
export function evaluationCount(steps: number, evalSteps: number): number {
  return 1 + Math.floor(steps / evalSteps) + (steps % evalSteps === 0 ? 1 : 0);
}

const f1 = (x: number) => (Math.round(x * 10) / 10).toLocaleString('en-US');
const f0 = (x: number) => Math.round(x).toLocaleString('en-US');

/** Per agent: actions per trajectory, generated and prompt tokens per action; measured where the run has them. */
function perAgent(config: TrainConfig, plan: MartiPlan, measure?: TokenMeasure) {
  return config.workflow.agents.map((a) => {
    const m = measure?.agents[a.id];
    return {
      id: a.id,
      runsCode: a.tools.some((t) => WORKFLOW_LANGUAGES.includes(t)),
      actions: m?.actionsPerTrajectory ?? a.turns,
      tokens: m?.tokensPerAction ?? a.maxTokens,
      prompt: m?.promptTokensPerAction ?? plan.promptMaxLen,
      measured: !!m,
      promptMeasured: m?.promptTokensPerAction !== undefined,
    };
  });
}

/** GPUs, coach calls and hours of the exported run, with the arithmetic. */
export function martiCost(config: TrainConfig, plan: MartiPlan, counts: { train: number; heldOut: number; bench: number[] },
  measure?: TokenMeasure): MartiCost {
  const A = COST_ASSUMPTIONS;
  const agents = perAgent(config, plan, measure);
  const steps = plan.batches.steps;
  const T = config.promptsPerIteration * config.samplesPerPrompt;
  const coached = config.rewards.mode !== 'outcome';
  const engines = plan.batches.gpus; // one vLLM engine per GPU of an agent
  const gpus = config.workflow.agents.length * engines;
  const updateRate = A.updateTokensPerSecondPerGpu * engines;
  const evaluations = evaluationCount(steps, config.evalEvery);
  const trainShare = Math.max(1, Math.floor(counts.train * EVAL_TRAIN_SHARE));
  const evalProblems = trainShare + counts.heldOut + counts.bench.reduce((s, n) => s + n, 0);
  const evalTrajectories = evalProblems * EVAL_SAMPLES * Math.min(EVAL_WORKERS, engines);
  const coachCalls = { training: coached ? steps * T * agents.length : 0, evaluation: 0 };

  const chainTokens = agents.reduce((s, a) => s + a.actions * a.tokens, 0);
  const codeRuns = agents.filter((a) => a.runsCode).reduce((s, a) => s + a.actions, 0);
  const perTrajectory = chainTokens * A.decodeSecondsPerToken + codeRuns * A.toolSeconds;
  const waves = Math.ceil(T / engines / WORKFLOW_CONCURRENCY);
  const rollout = waves * (perTrajectory + (coached ? A.coachSeconds : 0));
  const updateTokens = Math.max(...agents.map((a) => T * a.actions * (a.prompt + a.tokens)));
  const update = A.stepOverheadSeconds + updateTokens / updateRate;
  const secondsPerIteration = rollout + update;
  const evalWaves = Math.ceil(evalTrajectories / WORKFLOW_CONCURRENCY);
  const secondsPerEvaluation = evalWaves * perTrajectory;

  const measured = measure && agents.every((a) => a.measured)
    ? `measured: ${measure.source}, ${measure.trajectories} trajectories`
    : 'not measured for this team: each agent\'s token budget and turn limit stand in (an upper bound)';
  const hours = (s: number) => `${(s / 3600).toFixed(3)} h (${f0(s)} s)`;
  const total = steps * secondsPerIteration + evaluations * secondsPerEvaluation;
  const lines = [
    `- **Assumed on ${A.gpu}** (assumptions, not measurements): ${A.decodeSecondsPerToken} s per decoding step of a sequence at a batch`
      + ` up to 16 (a model up to ~1.5B in bf16); ${A.toolSeconds} s per SandboxFusion run; ${A.coachSeconds} s per hosted coach call;`
      + ` ${f0(A.updateTokensPerSecondPerGpu)} update tokens/s per GPU of an agent; ${A.stepOverheadSeconds} s of fixed work per step (engines woken and put`
      + ' to sleep, reference log-probs, weight sync).',
    `- **Tokens per action** (${measured}): ${agents.map((a) => `${a.id} ${f1(a.actions)} action(s) x ${f1(a.tokens)} tokens`
      + ` (prompt ${a.promptMeasured ? f1(a.prompt) : `at most ${a.prompt}`})`).join('; ')}.`
      + ` One trajectory generates ${f1(chainTokens)} tokens in sequence and runs code ${f1(codeRuns)} time(s).`,
    `- **Rollout**: ${T} trajectories, ${T / engines} per engine, up to ${WORKFLOW_CONCURRENCY} at once (\`tools_config.num_workers\`): ${waves} wave(s) x`
      + ` (${f1(chainTokens)} tokens x ${A.decodeSecondsPerToken} s + ${f1(codeRuns)} code run(s) x ${A.toolSeconds} s`
      + `${coached ? ` + ${A.coachSeconds} s for the coach` : ''}) = ${f1(rollout)} s.`,
    `- **Update**: ${A.stepOverheadSeconds} s per step + the largest agent's ${f0(updateTokens)} tokens (prompt + action) / ${f0(updateRate)}`
      + ` tokens/s = ${f1(update)} s (the agents update at once, each on its own GPUs).`,
    `- **Per iteration**: ${f1(rollout)} + ${f1(update)} = ${hours(secondsPerIteration)} on ${gpus} x ${A.gpu}.`,
    `- **Per evaluation**: ${f0(evalTrajectories)} trajectories, ${WORKFLOW_CONCURRENCY} at once: ${evalWaves} wave(s) x ${f1(perTrajectory)} s`
      + ` = ${hours(secondsPerEvaluation)}.`,
    `- **Whole run**: ${steps} x ${f0(secondsPerIteration)} s + ${evaluations} x ${f0(secondsPerEvaluation)} s = ${hours(total)},`
      + ` ${f1((total / 3600) * gpus)} GPU-hours.`,
  ];
  return { gpus, trajectoriesPerStep: T, evaluations, evalProblems, evalTrajectories, coachCalls, chainTokens, codeRuns, measured,
    secondsPerIteration, secondsPerEvaluation, lines };
}
