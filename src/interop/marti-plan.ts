/**
 * The numbers and paths of a MARTI export worked out before anything is written, with the checks
 * their trainer would otherwise fail on at run time: the 3-agent math chain, a train batch the actor
 * GPUs divide and their sample filter keeps whole, prompt + generation within the base model's
 * positions, no absolute path.
 *
 * For: src/interop/marti.ts (the config) and marti-readme.ts (which tells the same plan).
 * Not for: the YAML itself.
 *
 * Example: martiPlan(resolveTrainConfig({}), {source: 'runs/a'}, 2000).batches
 *          -> {gpus: 1, filter: false, trainBatch: 24, microTrain: 4, microRollout: 8, maxSamples: 360, episodes: 1, steps: 30}
 */
import type { TrainConfig } from '../core/loop/config.ts';
import type { RewardMode } from '../core/loop/rewards.ts';
import type { TokenMeasure } from './marti-measure.ts';
import { WORKFLOW_LANGUAGES } from './marti-workflow.ts';

export class MartiExportError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MartiExportError';
  }
}

/** Where the files go in their checkout; the config names only paths under these. */
export const MARTI_DATA_DIR = './data/mappa';
export const MARTI_MODELS_DIR = './models/mappa';
export const MARTI_CONFIG_NAME = 'mappa_mathchat';
/** The code tool's schema, shipped with the export (the stock examples/schema/code.json is not in their repository). */
export const CODE_SCHEMA_FILE = 'code_interpreter.json';
/** The models' stop settings, copied into each model folder (README step 1). */
export const GENERATION_CONFIG_FILE = 'generation_config.json';
/**
 * GPUs per agent unless --gpus-per-agent says otherwise: its actor, reference and vLLM engine share
 * them (actor_num_gpus_per_node; one vLLM engine per GPU, their colocation check). One GPU per agent
 * lets filter_agents_data stay off and every sample train (martiBatches says why).
 */
export const DEFAULT_GPUS_PER_AGENT = 1;
/** The most samples one of their Samples objects packs (micro_rollout_batch_size; the stock value). */
const MAX_MICRO_ROLLOUT = 8;
/** Samples per evaluation problem (the stock n_eval_samples_per_prompt; the sandbox plays each twice too). */
export const EVAL_SAMPLES = 2;
/** Engines each evaluation problem is played on (eval_workers; their default, -1, plays it on every engine). */
export const EVAL_WORKERS = 1;
/** Workflows one engine's wrapper runs at once (tools_config.num_workers). */
export const WORKFLOW_CONCURRENCY = 16;
/** default.yaml's prompt_max_len, for a base model whose context length is not known here. */
const DEFAULT_PROMPT_MAX_LEN = 1024;

/** One problem as MARTI's dataset loader reads it (input_key "prompt", label_key "answer"). */
export interface MartiRecord {
  prompt: string;
  answer: string;
  metadata: { id: string; level?: number };
}

/** An extra evaluation set, written as <name>.jsonl and named in extra_eval_tasks. */
export interface MartiBench {
  name: string;
  records: MartiRecord[];
}

export interface MartiExportOptions {
  /** Where the config came from, as the files show it: a relative path or a name, never absolute. */
  source: string;
  /** Agent ids whose trained adapter the run folder has (adapters/<id>/): they start from base + adapter, merged. */
  adapters?: string[];
  /** Extra evaluation sets (e.g. AIME 2024, AMC 2023 from the shared datasets). */
  bench?: MartiBench[];
  /** The base model's positions (config.json max_position_embeddings), when known. */
  contextLength?: number;
  /** Tokens per action the sandbox measured (a run's trajectories.jsonl, or SHIPPED_DEFAULT_MEASURE): the README's cost. */
  measure?: TokenMeasure;
  /** The base model's stop settings, when its files are here: the export's generation_config.json keeps only the mask's id. */
  stops?: MartiStops;
  /** GPUs per agent (actor, reference and vLLM engines colocated): a power of two, DEFAULT_GPUS_PER_AGENT if unset. */
  gpusPerAgent?: number;
  date?: Date;
}

/** What ends a reply: the base model's generation_config.json, and its tokenizer's eos token (their truncation mask's one id). */
export interface MartiStops {
  generationConfig: Record<string, unknown>;
  eosToken: string;
  eosTokenId: number;
}

export interface MartiBatches {
  /** GPUs per agent (actor_num_gpus_per_node = vllm_num_engines = ref_num_gpus_per_node). */
  gpus: number;
  /** filter_agents_data: on only with several GPUs per agent, where it never drops a sample (martiBatches). */
  filter: boolean;
  trainBatch: number;
  microTrain: number;
  microRollout: number;
  maxSamples: number;
  episodes: number;
  steps: number;
}

export interface MartiPlan {
  mode: RewardMode;
  name: string;
  /** default_agent.pretrain: a hub id, or the base model's folder under MARTI_MODELS_DIR. */
  basePretrain: string;
  /** Agents that start from a merged model of their own. */
  merged: Set<string>;
  batches: MartiBatches;
  trainCount: number;
  contextLength?: number;
  promptMaxLen: number;
  generateMaxLen: number;
  /** extra_eval_tasks: the held-out set, then the bench sets. */
  evalTasks: string[];
}

function checkChain(config: TrainConfig): void {
  const w = config.workflow;
  const where = `workflow "${w.name}"`;
  if (w.domain !== 'math') {
    throw new MartiExportError(`${where}: only the math domain maps onto MARTI's mathchat workflow (got domain "${w.domain}")`);
  }
  if (w.agents.length !== 3) {
    throw new MartiExportError(`${where}: MARTI's mathchat workflow is a fixed chain of 3 agents (solver -> python coder -> verifier); ` +
      `this one has ${w.agents.length}`);
  }
  if (!w.agents[1].tools.includes('python')) {
    throw new MartiExportError(`${where}: the second agent must use the python tool (MARTI's Code Executor); ` +
      `"${w.agents[1].id}" has [${w.agents[1].tools.join(', ')}]`);
  }
  if (!w.agents[2].final) {
    throw new MartiExportError(`${where}: the third agent must be the final one (MARTI's Verifier); the final agent is "${w.agents.find((a) => a.final)?.id}"`);
  }
  if (w.agents[0].tools.length || w.agents[2].tools.length) {
    throw new MartiExportError(`${where}: in MARTI only the Code Executor runs tools; remove the tools of "${w.agents[0].id}" / "${w.agents[2].id}"`);
  }
}

/** Fewest and most actions an agent takes per trajectory (the workflow file: a follow-up turn only after code ran). */
export function actionsPerTrajectory(a: TrainConfig['workflow']['agents'][number]): [number, number] {
  return a.turns > 1 && a.followUp && a.tools.some((t) => WORKFLOW_LANGUAGES.includes(t)) ? [1, a.turns] : [1, 1];
}

/**
 * Samples their filter keeps of `count` on every GPU (filter_agents_data, multi_agent_controller.py
 * generate_shared_samples): whole micro-batches of `micro`, then whole train batches, the train batch
 * compared with ONE GPU's count although DeepSpeed reads it as the batch over all GPUs.
 * Example: filterKeeps(12, 8, 24) -> 0 (12 // 8 x 8 = 8 < 24); filterKeeps(32, 8, 16) -> 32.
 */
export function filterKeeps(count: number, micro: number, trainBatch: number): number {
  const microBatches = Math.floor(count / micro);
  const trainBatches = Math.floor((microBatches * micro) / trainBatch);
  return Math.floor((trainBatches * trainBatch) / micro) * micro;
}

/**
 * Batch sizes DeepSpeed accepts (train_batch_size = micro x accumulation x GPUs), their filter keeping
 * every sample, and the step count; throws MartiExportError naming the setting otherwise.
 * - One GPU per agent: filter_agents_data off. It only evens out sample counts between an agent's GPUs
 *   (unequal counts would hang ZeRO-3); with one there is nothing to even out, and on it their filter would
 *   round the Executor's varying count (1 or 2 actions per trajectory) down to whole train batches.
 * - Several: the filter must be on, so every agent must take a fixed number of actions per trajectory and
 *   each GPU's share must be whole micro-batches and whole train batches (filterKeeps).
 * Whatever the GPUs, an agent whose count varies gets micro_train_batch_size 1: their PPO loop's DataLoader drops
 * the last partial micro-batch (drop_last), so a larger one would drop up to micro - 1 of its samples each step.
 * Example: 12 prompts x 2 samples, 1 GPU, microBatchSize 4, 1 mini-batch -> trainBatch 24, microTrain 1 (the Executor varies), filter off.
 */
export function martiBatches(config: TrainConfig, trainCount: number, gpus = DEFAULT_GPUS_PER_AGENT): MartiBatches {
  const prompts = config.promptsPerIteration;
  const where = `--gpus-per-agent ${gpus}`;
  if (!Number.isInteger(gpus) || gpus < 1 || (gpus & (gpus - 1)) !== 0) {
    throw new MartiExportError(`${where}: must be a power of two (their train.py asserts it of the actor's GPUs)`);
  }
  const total = prompts * config.samplesPerPrompt;
  const trainBatch = Math.floor(total / config.update.miniBatches);
  let microTrain = Math.min(config.update.microBatchSize, Math.floor(trainBatch / gpus));
  while (microTrain > 0 && trainBatch % (microTrain * gpus) !== 0) microTrain--;
  if (microTrain === 0) {
    throw new MartiExportError(`a train batch of ${trainBatch} trajectories (promptsPerIteration x samplesPerPrompt / update.miniBatches) ` +
      `cannot be split over ${gpus} actor GPU(s); ${gpus > 1 ? `make it a multiple of ${gpus} or use --gpus-per-agent 1` : 'raise it'}`);
  }
  if (trainCount < prompts) {
    throw new MartiExportError(`train.jsonl would hold ${trainCount} problems, fewer than one rollout batch of ${prompts}; raise curriculum.poolSize`);
  }
  let microRollout = Math.min(MAX_MICRO_ROLLOUT, prompts);
  const varying = config.workflow.agents.find((a) => actionsPerTrajectory(a)[0] !== actionsPerTrajectory(a)[1]);
  // Their PPO loop reads the replay buffer in micro-batches with drop_last: an agent whose sample count varies
  // keeps every sample only with micro-batches of 1 (DeepSpeed then accumulates them to the train batch).
  if (varying) microTrain = 1;
  if (gpus > 1) {
    if (varying) {
      throw new MartiExportError(`${where}: agent "${varying.id}" takes 1 to ${varying.turns} actions per trajectory, so its samples differ ` +
        `between GPUs and filter_agents_data (needed on ${gpus} GPUs) would drop the surplus; use --gpus-per-agent 1`);
    }
    if (prompts % gpus !== 0) {
      throw new MartiExportError(`${where}: promptsPerIteration ${prompts} does not split evenly over ${gpus} GPUs; ` +
        'filter_agents_data would drop the larger shares\' samples');
    }
    const perGpu = total / gpus;
    microRollout = Math.max(...[...Array(Math.min(MAX_MICRO_ROLLOUT, perGpu)).keys()].map((i) => i + 1).filter((m) => perGpu % m === 0));
    const kept = filterKeeps(perGpu, microRollout, trainBatch);
    if (kept < perGpu) {
      throw new MartiExportError(`${where}: filter_agents_data would keep ${kept} of each agent's ${perGpu} samples per GPU (it compares ` +
        `train_batch_size ${trainBatch} with one GPU's samples); set update.miniBatches to a multiple of ${gpus}, or use --gpus-per-agent 1`);
    }
  }
  const needed = config.iterations * prompts;
  const maxSamples = Math.min(needed, trainCount);
  const episodes = Math.ceil(needed / maxSamples);
  return { gpus, filter: gpus > 1, trainBatch, microTrain, microRollout, maxSamples, episodes, steps: episodes * Math.floor(maxSamples / prompts) };
}

/** A hub URL as its "org/name" id; anything else is a local folder, copied to MARTI_MODELS_DIR/base. */
function basePretrain(agentModel: string): string {
  const hub = /^https?:\/\/(?:www\.)?huggingface\.co\/([\w.-]+\/[\w.-]+)/.exec(agentModel);
  return hub ? hub[1] : `${MARTI_MODELS_DIR}/base`;
}

const isAbsolute = (p: string) => /^(\/|~|[A-Za-z]:[\\/]|\\\\)/.test(p);

function checkOptions(opts: MartiExportOptions): void {
  if (isAbsolute(opts.source)) {
    throw new MartiExportError(`source "${opts.source}" is an absolute path; pass it relative (the export names no path of this machine)`);
  }
  const names = new Set(['train', 'heldout']);
  for (const b of opts.bench ?? []) {
    if (!/^[\w.-]+$/.test(b.name) || names.has(b.name)) {
      throw new MartiExportError(`evaluation set name "${b.name}" must be a unique plain file name (not train / heldout)`);
    }
    if (!b.records.length) throw new MartiExportError(`evaluation set "${b.name}" has no problems`);
    names.add(b.name);
  }
}

/** Everything derived from the config before writing; throws MartiExportError for what would fail there. */
export function martiPlan(config: TrainConfig, opts: MartiExportOptions, trainCount: number): MartiPlan {
  checkChain(config);
  checkOptions(opts);
  const mode = config.rewards.mode;
  const generateMaxLen = Math.max(...config.workflow.agents.map((a) => a.maxTokens));
  const promptMaxLen = opts.contextLength ? opts.contextLength - generateMaxLen : DEFAULT_PROMPT_MAX_LEN;
  if (promptMaxLen < 256) {
    throw new MartiExportError(`the base model has ${opts.contextLength} positions; ` +
      `with ${generateMaxLen} generated tokens that leaves ${promptMaxLen} for the prompt (under 256)`);
  }
  const ids = new Set(config.workflow.agents.map((a) => a.id));
  return {
    mode,
    name: `mappa-${config.workflow.name}-${mode}-seed${config.seed}`,
    basePretrain: basePretrain(config.agentModel),
    merged: new Set((opts.adapters ?? []).filter((id) => ids.has(id))),
    batches: martiBatches(config, trainCount, opts.gpusPerAgent ?? DEFAULT_GPUS_PER_AGENT),
    trainCount,
    contextLength: opts.contextLength,
    promptMaxLen,
    generateMaxLen,
    evalTasks: ['heldout', ...(opts.bench ?? []).map((b) => b.name)],
  };
}
