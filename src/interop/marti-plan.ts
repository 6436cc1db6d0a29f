/**
 * The numbers and paths of a MARTI export worked out before anything is written, with the checks
 * their trainer would otherwise fail on at run time: the 3-agent math chain, a train batch the 2
 * actor GPUs divide, prompt + generation within the base model's positions, no absolute path.
 *
 * For: src/interop/marti.ts (the config) and marti-readme.ts (which tells the same plan).
 * Not for: the YAML itself.
 *
 * Example: martiPlan(resolveTrainConfig({}), {source: 'runs/a'}, 2000).batches
 *          -> {trainBatch: 24, microTrain: 4, microRollout: 8, maxSamples: 360, episodes: 1, steps: 30}
 */
import type { TrainConfig } from '../core/loop/config.ts';
import type { RewardMode } from '../core/loop/rewards.ts';
import type { TokenMeasure } from './marti-measure.ts';

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
/** GPUs of one agent's actor in the hardware block (actor_num_nodes x actor_num_gpus_per_node). */
export const ACTOR_GPUS = 2;
/** vLLM engines per agent: colocated on the actor's GPUs, one each (their colocation check). */
export const VLLM_ENGINES = ACTOR_GPUS;
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
  date?: Date;
}

/** What ends a reply: the base model's generation_config.json, and its tokenizer's eos token (their truncation mask's one id). */
export interface MartiStops {
  generationConfig: Record<string, unknown>;
  eosToken: string;
  eosTokenId: number;
}

export interface MartiBatches {
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

/**
 * Batch sizes DeepSpeed accepts (train_batch_size = micro x accumulation x GPUs) and the step count.
 * Example: 12 prompts x 2 samples, microBatchSize 4, 1 mini-batch -> trainBatch 24, microTrain 4.
 */
export function martiBatches(config: TrainConfig, trainCount: number): MartiBatches {
  const prompts = config.promptsPerIteration;
  const trainBatch = Math.floor((prompts * config.samplesPerPrompt) / config.update.miniBatches);
  let microTrain = Math.min(config.update.microBatchSize, Math.floor(trainBatch / ACTOR_GPUS));
  while (microTrain > 0 && trainBatch % (microTrain * ACTOR_GPUS) !== 0) microTrain--;
  if (microTrain === 0) {
    throw new MartiExportError(`a train batch of ${trainBatch} trajectories (promptsPerIteration x samplesPerPrompt / update.miniBatches) ` +
      `cannot be split over ${ACTOR_GPUS} actor GPUs; make it even`);
  }
  if (trainCount < prompts) {
    throw new MartiExportError(`train.jsonl would hold ${trainCount} problems, fewer than one rollout batch of ${prompts}; raise curriculum.poolSize`);
  }
  const needed = config.iterations * prompts;
  const maxSamples = Math.min(needed, trainCount);
  const episodes = Math.ceil(needed / maxSamples);
  return { trainBatch, microTrain, microRollout: Math.min(8, prompts), maxSamples, episodes, steps: episodes * Math.floor(maxSamples / prompts) };
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
    batches: martiBatches(config, trainCount),
    trainCount,
    contextLength: opts.contextLength,
    promptMaxLen,
    generateMaxLen,
    evalTasks: ['heldout', ...(opts.bench ?? []).map((b) => b.name)],
  };
}
