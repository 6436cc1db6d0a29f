/**
 * "Measure this machine": decode tokens/s and update tokens/s at a real model shape on the current
 * backend, each as a fraction of what that backend itself achieves on the same kind of work.
 *
 * For: a figure anyone can run and report (`npm run bench -- machine`, or `mappa bench`), and the
 * GPU script (bench/gpu.sh), which runs it on webgpu at SmolLM2-135M's and Qwen2.5-0.5B's shapes.
 * It reuses bench/engine.ts (measureBackend: KV-cache decode through `generate`) and
 * bench/update.ts (measureUpdate: one `policyUpdate` step), one child process per shape.
 * Not for: the full tables of those two benchmarks (contexts, recompute, threads, the fused
 * log-prob kernel) or memory (bench/memory.ts).
 *
 * What the columns mean (random weights, float32, batch 1 decode):
 *   decode tok/s        KV-cache decode steps after a prompt of `context` tokens (engine.ts)
 *   decode GB/s         weights read per token x tok/s: every layer's weights, the final norm and
 *                       the [vocab, hidden] output projection, 4 bytes each (the embedding lookup
 *                       reads one row, not counted; nor the KV cache, small at these contexts)
 *   decode / bandwidth  decode GB/s over the memory bandwidth given by --bandwidth-gbs (the
 *                       decode bound: each token must read every weight once)
 *   decode / matvec     decode GB/s over the GB/s of one [1, hidden] x [hidden, vocab] product on
 *                       this backend (the backend's own rate on decode's kind of work)
 *   update tok/s        tokens of the batch / step time (update.ts)
 *   update / matmul     the step's analytic FLOP/s (update.ts updateStepFlops) over a plain
 *                       [tokens, hidden] x [hidden, intermediate] matmul's FLOP/s in the same process
 *
 * Example: npm run bench -- machine --shapes smollm2-135m --backend wasm --quick
 */
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import * as tf from '@tensorflow/tfjs-core';
import { type BackendName, describeBackend, initBackend } from '../src/core/engine/backend.ts';
import { installNodeWebGPU } from '../src/core/engine/webgpu-node.ts';
import { type ModelConfig, parameterCount } from '../src/core/engine/model/config.ts';
import { type BackendResult, type EngineBenchOptions, SHAPES, benchConfig, measureBackend, shapeNamed } from './engine.ts';
import { type UpdateBenchOptions, type UpdateResult, measureUpdate, updateStepFlops } from './update.ts';
import { fmt, runAsChild, runInChild } from './child.ts';

export interface MachineBenchOptions {
  /** Backend to force; undefined = the automatic choice (src/core/engine/backend.ts). */
  backend?: BackendName;
  shapes: string[];
  /** Layers per shape; undefined = the shape's own count. */
  layers?: number;
  context: number;
  decodeSteps: number;
  samples: number;
  promptLen: number;
  actionLen: number;
  steps: number;
  /** Memory bandwidth in GB/s for the decode bound; undefined = not given (column n/a). */
  bandwidthGBs?: number;
  /** Where the bandwidth figure came from, for the report ("--bandwidth-gbs", "nvidia-smi: NVIDIA H200", ...). */
  bandwidthSource?: string;
  /** Skip the shapes left once this many seconds have passed (a whole run must fit a time limit). */
  budgetSeconds?: number;
  quick: boolean;
}

/** Parses `--backend webgpu --shapes smollm2-135m,qwen2.5-0.5b --layers N --context 128 --decode-steps 16 --samples 4 --prompt 64 --action 64 --steps 2 --bandwidth-gbs 4800 --budget-s 420 --quick`. */
export function parseMachineArgs(argv: string[]): MachineBenchOptions {
  const o: MachineBenchOptions = { shapes: ['smollm2-135m'], context: 128, decodeSteps: 16, samples: 4, promptLen: 64, actionLen: 64, steps: 2, quick: false };
  const given = new Set<string>();
  const value = (i: number, flag: string) => {
    const v = argv[i + 1];
    if (v === undefined || v.startsWith('--')) throw new Error(`bench machine: ${flag} needs a value`);
    return v;
  };
  const num = (s: string, flag: string, whole = true) => {
    const n = Number(s);
    if (!Number.isFinite(n) || n <= 0 || (whole && !Number.isInteger(n))) throw new Error(`bench machine: ${flag} must be a positive ${whole ? 'integer' : 'number'}, got "${s}"`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    given.add(flag);
    if (flag === '--backend') {
      const b = value(i++, flag);
      if (b !== 'auto') {
        if (!['wasm', 'cpu', 'webgpu'].includes(b)) throw new Error(`bench machine: unknown backend "${b}"; use auto, wasm, cpu or webgpu`);
        o.backend = b as BackendName;
      }
    } else if (flag === '--shapes' || flag === '--shape') o.shapes = value(i++, flag).split(',').map((s) => shapeNamed(s.trim(), 'machine'));
    else if (flag === '--layers') o.layers = num(value(i++, flag), flag);
    else if (flag === '--context') o.context = num(value(i++, flag), flag);
    else if (flag === '--decode-steps') o.decodeSteps = num(value(i++, flag), flag);
    else if (flag === '--samples') o.samples = num(value(i++, flag), flag);
    else if (flag === '--prompt') o.promptLen = num(value(i++, flag), flag);
    else if (flag === '--action') o.actionLen = num(value(i++, flag), flag);
    else if (flag === '--steps') o.steps = num(value(i++, flag), flag);
    else if (flag === '--bandwidth-gbs') {
      o.bandwidthGBs = num(value(i++, flag), flag, false);
      o.bandwidthSource ??= '--bandwidth-gbs';
    } else if (flag === '--bandwidth-source') o.bandwidthSource = value(i++, flag);
    else if (flag === '--budget-s') o.budgetSeconds = num(value(i++, flag), flag);
    else if (flag === '--quick') o.quick = true;
    else throw new Error(`bench machine: unknown option "${flag}". Options: --backend auto|wasm|cpu|webgpu --shapes ${Object.keys(SHAPES).join(',')} ` +
      '--layers N --context N --decode-steps N --samples N --prompt N --action N --steps N --bandwidth-gbs X --budget-s N --quick');
  }
  if (o.quick) {
    if (!given.has('--layers')) o.layers = 2;
    if (!given.has('--context')) o.context = 16;
    if (!given.has('--decode-steps')) o.decodeSteps = 4;
    if (!given.has('--samples')) o.samples = 2;
    if (!given.has('--prompt')) o.promptLen = 8;
    if (!given.has('--action')) o.actionLen = 8;
    if (!given.has('--steps')) o.steps = 1;
  }
  return o;
}

/**
 * Bytes of weights one decode step reads: every layer's weights, the final norm and the output
 * projection [vocab, hidden] (the tied embedding, or lm_head), float32. The embedding lookup reads
 * one row (not counted). Example: SmolLM2-135M (30 layers) -> 134,515,008 parameters' worth = 538,060,032 B.
 */
export function decodeBytesPerToken(c: ModelConfig): number {
  let params = parameterCount(c);
  if (!c.tieWordEmbeddings) params -= c.vocabSize * c.hiddenSize; // the untied embedding is only looked up
  return params * 4;
}

export interface ShapeResult {
  shape: string;
  skipped?: string;
  description?: string;
  backend?: BackendName;
  layers?: number;
  /** GB/s of one [1, hidden] x [hidden, vocab] product (median). */
  matvecGBs?: number;
  engine?: BackendResult;
  update?: UpdateResult;
}

const log = (msg: string) => process.stderr.write(`[bench machine ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

/** GB/s of [1, k] x [k, n] (weights read once per product), median of `runs` after a warm-up. */
async function timeMatvec(k: number, n: number, runs: number): Promise<number> {
  const [x, w] = tf.tidy(() => [tf.randomNormal([1, k], 0, 1, 'float32', 1), tf.randomNormal([k, n], 0, 0.02, 'float32', 2)]);
  const times: number[] = [];
  for (let i = 0; i <= runs; i++) {
    const t0 = performance.now();
    const y = tf.matMul(x, w);
    await y.data();
    y.dispose();
    if (i > 0) times.push((performance.now() - t0) / 1000);
  }
  tf.dispose([x, w]);
  times.sort((a, b) => a - b);
  return (k * n * 4) / times[Math.floor(times.length / 2)] / 1e9;
}

/** Runs in the child process: one shape on one backend (decode, then update). */
export async function measureShape(shape: string, o: MachineBenchOptions): Promise<ShapeResult> {
  let backend: BackendName;
  let description: string;
  try {
    const info = await initBackend(o.backend ? { force: o.backend } : {});
    backend = info.name;
    description = describeBackend(info);
  } catch (err) {
    return { shape, skipped: `backend not available: ${(err as Error).message}` };
  }
  const nLayers = o.layers ?? (SHAPES[shape].config as { num_hidden_layers: number }).num_hidden_layers;
  const config = benchConfig(nLayers, shape);
  log(`${shape}: ${description}; matrix-vector reference [1, ${config.hiddenSize}] x [${config.hiddenSize}, ${config.vocabSize}]`);
  const matvecGBs = await timeMatvec(config.hiddenSize, config.vocabSize, o.quick ? 3 : 7);
  const engineOpts: EngineBenchOptions = {
    backends: [backend], forceWebgpu: true, contexts: [o.context], decodeSteps: o.decodeSteps, recomputeSteps: 1,
    layers: nLayers, quick: o.quick, tfPeak: false, shape,
  };
  const engine = await measureBackend(backend, engineOpts);
  const updateOpts: UpdateBenchOptions = {
    backends: [backend], forceWebgpu: true, layers: nLayers, samples: o.samples, promptLen: o.promptLen, actionLen: o.actionLen, rank: 8,
    microBatch: 1, steps: o.steps, quick: o.quick, logprob: false, threads: 1, shape,
  };
  const update = await measureUpdate(backend, updateOpts);
  return { shape, description, backend, layers: nLayers, matvecGBs, engine, update };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** The markdown report: one row per shape. */
export function formatMachineReport(results: ShapeResult[], o: MachineBenchOptions, date = new Date()): string {
  const cpus = os.cpus();
  const out: string[] = [];
  out.push('# This machine: decode and update speed at real shapes', '');
  out.push(`- date: ${date.toISOString()}`);
  out.push(`- machine: ${cpus.length} cores (${cpus[0]?.model.trim() ?? 'unknown cpu'}), ${(os.totalmem() / 1024 ** 3).toFixed(0)} GiB RAM, Node ${process.version}, tfjs ${tf.version_core}`);
  out.push(`- decode: batch 1, greedy, ${o.decodeSteps} KV-cache steps after a ${o.context}-token prompt; update: policyUpdate on ${o.samples} samples x ` +
    `(${o.promptLen} + ${o.actionLen}) tokens, rank-8 LoRA on q, k, v, o, micro-batch 1, ${o.steps} timed step(s); random weights, float32`);
  out.push(`- memory bandwidth for the decode bound: ${o.bandwidthGBs ? `${o.bandwidthGBs} GB/s (${o.bandwidthSource ?? 'given'})` : 'not given (--bandwidth-gbs)'}`);
  for (const r of results) out.push(`- ${r.shape}: ${r.description ?? ''}${r.skipped ? ` **skipped**: ${r.skipped}` : ''}`);
  out.push('', '| shape | layers | backend | decode tok/s | decode GB/s (weights) | decode / bandwidth | matvec GB/s | decode / matvec | ' +
    'update tok/s | update GFLOP/s | matmul GFLOP/s | update / matmul |');
  out.push('|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const r of results) {
    if (r.skipped || !r.layers) continue;
    const c = benchConfig(r.layers, r.shape);
    const ctx = r.engine?.contexts?.[0];
    const decodeGBs = ctx ? (decodeBytesPerToken(c) * ctx.cacheTokPerSec) / 1e9 : undefined;
    const u = r.update;
    const s = u?.stepSeconds?.length ? median(u.stepSeconds) : undefined;
    const flops = updateStepFlops(c, { samples: o.samples, promptLen: o.promptLen, actionLen: o.actionLen, rank: 8 });
    const gflops = s ? flops.step / s / 1e9 : undefined;
    const pct = (x: number | undefined) => (x === undefined ? 'n/a' : `${fmt(100 * x, 1)}%`);
    out.push(`| ${SHAPES[r.shape].label} | ${r.layers} | ${r.backend} | ${fmt(ctx?.cacheTokPerSec)} | ${fmt(decodeGBs)} | ` +
      `${pct(decodeGBs && o.bandwidthGBs ? decodeGBs / o.bandwidthGBs : undefined)} | ${fmt(r.matvecGBs)} | ${pct(decodeGBs && r.matvecGBs ? decodeGBs / r.matvecGBs : undefined)} | ` +
      `${fmt(s ? flops.tokens / s : undefined)} | ${fmt(gflops)} | ${fmt(u?.matmulGflops)} | ${pct(gflops && u?.matmulGflops ? gflops / u.matmulGflops : undefined)} |`);
    for (const why of [r.engine?.skipped, u?.skipped].filter(Boolean)) out.push(`|  |  |  | skipped: ${why} | | | | | | | | |`);
  }
  out.push('', 'decode GB/s = bytes of weights read per token (bench/machine.ts decodeBytesPerToken) x decode tok/s; ' +
    'decode / matvec = that over the GB/s of a [1, hidden] x [hidden, vocab] product on the same backend; ' +
    'update / matmul = the step\'s analytic FLOP/s over a plain [tokens, hidden] x [hidden, intermediate] matmul (bench/update.ts). ' +
    'On shared machines compare figures from one run.');
  return out.join('\n') + '\n';
}

export async function runMachineBenchmark(o: MachineBenchOptions): Promise<string> {
  const started = performance.now();
  const results: ShapeResult[] = [];
  for (const shape of o.shapes) {
    const elapsed = (performance.now() - started) / 1000;
    if (o.budgetSeconds !== undefined && elapsed > o.budgetSeconds) {
      results.push({ shape, skipped: `time budget of ${o.budgetSeconds} s spent (${elapsed.toFixed(0)} s so far)` });
      continue;
    }
    log(`starting ${shape} worker`);
    results.push(await runInChild<ShapeResult>(import.meta.url, shape, o, (why) => ({ shape, skipped: why })));
  }
  return formatMachineReport(results, o);
}

/** Entry point of `npm run bench -- machine [options]` (and `mappa bench`). */
export async function main(argv: string[]): Promise<void> {
  process.stdout.write(await runMachineBenchmark(parseMachineArgs(argv)));
}

/**
 * bench/gpu.sh's first question: is there a hardware WebGPU adapter in Node (Dawn)? Prints one JSON
 * line {hardware, adapter, why} and exits 0 when there is one, 2 when there is none or only a
 * software one (SwiftShader, llvmpipe). Run as: node --import tsx bench/machine.ts --probe-adapter
 */
async function probeAdapter(): Promise<number> {
  const r = await installNodeWebGPU();
  if (!r.ok) {
    process.stdout.write(JSON.stringify({ hardware: false, why: r.why }) + '\n');
    return 2;
  }
  const adapter = (await navigator.gpu.requestAdapter()) as (GPUAdapter & { info?: GPUAdapterInfo & { isFallbackAdapter?: boolean } }) | null;
  const info = adapter?.info;
  const name = [info?.vendor, info?.architecture, info?.device, info?.description].filter(Boolean).join(' ');
  const software = !adapter || info?.isFallbackAdapter === true || /swiftshader|llvmpipe|lavapipe|software/i.test(name);
  process.stdout.write(JSON.stringify({
    hardware: !software, adapter: name || null,
    why: software ? (adapter ? `the only WebGPU adapter is a software one (${name}); it is for correctness, not speed` : 'no WebGPU adapter') : undefined,
  }) + '\n');
  return software ? 2 : 0;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1] && process.argv[2] === '--probe-adapter') {
  probeAdapter().then((code) => process.exit(code), (err: unknown) => {
    process.stdout.write(JSON.stringify({ hardware: false, why: `probe failed: ${(err as Error).message}` }) + '\n');
    process.exit(2);
  });
}

// Child process mode: node --import tsx bench/machine.ts --worker <shape> <options json>
runAsChild<MachineBenchOptions>(import.meta.url, (shape, opts) => measureShape(shape, opts));
