/**
 * The memory plan of a training run as configured: turns a TrainConfig and the agent model's
 * config into the plan's run settings (src/core/engine/model/memory-plan.ts), checks it against the
 * device's limits, and says in one line where the memory goes and whether the run fits.
 *
 * For: the page (the worker plans every run it opens, shows the plan, and refuses Start on a run
 * that would not fit) and anyone who wants the plan of a config file. Not for: the byte counts
 * themselves (memory-plan.ts) or `mappa plan`'s explicit settings (src/cli/plan.ts).
 *
 * Token counts are upper estimates from the agents' budgets: an action row is at most the longest
 * turn budget (maxTokens); a prompt is at most the base (system prompt, instructions and problem:
 * measured by promptBase() on a real task where a tokenizer is at hand, else PROMPT_BASE) plus every
 * earlier turn's budget (each upstream agent's turns, and this agent's own earlier turns).
 *
 * Example (the default math chain: 12 prompts x 2 samples, budgets 96 / 96 x 2 turns / 48):
 *   runSettings(config, 'wasm') -> {rows: 16 (the engine decodes at most 16 rows at once),
 *     promptTokens: 256 + 96 + 2 * 96 = 544 (the verifier's prompt), actionTokens: 96, rank: 8, ...}
 */
import type { ModelConfig } from '../engine/model/config.ts';
import {
  fitsLimits, planMemory, type BufferSize, type DeviceLimits, type FitVerdict, type MemoryPlan, type PlanProjection, type RunSettings,
} from '../engine/model/memory-plan.ts';
import { blockRows, rowsPerBlock } from '../engine/model/vocab-table.ts';
import type { TextTokenizer } from '../engine/tokenizer/tokenizer.ts';
import type { TrainConfig } from '../loop/config.ts';
import type { Team } from '../loop/team.ts';
import { placeVars, type WorkflowSpec } from '../loop/workflow.ts';

/** Tokens of system prompt, instructions and problem text an agent's prompt holds before any hand-over. */
export const PROMPT_BASE = 256;
/** Rows the rollout engine decodes at once (EngineAgents' default maxBatch). */
const ROLLOUT_ROWS = 16;
/** wasm32's addressable heap: tfjs' wasm build can grow to 4 GiB. */
export const WASM_HEAP = 4 * 2 ** 30;

const PLANNED: PlanProjection[] = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'];

export type PlanBackend = 'cpu' | 'wasm' | 'webgpu';

/**
 * Tokens of the longest base prompt: an agent's system prompt and its user template with the task's
 * problem filled in and every hand-over left empty, chat-encoded. Example: the default math chain on a
 * held-out problem -> about 150.
 */
export function promptBase(tok: TextTokenizer, w: WorkflowSpec, task: { problem: string; parts?: readonly string[] }): number {
  let longest = 0;
  w.agents.forEach((a, i) => {
    const vars: Record<string, string | number> = { ...placeVars(w, i), problem: task.problem, part: task.parts?.[i] ?? '', observation: '' };
    const fill = (t: string) => t.replace(/\{\{([\w:-]+)\}\}/g, (m, name: string) => (name in vars ? String(vars[name]) : ''));
    const ids = tok.encodeChat([{ role: 'system', content: fill(a.system) }, { role: 'user', content: fill(a.user) }], { addGenerationPrompt: true });
    longest = Math.max(longest, ids.length);
  });
  return longest;
}

/** The plan's run settings for a training config (see the file comment for the token estimates). */
export function runSettings(model: ModelConfig, c: TrainConfig, backend: PlanBackend, base = PROMPT_BASE): RunSettings {
  const agents = c.workflow.agents;
  let before = 0; // budgets of every turn written before the current agent's last turn
  let longestPrompt = 0;
  for (const a of agents) {
    longestPrompt = Math.max(longestPrompt, before + a.maxTokens * (a.turns - 1));
    before += a.maxTokens * a.turns;
  }
  return {
    rows: Math.min(c.promptsPerIteration * c.samplesPerPrompt, ROLLOUT_ROWS),
    promptTokens: Math.min(base + longestPrompt, model.maxPositionEmbeddings),
    actionTokens: Math.max(...agents.map((a) => a.maxTokens)),
    rank: c.lora.rank,
    targets: c.lora.targetModules.filter((t): t is PlanProjection => (PLANNED as string[]).includes(t)),
    microBatch: c.update.microBatchSize,
    backend,
    adapters: Math.max(1, agents.filter((a) => a.trainable).length),
    batchedUpdate: c.update.batched,
  };
}

/** The limits a backend imposes: wasm's 4 GiB heap; a WebGPU device's binding and buffer limits (its memory is not exposed). */
export function deviceLimits(backend: PlanBackend, gpu?: { maxStorageBufferBindingSize: number; maxBufferSize: number }): DeviceLimits {
  if (backend === 'wasm') return { memory: WASM_HEAP };
  if (backend === 'webgpu' && gpu) return { maxStorageBufferBindingSize: gpu.maxStorageBufferBindingSize, maxBufferSize: gpu.maxBufferSize };
  return {};
}

/** What the page shows: the plan's totals in bytes, the largest buffer, and the verdict. */
export interface RunPlanSummary {
  peak: number;
  rolloutPeak: number;
  updatePeak: number;
  weights: number;
  largest: { what: string; shape: number[]; bytes: number };
  fits: boolean;
  /** What is too big and what to change (empty when it fits). */
  problems: string[];
  /** One line, e.g. "peak up to 58 MiB (update 58, rollout 21; weights 4); largest buffer 12 MiB (logits [96, 1536])". */
  line: string;
}

const mib = (b: number) => (b / 2 ** 20 < 10 ? (b / 2 ** 20).toFixed(1) : (b / 2 ** 20).toFixed(0));

/** ", held in 5 row blocks" when the loader splits a vocabulary table to fit the limits (vocab-table.ts). */
function blocksNote(b: BufferSize, limits: DeviceLimits): string {
  const limit = Math.min(limits.maxStorageBufferBindingSize ?? Infinity, limits.maxBufferSize ?? Infinity);
  if (!b.splitByRows || b.bytes <= limit) return '';
  return `, held in ${blockRows(b.shape[0], rowsPerBlock(b.shape[1], limit)).length} row blocks`;
}

/** Plans the run, checks it against the limits, and summarises both. */
export function planRun(model: ModelConfig, c: TrainConfig, backend: PlanBackend, limits: DeviceLimits, base = PROMPT_BASE):
  RunPlanSummary & { plan: MemoryPlan; verdict: FitVerdict } {
  const plan = planMemory(model, runSettings(model, c, backend, base));
  const verdict = fitsLimits(plan, limits);
  const l = plan.largest;
  return {
    plan, verdict,
    peak: plan.peak, rolloutPeak: plan.rolloutPeak, updatePeak: plan.updatePeak, weights: plan.weights,
    largest: { what: l.what, shape: l.shape, bytes: l.bytes },
    fits: verdict.fits, problems: verdict.problems,
    line: `peak up to ${mib(plan.peak)} MiB (update ${mib(plan.updatePeak)}, rollout ${mib(plan.rolloutPeak)}; weights ${mib(plan.weights)}); ` +
      `largest buffer ${mib(l.bytes)} MiB (${l.what} [${l.shape.join(', ')}]${blocksNote(l, limits)})`,
  };
}

/**
 * The plan of a run over a loaded agent model on `backend`, as the page shows it: the base prompt
 * measured on 8 of the team's held-out tasks (the longest), the backend's limits (a WebGPU device's
 * `gpu` limits), and the summary without the full plan.
 */
export function planForModel(model: { config: ModelConfig; tokenizer?: TextTokenizer | null }, c: TrainConfig, team: Pick<Team, 'heldOut'>,
  backend: PlanBackend, gpu?: { maxStorageBufferBindingSize: number; maxBufferSize: number }): RunPlanSummary {
  const tok = model.tokenizer;
  const tasks = team.heldOut(8);
  const base = tok && tasks.length ? Math.max(...tasks.map((t) => promptBase(tok, c.workflow, t))) : undefined;
  const { plan: _, verdict: __, ...summary } = planRun(model.config, c, backend, deviceLimits(backend, gpu), base);
  return summary;
}
