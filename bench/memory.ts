/**
 * Memory benchmark: the memory plan (src/core/engine/model/memory-plan.ts) against the peak a backend
 * really holds, for a rollout (KV-cache generation) and for one policy-gradient update step, on a
 * SmolLM2-135M-shaped model (random weights, bench/engine.ts) with few layers.
 *
 * For: checking the plan (target: within 25 % of the measured peak on cpu, wasm and webgpu) at
 * several layer counts, so its per-layer terms are checked too. Prints a markdown table.
 * Not for: process memory (RSS, wasm heap slack) — shown for information only — or speed.
 *
 * "Measured" is the peak of the bytes of distinct tensor buffers the backend holds (its own data
 * storage: cpu's and wasm's DataStorage, webgpu's tensor map), weights included, tracked by
 * wrapping the storage's set/delete for the run (trackBackendBytes). tfjs' tf.memory().numBytes
 * (the `tf.profile` peakBytes column) is not memory: it counts a reshape view, and every tensor
 * the gradient tape saves (a clone sharing its input's data), once more each, so during an update
 * it reads 2-3x the real figure.
 *
 * Example: npm run bench -- memory --backends cpu,wasm --layers 2,4
 * (measureLayers takes any config: test/unit/model/memory-plan.test.ts measures a small one in-process.)
 */
import os from 'node:os';
import * as tf from '@tensorflow/tfjs-core';
import { type BackendName, describeBackend, initBackend } from '../src/core/engine/backend.ts';
import { LoraAdapter } from '../src/core/engine/lora/adapter.ts';
import type { ModelConfig } from '../src/core/engine/model/config.ts';
import type { Projection } from '../src/core/engine/model/llama.ts';
import { CausalLM } from '../src/core/engine/model/llama.ts';
import { generate } from '../src/core/engine/model/generate.ts';
import { type MemoryPlan, planMemory } from '../src/core/engine/model/memory-plan.ts';
import { AdamW } from '../src/core/rl/adamw.ts';
import { policyUpdate } from '../src/core/rl/update.ts';
import { type AgentPolicy } from '../src/core/rl/update-steps.ts';
import { type TrainSample } from '../src/core/rl/batches.ts';
import { thisThread } from '../src/core/compute/local.ts';
import { Rng } from '../src/core/stats/rng.ts';
import { benchConfig, randomWeights } from './engine.ts';
import { fmt, runAsChild, runInChild } from './child.ts';

const ALL_BACKENDS: BackendName[] = ['cpu', 'wasm', 'webgpu'];
const MIB = 2 ** 20;
const TARGETS: Projection[] = ['q_proj', 'k_proj', 'v_proj', 'o_proj'];

export interface MemoryBenchOptions {
  backends: BackendName[];
  layers: number[];
  rows: number;
  promptLen: number;
  actionLen: number;
  rank: number;
  microBatch: number;
}

/** Parses `--backends cpu,wasm,webgpu --layers 2,4 --rows 2 --prompt 48 --action 16 --rank 8 --micro-batch 2 --quick`. */
export function parseMemoryArgs(argv: string[]): MemoryBenchOptions {
  const o: MemoryBenchOptions = { backends: [...ALL_BACKENDS], layers: [2, 4], rows: 2, promptLen: 48, actionLen: 16, rank: 8, microBatch: 2 };
  const value = (i: number, flag: string) => {
    const v = argv[i + 1];
    if (v === undefined || v.startsWith('--')) throw new Error(`bench memory: ${flag} needs a value`);
    return v;
  };
  const int = (s: string, flag: string) => {
    const n = Number(s);
    if (!Number.isInteger(n) || n <= 0) throw new Error(`bench memory: ${flag} must be a positive integer, got "${s}"`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    if (flag === '--backends' || flag === '--backend') {
      const list = value(i++, flag).split(',').map((s) => s.trim()) as BackendName[];
      for (const b of list) if (!ALL_BACKENDS.includes(b)) throw new Error(`bench memory: unknown backend "${b}" in ${flag}; use ${ALL_BACKENDS.join(', ')}`);
      o.backends = list;
    } else if (flag === '--layers') o.layers = value(i++, flag).split(',').map((s) => int(s, flag));
    else if (flag === '--rows') o.rows = int(value(i++, flag), flag);
    else if (flag === '--prompt') o.promptLen = int(value(i++, flag), flag);
    else if (flag === '--action') o.actionLen = int(value(i++, flag), flag);
    else if (flag === '--rank') o.rank = int(value(i++, flag), flag);
    else if (flag === '--micro-batch') o.microBatch = int(value(i++, flag), flag);
    else if (flag === '--quick') {
      o.layers = [1, 2];
      o.promptLen = 8;
      o.actionLen = 8;
    } else throw new Error(`bench memory: unknown option "${flag}". Options: --backends cpu,wasm,webgpu --layers 2,4 --rows N ` +
      '--prompt N --action N --rank N --micro-batch N --quick');
  }
  return o;
}

export interface ByteTracker {
  /** Bytes of live tensor buffers now. */
  readonly current: number;
  /** Largest `current` since the last reset. */
  readonly peak: number;
  /** Start a new peak from the current level. */
  reset(): void;
  /** Put the storage's own set/delete back. */
  stop(): void;
}

interface StorageLike {
  set(id: object, value: unknown): void;
  delete(id: object): boolean;
}

/**
 * Tracks the bytes of distinct tensor buffers held by the active backend, by wrapping its data
 * storage (cpu: `data`, wasm: `dataIdMap`, webgpu: `tensorMap`). A view (reshape) or a tape's clone
 * shares its input's data id and costs nothing, as in memory.
 * Example: const t = trackBackendBytes(); tf.zeros([256, 1024]); t.peak -> 1 MiB more than before.
 */
export function trackBackendBytes(): ByteTracker {
  const backend = tf.backend() as unknown as { tensorMap?: StorageLike; dataIdMap?: StorageLike; data?: StorageLike };
  const store = backend.tensorMap ?? backend.dataIdMap ?? backend.data;
  if (!store || typeof store.set !== 'function') throw new Error(`trackBackendBytes: backend "${tf.getBackend()}" has no data storage this knows`);
  const sizes = new Map<object, number>();
  let current = 0;
  let peak = 0;
  const set = store.set;
  const del = store.delete;
  store.set = function (id: object, value: unknown) {
    const v = value as { shape?: number[]; dtype?: string; values?: { byteLength?: number; length: number } };
    let bytes = 0;
    if (v.shape && v.dtype) bytes = v.shape.reduce((a, b) => a * b, 1) * (v.dtype === 'complex64' ? 8 : v.dtype === 'bool' && tf.getBackend() === 'wasm' ? 1 : 4);
    else if (v.values) bytes = v.values.byteLength ?? v.values.length * 4;
    current += bytes - (sizes.get(id) ?? 0);
    sizes.set(id, bytes);
    peak = Math.max(peak, current);
    return set.call(this, id, value);
  };
  store.delete = function (id: object) {
    current -= sizes.get(id) ?? 0;
    sizes.delete(id);
    return del.call(this, id);
  };
  return {
    get current() { return current; },
    get peak() { return peak; },
    reset() { peak = current; },
    stop() { store.set = set; store.delete = del; },
  };
}

export interface LayerMeasure {
  layers: number;
  plan: MemoryPlan;
  /** Measured peaks (bytes of distinct buffers, weights included). */
  rolloutPeak: number;
  updatePeak: number;
  /** tf.profile's numBytes peak over the update (counts views and tape clones again). */
  tfNumBytesPeak: number;
  /** wasm: the heap's size after the run (high-water, with allocator slack); webgpu: GPU buffers allocated by tfjs' pool. */
  backendPool?: number;
  seconds: number;
}

export interface MemoryResult {
  backend: BackendName;
  skipped?: string;
  description?: string;
  measures: LayerMeasure[];
}

const log = (msg: string) => process.stderr.write(`[bench memory ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

/** One layer count on the active backend: a rollout of rows x (prompt + action), then one update step. */
export async function measureLayers(layers: number, o: MemoryBenchOptions, config: ModelConfig = benchConfig(layers)): Promise<LayerMeasure> {
  const t0 = performance.now();
  const backend = tf.getBackend() as BackendName;
  const plan = planMemory(config, {
    rows: o.rows, promptTokens: o.promptLen, actionTokens: o.actionLen, rank: o.rank, targets: TARGETS, microBatch: o.microBatch, backend,
  });
  const tracker = trackBackendBytes();
  try {
    const base = tracker.current;
    const model = new CausalLM(config, randomWeights(config));
    const rng = new Rng(3);
    const tokens = (n: number) => Array.from({ length: n }, () => rng.int(0, config.vocabSize - 1));
    // Rollout: rows prompts, actionLen tokens each, KV cache (no stop token: random weights).
    tracker.reset();
    await generate(model, Array.from({ length: o.rows }, () => tokens(o.promptLen)), { maxNewTokens: o.actionLen, temperature: 0 });
    const rolloutPeak = tracker.peak - base;

    const adapter = LoraAdapter.create(config, { rank: o.rank, alpha: 2 * o.rank, dropout: 0, targetModules: TARGETS, rsLora: false }, 'mem', 0);
    const optimizer = new AdamW(adapter.variables(), { lr: 1e-4 });
    const policies = new Map<string, AgentPolicy>([['mem', { adapter, optimizer, trainable: true }]]);
    const samples: TrainSample[] = Array.from({ length: o.rows }, () => ({ agent: 'mem', prompt: tokens(o.promptLen), action: tokens(o.actionLen), reward: rng.next() }));
    tracker.reset();
    const profile = await tf.profile(async () => { await policyUpdate(thisThread(model), policies, samples, { microBatchSize: o.microBatch }); });
    const updatePeak = tracker.peak - base;
    adapter.dispose();
    optimizer.dispose();
    model.dispose();
    const b = tf.backend() as unknown as { wasm?: { HEAPU8: Uint8Array }; bufferManager?: { numBytesAllocated: number } };
    const backendPool = b.wasm ? b.wasm.HEAPU8.buffer.byteLength : b.bufferManager?.numBytesAllocated;
    return { layers, plan, rolloutPeak, updatePeak, tfNumBytesPeak: profile.peakBytes, backendPool, seconds: (performance.now() - t0) / 1000 };
  } finally {
    tracker.stop();
  }
}

/** Runs in the child process: every layer count on one backend. */
export async function measureMemory(backend: BackendName, o: MemoryBenchOptions): Promise<MemoryResult> {
  let description: string;
  try {
    description = describeBackend(await initBackend({ force: backend }));
  } catch (err) {
    return { backend, skipped: `not available: ${(err as Error).message}`, measures: [] };
  }
  const measures: LayerMeasure[] = [];
  for (const layers of o.layers) {
    log(`${backend}: ${layers} layers`);
    const m = await measureLayers(layers, o);
    log(`${backend}: ${layers} layers: rollout peak ${fmt(m.rolloutPeak / MIB, 1)} MiB measured, ${fmt(m.plan.rolloutPeak / MIB, 1)} MiB planned; ` +
      `update peak ${fmt(m.updatePeak / MIB, 1)} MiB measured, ${fmt(m.plan.updatePeak / MIB, 1)} MiB planned (${fmt(m.seconds, 0)} s)`);
    measures.push(m);
  }
  return { backend, description, measures };
}

/** The markdown report. */
export function formatMemoryReport(results: MemoryResult[], o: MemoryBenchOptions, date = new Date()): string {
  const cpus = os.cpus();
  const out: string[] = [];
  const c = benchConfig(o.layers[0]);
  out.push('# Memory plan vs measured peak', '');
  out.push(`- date: ${date.toISOString()}`);
  out.push(`- machine: ${cpus.length} cores (${cpus[0]?.model.trim() ?? 'unknown cpu'}), ${(os.totalmem() / 1024 ** 3).toFixed(0)} GiB RAM, Node ${process.version}, tfjs ${tf.version_core}`);
  out.push(`- model: SmolLM2-135M shape (hidden ${c.hiddenSize}, intermediate ${c.intermediateSize}, ${c.numHeads} heads / ${c.numKvHeads} KV heads, ` +
    `vocab ${c.vocabSize}, tied), ${o.layers.join(' and ')} layers, random weights, float32`);
  out.push(`- run: rollout of ${o.rows} rows x (${o.promptLen} prompt + ${o.actionLen} generated) tokens with the KV cache; one update step ` +
    `(policyUpdate) on those ${o.rows} samples, rank-${o.rank} LoRA on ${TARGETS.join(', ')}, micro-batch ${o.microBatch}`);
  for (const r of results) out.push(`- ${r.description ?? r.backend}${r.skipped ? ` **skipped**: ${r.skipped}` : ''}`);
  out.push('', '| backend | layers | phase | weights MiB | KV cache MiB | activations MiB | logits MiB | planned peak MiB | measured peak MiB | planned / measured | tf numBytes peak MiB | backend pool MiB |');
  out.push('|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  const m = (b: number) => fmt(b / MIB, 1);
  for (const r of results) {
    for (const x of r.measures) {
      const p = x.plan;
      out.push(`| ${r.backend} | ${x.layers} | rollout | ${m(p.weights)} | ${m(p.kvCache)} | ${m(p.prefillWorking)} (prefill) | | ${m(p.rolloutPeak)} | ${m(x.rolloutPeak)} | ` +
        `${fmt(p.rolloutPeak / x.rolloutPeak, 3)} | | |`);
      out.push(`| ${r.backend} | ${x.layers} | update | ${m(p.weights)} | | ${m(p.activations)} | ${m(p.logits)} | ${m(p.updatePeak)} | ${m(x.updatePeak)} | ` +
        `${fmt(p.updatePeak / x.updatePeak, 3)} | ${m(x.tfNumBytesPeak)} | ${x.backendPool ? m(x.backendPool) : 'n/a'} |`);
    }
  }
  const ratios = results.flatMap((r) => r.measures.flatMap((x) => [x.plan.rolloutPeak / x.rolloutPeak, x.plan.updatePeak / x.updatePeak]));
  if (ratios.length) {
    const worst = ratios.reduce((a, b) => (Math.abs(Math.log(b)) > Math.abs(Math.log(a)) ? b : a));
    out.push('', `Worst planned / measured: ${fmt(worst, 3)} (target: within 25 %, 0.75-1.25): ${Math.abs(worst - 1) <= 0.25 ? 'met' : 'NOT met'}.`);
  }
  out.push('', 'measured peak = largest sum of the bytes of distinct tensor buffers the backend held during the phase, weights included ' +
    '(bench/memory.ts, trackBackendBytes). tf numBytes peak = tf.profile over the update: tfjs counts each view and each tensor the gradient ' +
    'tape saves again, so it is not memory. backend pool = wasm heap size (high-water, allocator slack included) or the GPU buffers tfjs ' +
    'allocated (its pool keeps freed buffers); information only.');
  return out.join('\n') + '\n';
}

function runWorker(backend: BackendName, o: MemoryBenchOptions): Promise<MemoryResult> {
  return runInChild<MemoryResult>(import.meta.url, backend, o, (why) => ({ backend, skipped: why, measures: [] }));
}

export async function runMemoryBenchmark(o: MemoryBenchOptions): Promise<string> {
  const results: MemoryResult[] = [];
  for (const backend of o.backends) {
    log(`starting ${backend} worker`);
    results.push(await runWorker(backend, o));
  }
  return formatMemoryReport(results, o);
}

/** Entry point of `npm run bench -- memory [options]`. */
export async function main(argv: string[]): Promise<void> {
  process.stdout.write(await runMemoryBenchmark(parseMemoryArgs(argv)));
}

// Child process mode: node --import tsx bench/memory.ts --worker <backend> <options json>
runAsChild<MemoryBenchOptions>(import.meta.url, (backend, opts) => measureMemory(backend as BackendName, opts));
