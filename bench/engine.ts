/**
 * Engine benchmark: how fast the decoder runs a SmolLM2-135M-shaped model (random weights) on each
 * tfjs backend, and how much memory it takes.
 *
 * For: prefill tokens/s, decode tokens/s with the KV cache and with full recomputation, at a few
 * context lengths, plus peak memory; one child process per backend so memory figures are per
 * backend and backends do not interfere. Prints a markdown table.
 * Not for: checking numbers (test/unit/model), sampling quality, or real checkpoints (random
 * weights have the same cost as trained ones).
 *
 * What one context L measures (all through `generate`, greedy, so sampling cost is included):
 *   prefill   = step 0 of a KV-cache generation: one forward over the L prompt tokens   -> L / time
 *   decode KV = the next N steps of that generation, one token each against the cache  -> N / time
 *   recompute = M steps of a generation without cache: step j reruns all L + j tokens  -> M / time
 * Before timing, one short generation of each kind warms the backend up (and, on webgpu, one per
 * context, since shaders are compiled per shape). The tfjs peak comes from an extra, untimed,
 * profiled forward over the largest context.
 *
 * Example: npm run bench -- engine --backends wasm --contexts 16,128 --layers 4
 */
import os from 'node:os';
import * as tf from '@tensorflow/tfjs-core';
import { type BackendInfo, type BackendName, describeBackend, initBackend } from '../src/core/engine/backend.ts';
import { type ModelConfig, expectedWeights, parameterCount, parseConfig } from '../src/core/engine/model/config.ts';
import { generate } from '../src/core/engine/model/generate.ts';
import { CausalLM, disposeCache } from '../src/core/engine/model/llama.ts';
import { Rng } from '../src/core/stats/rng.ts';
import { SHAPES, shapeNamed as shapeNamedIn } from '../src/core/engine/model/shapes.ts';
import { fmt, runAsChild, runInChild } from './child.ts';

export { QWEN25_05B_CONFIG, SHAPES, SMOLLM2_135M_CONFIG } from '../src/core/engine/model/shapes.ts';

/** The shape named by `--shape`, or a clear error listing the known ones. */
export function shapeNamed(name: string, bench: string): string {
  return shapeNamedIn(name, `bench ${bench}`);
}

const ALL_BACKENDS: BackendName[] = ['wasm', 'cpu', 'webgpu'];
const MB = 1024 * 1024;

export interface EngineBenchOptions {
  backends: BackendName[];
  /** Run webgpu even on a software adapter (SwiftShader): set when webgpu is named explicitly. */
  forceWebgpu: boolean;
  contexts: number[];
  /** KV-cache decode steps per context; default per backend (see defaultSteps). */
  decodeSteps?: number;
  /** Recompute decode steps per context; default per backend (see defaultSteps). */
  recomputeSteps?: number;
  layers: number;
  quick: boolean;
  /** Measure the tfjs peak with an extra profiled forward at the largest context. */
  tfPeak: boolean;
  /** Model shape (SHAPES key); default smollm2-135m. */
  shape?: string;
}

export interface ContextResult {
  context: number;
  prefillMs: number;
  prefillTokPerSec: number;
  cacheSteps: number;
  cacheTokPerSec: number;
  recomputeSteps: number;
  recomputeTokPerSec: number;
}

export interface BackendResult {
  backend: BackendName;
  /** Why it was not measured (no adapter, software adapter, crash). */
  skipped?: string;
  description?: string;
  weightsMB?: number;
  initMs?: number;
  contexts?: ContextResult[];
  maxRssMB?: number;
  /** tfjs numBytes peak during the profiled forward (weights included, reshape views excluded), and at which context. */
  tfPeakMB?: number;
  tfPeakContext?: number;
  /** Tensors alive after everything but the weights was disposed (0 = no leak). */
  leakedTensors?: number;
}

/**
 * Timed steps at one context. On cpu (pure JS) a 512-token forward takes minutes, so it times fewer
 * steps at long contexts to keep the whole cpu run within ~15-25 minutes on a loaded 2-core machine.
 */
export function defaultSteps(backend: BackendName, context: number, quick: boolean): { cache: number; recompute: number } {
  if (quick) return { cache: 2, recompute: 1 };
  if (backend === 'cpu') return { cache: context >= 512 ? 4 : 8, recompute: context >= 512 ? 1 : 2 };
  return { cache: 8, recompute: context >= 512 ? 2 : 4 };
}

/** Parses `--backends wasm,cpu --contexts 16,128,512 --decode-steps 8 --layers 2 --quick ...`. */
export function parseEngineArgs(argv: string[]): EngineBenchOptions {
  const opts: EngineBenchOptions = { backends: [...ALL_BACKENDS], forceWebgpu: false, contexts: [16, 128, 512], layers: 30, quick: false, tfPeak: true };
  let contextsGiven = false;
  const value = (i: number, flag: string) => {
    const v = argv[i + 1];
    if (v === undefined || v.startsWith('--')) throw new Error(`bench engine: ${flag} needs a value`);
    return v;
  };
  const int = (s: string, flag: string) => {
    const n = Number(s);
    if (!Number.isInteger(n) || n <= 0) throw new Error(`bench engine: ${flag} must be a positive integer, got "${s}"`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    if (flag === '--backends' || flag === '--backend') {
      const list = value(i++, flag).split(',').map((s) => s.trim()) as BackendName[];
      for (const b of list) {
        if (!ALL_BACKENDS.includes(b)) throw new Error(`bench engine: unknown backend "${b}" in ${flag}; use ${ALL_BACKENDS.join(', ')}`);
      }
      opts.backends = list;
      opts.forceWebgpu = list.includes('webgpu');
    } else if (flag === '--contexts') {
      opts.contexts = value(i++, flag).split(',').map((s) => int(s, flag));
      contextsGiven = true;
    } else if (flag === '--decode-steps') opts.decodeSteps = int(value(i++, flag), flag);
    else if (flag === '--recompute-steps') opts.recomputeSteps = int(value(i++, flag), flag);
    else if (flag === '--layers') opts.layers = int(value(i++, flag), flag);
    else if (flag === '--quick') opts.quick = true;
    else if (flag === '--no-tf-peak') opts.tfPeak = false;
    else if (flag === '--shape') opts.shape = shapeNamed(value(i++, flag), 'engine');
    else throw new Error(`bench engine: unknown option "${flag}". Options: --backends wasm,cpu[,webgpu] --contexts 16,128,512 ` +
      '--decode-steps N --recompute-steps N --layers N --shape smollm2-135m|qwen2.5-0.5b --quick --no-tf-peak');
  }
  if (opts.quick) {
    if (!contextsGiven) opts.contexts = [8, 32];
    if (!argv.includes('--layers')) opts.layers = 2;
  }
  return opts;
}

/** A real shape (SHAPES key, default SmolLM2-135M) with `layers` layers. Example: benchConfig(2).hiddenSize === 576. */
export function benchConfig(layers: number, shape = 'smollm2-135m'): ModelConfig {
  const s = SHAPES[shapeNamed(shape, 'config')];
  return parseConfig({ ...s.config, num_hidden_layers: layers }, `bench ${s.label} config`);
}

/** Seeded random weights N(0, 0.02) (norm weights 1), made by tfjs directly on the backend. */
export function randomWeights(config: ModelConfig, seed = 1): Map<string, tf.Tensor> {
  const weights = new Map<string, tf.Tensor>();
  let n = 0;
  for (const [name, shape] of expectedWeights(config)) {
    const isNorm = name.endsWith('norm.weight');
    weights.set(name, isNorm ? tf.ones(shape) : tf.randomNormal(shape, 0, 0.02, 'float32', seed + n++));
  }
  return weights;
}

/** Kernels whose output shares its input's data: tfjs' numBytes counts them again, memory does not. */
const VIEW_KERNELS = new Set(['Reshape', 'ExpandDims', 'Squeeze', 'Identity']);

/**
 * The tfjs numBytes peak of a profiled run minus the bytes of views made so far. Inside one
 * tf.tidy nothing is freed until the end, so at the peak every view is still alive.
 * Example: 100 MB of real tensors plus a reshape of 40 MB of them -> numBytes 140 MB, this 100 MB.
 */
export function peakWithoutViews(kernels: { name: string; bytesAdded: number; totalBytesSnapshot: number }[]): number {
  let viewBytes = 0;
  let peak = 0;
  for (const k of kernels) {
    if (VIEW_KERNELS.has(k.name)) viewBytes += Math.max(0, k.bytesAdded);
    peak = Math.max(peak, k.totalBytesSnapshot - viewBytes);
  }
  return peak;
}

function isSoftwareAdapter(info: BackendInfo): boolean {
  const a = info.adapter;
  if (!a) return false;
  const text = `${a.vendor} ${a.architecture} ${a.description ?? ''}`;
  return a.isFallbackAdapter === true || /swiftshader|llvmpipe|lavapipe|software/i.test(text);
}

const log = (msg: string) => process.stderr.write(`[bench engine ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

/** Runs in the child process: measures one backend and returns its result. */
export async function measureBackend(backend: BackendName, opts: EngineBenchOptions): Promise<BackendResult> {
  let info: BackendInfo;
  try {
    info = await initBackend({ force: backend });
  } catch (err) {
    return { backend, skipped: `not available: ${(err as Error).message}` };
  }
  const description = describeBackend(info);
  if (backend === 'webgpu' && isSoftwareAdapter(info) && !opts.forceWebgpu) {
    return { backend, description, skipped: 'software adapter (SwiftShader-like): for correctness only, not speed; pass --backends webgpu to time it anyway' };
  }
  const config = benchConfig(opts.layers, opts.shape);
  log(`${backend}: ${description}; making ${(parameterCount(config) / 1e6).toFixed(1)}M random weights`);
  const t0 = performance.now();
  const model = new CausalLM(config, randomWeights(config));
  const weightBytes = tf.memory().numBytes;
  const baseTensors = tf.memory().numTensors;
  const initMs = performance.now() - t0;

  const rng = new Rng(7);
  const prompt = (n: number) => Array.from({ length: n }, () => rng.int(0, config.vocabSize - 1));
  /** Timestamps of each generated token (onToken fires after the step's logits were read and sampled). */
  const timedGenerate = async (ids: number[], steps: number, useCache: boolean) => {
    const stamps: number[] = [];
    const start = performance.now();
    await generate(model, [ids], { maxNewTokens: steps, temperature: 0, useCache, onToken: () => stamps.push(performance.now()) });
    return { start, stamps };
  };
  const warmUp = async (n: number) => {
    await timedGenerate(prompt(n), 2, true);
    await timedGenerate(prompt(n), 1, false);
  };

  log(`${backend}: weights ready in ${(initMs / 1000).toFixed(1)} s; warming up`);
  await warmUp(Math.min(16, ...opts.contexts));
  const contexts: ContextResult[] = [];
  for (const context of opts.contexts) {
    const d = defaultSteps(backend, context, opts.quick);
    const cacheSteps = opts.decodeSteps ?? d.cache;
    const recomputeSteps = opts.recomputeSteps ?? d.recompute;
    if (backend === 'webgpu') await warmUp(context);
    const cached = await timedGenerate(prompt(context), 1 + cacheSteps, true);
    const prefillMs = cached.stamps[0] - cached.start;
    const cacheMs = cached.stamps[cacheSteps] - cached.stamps[0];
    const recomputed = await timedGenerate(prompt(context), recomputeSteps, false);
    const recomputeMs = recomputed.stamps[recomputeSteps - 1] - recomputed.start;
    const r: ContextResult = {
      context, prefillMs, prefillTokPerSec: (context / prefillMs) * 1000,
      cacheSteps, cacheTokPerSec: (cacheSteps / cacheMs) * 1000,
      recomputeSteps, recomputeTokPerSec: (recomputeSteps / recomputeMs) * 1000,
    };
    log(`${backend} ctx ${context}: prefill ${r.prefillTokPerSec.toFixed(1)} tok/s, KV decode ${r.cacheTokPerSec.toFixed(2)} tok/s, ` +
      `recompute ${r.recomputeTokPerSec.toFixed(3)} tok/s`);
    contexts.push(r);
  }

  let tfPeakMB: number | undefined;
  let tfPeakContext: number | undefined;
  if (opts.tfPeak) {
    tfPeakContext = Math.max(...opts.contexts);
    log(`${backend}: profiled forward at ctx ${tfPeakContext} for the tfjs memory peak`);
    const ids = prompt(tfPeakContext);
    const profile = await tf.profile(async () => {
      const out = model.forward([ids], { useCache: true, lastOnly: true });
      await out.logits.data();
      out.logits.dispose();
      if (out.cache) disposeCache(out.cache);
    });
    tfPeakMB = peakWithoutViews(profile.kernels) / MB;
  }
  const leakedTensors = tf.memory().numTensors - baseTensors;
  model.dispose();
  return {
    backend, description, weightsMB: weightBytes / MB, initMs, contexts,
    maxRssMB: process.resourceUsage().maxRSS / 1024, tfPeakMB, tfPeakContext, leakedTensors,
  };
}

function runWorker(backend: BackendName, opts: EngineBenchOptions): Promise<BackendResult> {
  return runInChild<BackendResult>(import.meta.url, backend, opts, (why) => ({ backend, skipped: why }));
}


/** The markdown report for a finished run. */
export function formatReport(results: BackendResult[], opts: EngineBenchOptions, date = new Date()): string {
  const config = benchConfig(opts.layers, opts.shape);
  const cpus = os.cpus();
  const maxCtx = Math.max(...opts.contexts);
  const out: string[] = [];
  out.push(`# Engine benchmark${opts.quick ? ' (quick smoke run)' : ''}`, '');
  out.push(`- date: ${date.toISOString()}`);
  out.push(`- machine: ${cpus.length} cores (${cpus[0]?.model.trim() ?? 'unknown cpu'}), ${(os.totalmem() / 1024 ** 3).toFixed(0)} GiB RAM, ` +
    `Node ${process.version}, tfjs ${tf.version_core}`);
  out.push(`- model: ${SHAPES[opts.shape ?? 'smollm2-135m'].label} shape, random weights: hidden ${config.hiddenSize}, intermediate ${config.intermediateSize}, ` +
    `${config.numLayers} layers, ${config.numHeads} heads / ${config.numKvHeads} KV heads, vocab ${config.vocabSize}, tied embeddings, ` +
    `${(parameterCount(config) / 1e6).toFixed(1)}M parameters, float32, batch 1`);
  for (const r of results) out.push(`- ${r.description ?? r.backend}${r.skipped ? ` **skipped**: ${r.skipped}` : ''}`);
  out.push('', '| backend | context | prefill tok/s | decode tok/s (KV cache) | decode tok/s (recompute) | KV / recompute | timed steps (KV / recompute) |');
  out.push('|---|---:|---:|---:|---:|---:|---:|');
  for (const r of results) {
    for (const c of r.contexts ?? []) {
      out.push(`| ${r.backend} | ${c.context} | ${fmt(c.prefillTokPerSec)} | ${fmt(c.cacheTokPerSec)} | ${fmt(c.recomputeTokPerSec)} | ` +
        `${fmt(c.cacheTokPerSec / c.recomputeTokPerSec, 1)}x | ${c.cacheSteps} / ${c.recomputeSteps} |`);
    }
  }
  out.push('', `| backend | weights MB | peak RSS MB (process) | tfjs peak MB (forward at ctx ${maxCtx}, views excluded) | tensors leaked |`);
  out.push('|---|---:|---:|---:|---:|');
  for (const r of results) {
    if (r.skipped) continue;
    out.push(`| ${r.backend} | ${fmt(r.weightsMB, 0)} | ${fmt(r.maxRssMB, 0)} | ${fmt(r.tfPeakMB, 0)} | ${r.leakedTensors ?? 'n/a'} |`);
  }
  out.push('', `KV-cache decode speed / recompute decode speed at context ${maxCtx} (target >= 10x):`);
  for (const r of results) {
    const c = r.contexts?.find((x) => x.context === maxCtx);
    if (!c) continue;
    const ratio = c.cacheTokPerSec / c.recomputeTokPerSec;
    out.push(`- ${r.backend}: ${fmt(ratio, 1)}x (${ratio >= 10 ? 'meets' : 'BELOW'} the target)`);
  }
  out.push('', 'Decode figures include greedy sampling over the vocabulary; recompute step j reruns all context + j tokens. ' +
    'Other processes share the cores: compare ratios measured in one run, not absolute figures across runs.');
  return out.join('\n') + '\n';
}

/** Measures every requested backend, each in its own child process, and returns the report. */
export async function runEngineBenchmark(opts: EngineBenchOptions): Promise<string> {
  const results: BackendResult[] = [];
  for (const backend of opts.backends) {
    log(`starting ${backend} worker`);
    results.push(await runWorker(backend, opts));
  }
  return formatReport(results, opts);
}

/** Entry point of `npm run bench -- engine [options]`. */
export async function main(argv: string[]): Promise<void> {
  process.stdout.write(await runEngineBenchmark(parseEngineArgs(argv)));
}

// Child process mode: node --import tsx bench/engine.ts --worker <backend> <options json>
runAsChild<EngineBenchOptions>(import.meta.url, (backend, opts) => measureBackend(backend as BackendName, opts));
