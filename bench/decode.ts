/**
 * One decoding step of a rollout, measured against what bounds it: `npm run bench -- decode`.
 * At the shipped agent's shape (models/agent) and at SmolLM2-135M's (random weights, its layers or
 * --layers), with the rows a real iteration decodes (24 for the math team: 12 prompts x 2 samples)
 * after a prompt of --context tokens, it prints one table:
 *   step ms            median wall time of one KV-cache decode step (forward of 1 token per row +
 *                      greedy pick), after a warm-up step
 *   GFLOP / step       analytic: 2 x rows x (every layer's projections + the output projection) +
 *                      attention over the cache (4 x rows x layers x q-width x cached length)
 *   MB / step          weights read once per step (float32): every layer's projections + the output projection
 *   bound ms           max(FLOPs / the process's own [rows, hidden] x [hidden, intermediate] matmul
 *                      rate, bytes / its own [rows, hidden] x [hidden, vocab] rate in bytes of weight per s)
 *   bound / step       the share of the bound the step reaches (1 = at the bound: the issue's "decode / bound")
 *   path               plain: the tfjs ops of llama.ts; fused: the wasm step of decode-wasm.ts or, on
 *                      webgpu, the WGSL step of decode-webgpu.ts (what generate uses), measured back to
 *                      back in the same process
 *   kernels / step     plain: tfjs kernels one step runs (tf.profile; on webgpu each is one or more
 *                      dispatches); fused: on wasm its matmul calls plus its JS passes (norms, RoPE,
 *                      attention, SwiGLU, residuals), on webgpu its dispatches
 *   kernels / layer    kernels / step over layers (the embedding, final norm, head and pick included)
 *   dispatches         webgpu only: compute dispatches one step records (plain: every
 *                      GPUComputePassEncoder.dispatchWorkgroups call counted; fused: its own count,
 *                      the embedding and the head included), per step and per layer
 *   outside matmul     the share of the step's kernel time spent in kernels other than matmuls
 *                      (tf.profile kernelTimeMs; wall time outside kernels is not in it); fused: the
 *                      share of the step's wall time outside its matmul calls
 * Run as: npm run bench -- decode [--backend wasm|cpu|webgpu] [--shapes agent,smollm2-135m]
 *         [--rows 24] [--context 64] [--steps 8] [--layers N]
 * Each shape runs in a child process (a clean backend, its own memory).
 */
import { fileURLToPath } from 'node:url';
import os from 'node:os';
import * as tf from '@tensorflow/tfjs-core';
import { describeBackend, initBackend, type BackendName } from '../src/core/engine/backend.ts';
import { installNodeWebGPU } from '../src/core/engine/webgpu-node.ts';
import type { ModelConfig } from '../src/core/engine/model/config.ts';
import { FusedDecoder, fusedDecodeRefusal } from '../src/core/engine/model/decode-wasm.ts';
import { GpuDecoder, gpuDecodeRefusal } from '../src/core/engine/model/decode-webgpu.ts';
import { CausalLM, disposeCache, type KVCache } from '../src/core/engine/model/llama.ts';
import { loadModel } from '../src/core/engine/model/load.ts';
import { folderSource } from '../src/core/engine/model/sources.ts';
import { SHAPES, benchConfig, randomWeights, shapeNamed } from './engine.ts';
import { timeMatmul } from './update.ts';
import { fmt, runAsChild, runInChild } from './child.ts';

export interface DecodeOptions { backend: BackendName; shapes: string[]; rows: number; context: number; steps: number; layers?: number }

export interface DecodeResult {
  shape: string;
  path?: 'plain' | 'fused';
  backend: string;
  config?: { layers: number; hidden: number; vocab: number };
  stepMs?: number;
  flops?: number;
  bytes?: number;
  boundMs?: number;
  kernels?: number;
  kernelsPerLayer?: number;
  /** webgpu: compute dispatches of one plain step. */
  dispatches?: number;
  outsideMatmul?: number;
  skipped?: string;
}

/** Analytic FLOPs and weight bytes of one decode step. Example: SmolLM2-135M, 24 rows, 64 cached -> ~6.5 GFLOP, ~540 MB. */
export function decodeStepCost(c: ModelConfig, rows: number, cached: number): { flops: number; bytes: number } {
  const d = c.hiddenSize;
  const q = c.numHeads * c.headDim;
  const kv = c.numKvHeads * c.headDim;
  const layer = d * q + 2 * d * kv + q * d + 3 * d * c.intermediateSize;
  const weights = c.numLayers * layer + c.vocabSize * d;
  return { flops: 2 * rows * weights + 4 * rows * c.numLayers * q * (cached + 1), bytes: 4 * weights };
}

const MATMUL = new Set(['MatMul', 'BatchMatMul', '_FusedMatMul']);

async function openShape(shape: string, layers?: number): Promise<CausalLM> {
  if (shape === 'agent') return (await loadModel(folderSource(fileURLToPath(new URL('../models/agent', import.meta.url))))).model;
  const own = SHAPES[shapeNamed(shape, 'decode')].config.num_hidden_layers as number;
  const config = benchConfig(layers ?? own, shape);
  return new CausalLM(config, randomWeights(config));
}

/** One step: a token per row through the cache (which it replaces), then the greedy pick (what generate does). */
async function step(model: CausalLM, tokens: number[], cache: KVCache): Promise<{ next: number[]; cache: KVCache }> {
  const out = model.forward(tokens.map((t) => [t]), { cache });
  const picked = tf.tidy(() => tf.argMax(tf.reshape(out.logits, [tokens.length, -1]), 1));
  out.logits.dispose();
  const next = await picked.data(); // async: webgpu in Node cannot read synchronously
  picked.dispose();
  return { next: Array.from(next), cache: out.cache! };
}

/** Compute dispatches recorded on the webgpu backend's device while `fn` runs (the pass encoder's prototype wrapped). */
async function countDispatches(fn: () => Promise<void>): Promise<number> {
  const device = (tf.backend() as unknown as { device: GPUDevice }).device;
  const pass = device.createCommandEncoder().beginComputePass();
  const proto = Object.getPrototypeOf(pass) as { dispatchWorkgroups: (...a: number[]) => void };
  pass.end();
  const original = proto.dispatchWorkgroups;
  let n = 0;
  proto.dispatchWorkgroups = function (this: unknown, ...a: number[]) {
    n++;
    return original.apply(this, a);
  };
  try {
    await fn();
  } finally {
    proto.dispatchWorkgroups = original;
  }
  return n;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Greedy picks of logits [rows * V]. */
function argmaxRows(logits: ArrayLike<number>, rows: number, vocab: number): number[] {
  return Array.from({ length: rows }, (_, r) => {
    let best = 0;
    for (let j = 1; j < vocab; j++) if (logits[r * vocab + j] > logits[r * vocab + best]) best = j;
    return best;
  });
}

/**
 * The fused step from the same prefill (wasm: decode-wasm.ts; webgpu: decode-webgpu.ts): median step ms,
 * calls per step (webgpu: its dispatches), and on wasm the share of wall time outside matmuls.
 */
async function measureFused(model: CausalLM, ids: number[][], steps: number): Promise<{ stepMs: number; calls: number; outside?: number; dispatches?: number } | { refused: string }> {
  const first = model.forward(ids, { useCache: true, lastOnly: true });
  const gpu = tf.getBackend() === 'webgpu';
  const dec = gpu ? await GpuDecoder.open(model, first.cache!, null, steps + 2) : FusedDecoder.open(model, first.cache!, null, steps + 2);
  disposeCache(first.cache!);
  first.logits.dispose();
  if (!dec) return { refused: `the fused step declined: ${(gpu ? gpuDecodeRefusal(model) : fusedDecodeRefusal(model)) ?? 'unknown'}` };
  const V = model.config.vocabSize;
  let tokens = ids.map((row) => row[row.length - 1]);
  const times: number[] = [];
  const matmulMs: number[] = [];
  let calls = 0;
  for (let s = 0; s <= steps; s++) {
    const c0 = dec instanceof FusedDecoder ? dec.calls : dec.dispatches;
    const m0 = dec instanceof FusedDecoder ? dec.matmulMs : 0;
    const t0 = performance.now();
    tokens = argmaxRows(await dec.step(tokens), tokens.length, V);
    if (s > 0) {
      times.push(performance.now() - t0);
      matmulMs.push(dec instanceof FusedDecoder ? dec.matmulMs - m0 : 0);
    }
    calls = (dec instanceof FusedDecoder ? dec.calls : dec.dispatches) - c0;
  }
  dec.dispose();
  const wall = times.reduce((a, b) => a + b, 0);
  if (!(dec instanceof FusedDecoder)) return { stepMs: median(times), calls, dispatches: calls };
  return { stepMs: median(times), calls, outside: 1 - matmulMs.reduce((a, b) => a + b, 0) / wall };
}

export async function measureDecode(backend: string, o: DecodeOptions & { shape: string }): Promise<DecodeResult[]> {
  if (backend === 'webgpu') await installNodeWebGPU();
  const info = await initBackend({ force: backend as BackendName });
  const model = await openShape(o.shape, o.layers);
  const c = model.config;
  const ids = Array.from({ length: o.rows }, (_, r) => Array.from({ length: o.context }, (_, t) => (r * 7919 + t * 104729) % c.vocabSize));
  const first = model.forward(ids, { useCache: true, lastOnly: true });
  let cache = first.cache!;
  first.logits.dispose();
  let tokens = ids.map((row) => row[row.length - 1]);
  const times: number[] = [];
  for (let s = 0; s <= o.steps; s++) {
    const t0 = performance.now();
    const r = await step(model, tokens, cache);
    if (s > 0) times.push(performance.now() - t0); // the first step is the warm-up
    ({ next: tokens, cache } = r); // the step disposed the old cache
  }
  let probe: { next: number[]; cache: KVCache } | null = null;
  const profile = await tf.profile(async () => {
    probe = await step(model, tokens, cache);
  });
  const kernelMs = await Promise.all(profile.kernels.map(async (k) => Number(await k.kernelTimeMs) || 0));
  const total = kernelMs.reduce((a, b) => a + b, 0);
  const outside = kernelMs.reduce((a, b, i) => a + (MATMUL.has(profile.kernels[i].name) ? 0 : b), 0);
  let probed = probe as { next: number[]; cache: KVCache } | null;
  let dispatches: number | undefined;
  if (tf.getBackend() === 'webgpu' && probed) {
    const p = probed;
    dispatches = await countDispatches(async () => {
      probed = await step(model, p.next, p.cache);
    });
  }
  disposeCache(probed?.cache ?? cache);
  const fused = await measureFused(model, ids, o.steps);
  const cost = decodeStepCost(c, o.rows, o.context + o.steps);
  const matmulFlops = (await timeMatmul(o.rows, c.hiddenSize, c.intermediateSize, 5)) * 1e9;
  const headBytesPerS = ((await timeMatmul(o.rows, c.hiddenSize, c.vocabSize, 3)) * 1e9 / (2 * o.rows * c.hiddenSize * c.vocabSize)) * 4 * c.hiddenSize * c.vocabSize;
  const common = {
    shape: o.shape, backend: describeBackend(info), config: { layers: c.numLayers, hidden: c.hiddenSize, vocab: c.vocabSize },
    flops: cost.flops, bytes: cost.bytes, boundMs: 1000 * Math.max(cost.flops / matmulFlops, cost.bytes / headBytesPerS),
  };
  const plain: DecodeResult = {
    ...common, path: 'plain', stepMs: median(times), kernels: profile.kernels.length, kernelsPerLayer: profile.kernels.length / c.numLayers,
    outsideMatmul: total > 0 ? outside / total : undefined, dispatches,
  };
  if ('refused' in fused) return [plain, { shape: o.shape, backend: common.backend, path: 'fused', skipped: fused.refused }];
  return [plain, { ...common, path: 'fused', stepMs: fused.stepMs, kernels: fused.calls, kernelsPerLayer: fused.calls / c.numLayers, outsideMatmul: fused.outside, dispatches: fused.dispatches }];
}

export function formatDecode(results: DecodeResult[], o: DecodeOptions): string {
  const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
  const head = `| shape | path | layers | step ms | GFLOP / step | MB / step | bound ms | bound / step | kernels / step | kernels / layer | outside matmul | dispatches / step (/ layer) |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|`;
  const rows = results.map((r) => r.skipped
    ? `| ${r.shape} | ${r.path ?? ''} | skipped: ${r.skipped} | | | | | | | | | |`
    : `| ${r.shape} | ${r.path} | ${r.config?.layers} | ${fmt(r.stepMs)} | ${fmt(r.flops! / 1e9)} | ${fmt(r.bytes! / 1e6)} | ${fmt(r.boundMs)} | ${fmt(r.boundMs! / r.stepMs!, 2)} | ${r.kernels} | ${fmt(r.kernelsPerLayer, 1)} | ${r.outsideMatmul === undefined ? 'n/a' : `${(100 * r.outsideMatmul).toFixed(0)} %`} | ${r.dispatches === undefined ? 'n/a' : `${r.dispatches} (${fmt(r.dispatches / r.config!.layers, 1)})`} |`);
  return `Decode step, ${o.rows} rows after ${o.context} prompt tokens, median of ${o.steps} steps; ${results[0]?.backend ?? o.backend}; ${cpu}, ${os.cpus().length} cores; ${new Date().toISOString().slice(0, 10)}\n"bound / step": the step's analytic bound (this process's own matmul rate and weight-read rate) over its time; 1.0 = at the bound.\n\n${head}\n${rows.join('\n')}\n`;
}

export function parseDecodeArgs(argv: string[]): DecodeOptions {
  const o: DecodeOptions = { backend: 'wasm', shapes: ['agent', 'smollm2-135m'], rows: 24, context: 64, steps: 8 };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, v] = [argv[i], argv[i + 1]];
    if (v === undefined) throw new Error(`bench decode: ${flag} needs a value`);
    if (flag === '--backend') o.backend = v as BackendName;
    else if (flag === '--shapes') o.shapes = v.split(',');
    else if (['--rows', '--context', '--steps', '--layers'].includes(flag)) {
      const n = Number(v);
      if (!Number.isInteger(n) || n < 1) throw new Error(`bench decode: ${flag} must be a whole number of 1 or more, got "${v}"`);
      (o as unknown as Record<string, number>)[flag.slice(2)] = n;
    } else throw new Error(`bench decode: unknown flag ${flag} (--backend, --shapes, --rows, --context, --steps, --layers)`);
  }
  return o;
}

export async function main(argv: string[]): Promise<void> {
  const o = parseDecodeArgs(argv);
  const results: DecodeResult[] = [];
  for (const shape of o.shapes) {
    process.stderr.write(`[bench decode] ${shape} on ${o.backend}...\n`);
    results.push(...await runInChild<DecodeResult[]>(import.meta.url, o.backend, { ...o, shape }, (why) => [{ shape, backend: o.backend, skipped: why }]));
  }
  process.stdout.write(formatDecode(results, o));
}

runAsChild(import.meta.url, measureDecode);
