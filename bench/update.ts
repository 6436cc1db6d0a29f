/**
 * Update-step benchmark: how fast one MAPPA policy-gradient step (`policyUpdate`: sampling-policy
 * and reference log-probs, REINFORCE++ advantages, PPO-clipped loss, backward into the LoRA
 * adapter, AdamW) runs on a SmolLM2-135M-shaped model (random weights, bench/engine.ts), how much
 * memory it takes, and how close it gets to the backend's own matmul speed.
 *
 * For: update tokens/s, peak memory, the chosen-token log-prob kernel (fused vs plain ops) and the
 * step's achieved FLOP/s as a fraction of a plain matmul's FLOP/s measured in the same process.
 * One child process per backend, like bench/engine.ts. Prints a markdown table.
 * Not for: checking numbers (test/unit/rl) or rollout speed (bench/engine.ts, bench/rollouts.ts).
 *
 * The synthetic batch: `samples` actions of one agent, each prompt P + action A random tokens
 * (T = P + A), rewards in [0, 1]; rank-r LoRA on q, k, v, o of every layer.
 *
 * FLOPs of one step (multiply-add = 2 FLOPs), counted analytically (updateStepFlops):
 *   per token, forward:  2 * (L * (d*q + 2*d*kv + q*d + 3*d*I) + V*d)      the dense matmuls
 *                      + L * 4 * T * q                                         QK^T and AV over the full
 *                                                                             T x T grid, as tfjs computes it
 *                      + L * sum over adapted projections 2 * r * (in + out)  the LoRA path
 *   F = tokens * that, tokens = samples * T.
 *   step = 2 F (old and reference log-probs, no gradient; the reference pass has no LoRA, counted
 *          with it — the difference is under 1 %) + F (training forward) + F (backward).
 * The backward is ~1 F, not the 2 F of full fine-tuning (the "6 N" rule): the base weights are
 * frozen, and tfjs only differentiates along paths from the trained variables, so it computes input
 * gradients through every layer (one matmul per forward matmul) but no base-weight gradients; the
 * LoRA weight gradients add about the LoRA forward again (included). Element-wise work (softmax,
 * norms, the log-prob temporaries, entropy) is not counted: it is small next to the matmuls but
 * not free, so the fraction is a floor on matmul efficiency.
 * The reference matmul: [tokens, d] x [d, I] (the MLP's shape), median of a few runs.
 *
 * Example: npm run bench -- update --backends wasm --layers 4
 * With --agents 1,4,...,128: the update of a team at an equal number of samples, per agent against
 * batched (bench/update-team.ts).
 */
import os from 'node:os';
import * as tf from '@tensorflow/tfjs-core';
import { type BackendInfo, type BackendName, describeBackend, initBackend } from '../src/core/engine/backend.ts';
import { benchLogProb, type LogProbBench } from '../src/core/engine/kernels/logprob-bench.ts';
import { fusedLogProbsActive } from '../src/core/engine/kernels/logprob.ts';
import { SELECTED_LOGPROB } from '../src/core/engine/kernels/logprob-webgpu.ts';
import { registerCustomKernels } from '../src/core/engine/kernels/register.ts';
import { LoraAdapter, projectionShape } from '../src/core/engine/lora/adapter.ts';
import { type ModelConfig, parameterCount } from '../src/core/engine/model/config.ts';
import { CausalLM, type Projection } from '../src/core/engine/model/llama.ts';
import { AdamW } from '../src/core/rl/adamw.ts';
import { policyUpdate } from '../src/core/rl/update.ts';
import { type AgentPolicy } from '../src/core/rl/update-steps.ts';
import { actionLogProbs, type TrainSample } from '../src/core/rl/batches.ts';
import { thisThread } from '../src/core/compute/local.ts';
import { LaneCompute } from '../src/core/compute/lanes.ts';
import { Rng } from '../src/core/stats/rng.ts';
import { benchConfig, randomWeights, SHAPES, shapeNamed } from './engine.ts';
import { fmt, runAsChild, runInChild } from './child.ts';

const ALL_BACKENDS: BackendName[] = ['wasm', 'cpu', 'webgpu'];
const MB = 1024 * 1024;
const TARGETS: Projection[] = ['q_proj', 'k_proj', 'v_proj', 'o_proj'];

export interface UpdateBenchOptions {
  backends: BackendName[];
  /** Run webgpu even on a software adapter: set when webgpu is named explicitly. */
  forceWebgpu: boolean;
  layers: number;
  samples: number;
  promptLen: number;
  actionLen: number;
  rank: number;
  /** Rows per forward/backward pass (gradient accumulation over the rest). */
  microBatch: number;
  /** Timed update steps (after one untimed, profiled warm-up step). */
  steps: number;
  quick: boolean;
  logprob: boolean;
  /** wasm: also time the step with this many threads (this one + worker lanes, src/cli/train-workers.ts). */
  threads: number;
  /** Model shape (bench/engine.ts SHAPES key); default smollm2-135m. */
  shape?: string;
}

/**
 * The warm-up step's kernels by time (MAPPA_BENCH_KERNELS=N: the N slowest, matmuls by shape), to stderr:
 * where the step's time goes outside the matmul rate. Example: MAPPA_BENCH_KERNELS=25 npm run bench -- update --layers 4
 */
async function logKernels(profile: Awaited<ReturnType<typeof tf.profile>>, top: number): Promise<void> {
  const groups = new Map<string, { ms: number; n: number }>();
  let total = 0;
  for (const k of profile.kernels) {
    // A custom gradient's forward is profiled as a scope around its own kernels, which are listed too.
    if (k.name === 'unnamed scope') continue;
    const ms = Number(await k.kernelTimeMs) || 0;
    total += ms;
    const key = /MatMul/.test(k.name) ? `${k.name} ${k.inputShapes.map((x: number[]) => `[${x}]`).join(' x ')}` : k.name;
    const g = groups.get(key) ?? { ms: 0, n: 0 };
    g.ms += ms;
    g.n++;
    groups.set(key, g);
  }
  const rows = [...groups].sort((a, b) => b[1].ms - a[1].ms).slice(0, top);
  log(`kernels of the warm-up step: ${(total / 1000).toFixed(2)} s in ${profile.kernels.length} kernels`);
  for (const [key, g] of rows) log(`  ${(g.ms / 1000).toFixed(3)} s  ${((100 * g.ms) / total).toFixed(1)} %  x${g.n}  ${key}`);
}

/** Parses `--backends wasm --layers 30 --samples 4 --prompt 128 --action 128 --rank 8 --micro-batch 1 --steps 2 --quick`. */
export function parseUpdateArgs(argv: string[]): UpdateBenchOptions {
  const o: UpdateBenchOptions = {
    backends: ['wasm', 'webgpu'], forceWebgpu: false, layers: 30, samples: 4, promptLen: 128, actionLen: 128, rank: 8,
    microBatch: 1, steps: 2, quick: false, logprob: true, threads: 1,
  };
  const value = (i: number, flag: string) => {
    const v = argv[i + 1];
    if (v === undefined || v.startsWith('--')) throw new Error(`bench update: ${flag} needs a value`);
    return v;
  };
  const int = (s: string, flag: string) => {
    const n = Number(s);
    if (!Number.isInteger(n) || n <= 0) throw new Error(`bench update: ${flag} must be a positive integer, got "${s}"`);
    return n;
  };
  const given = new Set<string>();
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    given.add(flag);
    if (flag === '--backends' || flag === '--backend') {
      const list = value(i++, flag).split(',').map((s) => s.trim()) as BackendName[];
      for (const b of list) if (!ALL_BACKENDS.includes(b)) throw new Error(`bench update: unknown backend "${b}" in ${flag}; use ${ALL_BACKENDS.join(', ')}`);
      o.backends = list;
      o.forceWebgpu = list.includes('webgpu');
    } else if (flag === '--layers') o.layers = int(value(i++, flag), flag);
    else if (flag === '--samples') o.samples = int(value(i++, flag), flag);
    else if (flag === '--prompt') o.promptLen = int(value(i++, flag), flag);
    else if (flag === '--action') o.actionLen = int(value(i++, flag), flag);
    else if (flag === '--rank') o.rank = int(value(i++, flag), flag);
    else if (flag === '--micro-batch') o.microBatch = int(value(i++, flag), flag);
    else if (flag === '--steps') o.steps = int(value(i++, flag), flag);
    else if (flag === '--quick') o.quick = true;
    else if (flag === '--no-logprob') o.logprob = false;
    else if (flag === '--threads') o.threads = int(value(i++, flag), flag);
    else if (flag === '--shape') o.shape = shapeNamed(value(i++, flag), 'update');
    else throw new Error(`bench update: unknown option "${flag}". Options: --backends wasm[,webgpu,cpu] --layers N --samples N ` +
      '--prompt N --action N --rank N --micro-batch N --steps N --threads N --shape smollm2-135m|qwen2.5-0.5b --quick --no-logprob');
  }
  if (o.quick) {
    if (!given.has('--layers')) o.layers = 2;
    if (!given.has('--samples')) o.samples = 2;
    if (!given.has('--prompt')) o.promptLen = 8;
    if (!given.has('--action')) o.actionLen = 8;
    if (!given.has('--steps')) o.steps = 1;
  }
  return o;
}

/** Analytic FLOPs of one update step (see the top comment). Example: SmolLM2-135M, 4 x 256 tokens -> ~1.3e12. */
export function updateStepFlops(c: ModelConfig, o: Pick<UpdateBenchOptions, 'samples' | 'promptLen' | 'actionLen' | 'rank'>): { forward: number; step: number; tokens: number } {
  const T = o.promptLen + o.actionLen;
  const tokens = o.samples * T;
  const d = c.hiddenSize;
  const q = c.numHeads * c.headDim;
  const kv = c.numKvHeads * c.headDim;
  const dense = 2 * (c.numLayers * (d * q + 2 * d * kv + q * d + 3 * d * c.intermediateSize) + c.vocabSize * d);
  const attention = c.numLayers * 4 * T * q;
  const lora = c.numLayers * TARGETS.reduce((n, p) => {
    const [out, inn] = projectionShape(c, p);
    return n + 2 * o.rank * (inn + out);
  }, 0);
  const forward = tokens * (dense + attention + lora);
  return { forward, step: 4 * forward + tokens * lora, tokens };
}

export interface UpdateResult {
  backend: BackendName;
  skipped?: string;
  description?: string;
  weightsMB?: number;
  matmulGflops?: number;
  stepSeconds?: number[];
  /** wasm with --threads N > 1: the same step with N threads (median s), in the same process. */
  laneStepSeconds?: number[];
  /** One no-gradient log-prob pass over the batch (what the step does twice before training). */
  forwardSeconds?: number;
  fused?: boolean;
  /** Where the fused kernel runs (webgpu, wasm): the same step with it unregistered (plain ops). */
  plainStepSeconds?: number;
  tfPeakMB?: number;
  maxRssMB?: number;
  leakedTensors?: number;
  logprob?: LogProbBench;
  notes: string[];
}

function isSoftwareAdapter(info: BackendInfo): boolean {
  const a = info.adapter;
  if (!a) return false;
  return a.isFallbackAdapter === true || /swiftshader|llvmpipe|lavapipe|software/i.test(`${a.vendor} ${a.architecture} ${a.description ?? ''}`);
}

const log = (msg: string) => process.stderr.write(`[bench update ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

/** Median GFLOP/s of a plain [m, k] x [k, n] matmul on the active backend (one warm-up run first). */
export async function timeMatmul(m: number, k: number, n: number, runs: number): Promise<number> {
  const [a, b] = tf.tidy(() => [tf.randomNormal([m, k], 0, 1, 'float32', 1), tf.randomNormal([k, n], 0, 1, 'float32', 2)]);
  const once = async () => {
    const t0 = performance.now();
    const c = tf.matMul(a, b);
    await c.data();
    c.dispose();
    return (performance.now() - t0) / 1000;
  };
  await once();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) times.push(await once());
  tf.dispose([a, b]);
  times.sort((x, y) => x - y);
  return (2 * m * k * n) / times[Math.floor(times.length / 2)] / 1e9;
}

/** Runs in the child process: measures one backend. */
export async function measureUpdate(backend: BackendName, o: UpdateBenchOptions): Promise<UpdateResult> {
  const notes: string[] = [];
  let info: BackendInfo;
  try {
    info = await initBackend({ force: backend });
  } catch (err) {
    return { backend, skipped: `not available: ${(err as Error).message}`, notes };
  }
  const description = describeBackend(info);
  if (backend === 'webgpu' && isSoftwareAdapter(info) && !o.forceWebgpu) {
    return { backend, description, skipped: 'software adapter (SwiftShader-like): for correctness only, not speed; pass --backends webgpu to time it anyway', notes };
  }
  const config = benchConfig(o.layers, o.shape);
  const T = o.promptLen + o.actionLen;
  log(`${backend}: ${description}; matmul reference [${o.samples * T}, ${config.hiddenSize}] x [${config.hiddenSize}, ${config.intermediateSize}]`);
  const matmulGflops = await timeMatmul(o.samples * T, config.hiddenSize, config.intermediateSize, o.quick ? 2 : 5);

  log(`${backend}: ${(parameterCount(config) / 1e6).toFixed(1)}M random weights, rank-${o.rank} LoRA on ${TARGETS.join(' ')}`);
  const model = new CausalLM(config, randomWeights(config));
  const weightBytes = tf.memory().numBytes;
  const adapter = LoraAdapter.create(config, { rank: o.rank, alpha: 2 * o.rank, dropout: 0, targetModules: TARGETS, rsLora: false }, 'bench', 0);
  const optimizer = new AdamW(adapter.variables(), { lr: 1e-4 });
  const policies = new Map<string, AgentPolicy>([['bench', { adapter, optimizer, trainable: true }]]);
  const baseTensors = tf.memory().numTensors;
  const rng = new Rng(11);
  const tokens = (n: number) => Array.from({ length: n }, () => rng.int(0, config.vocabSize - 1));
  const samples: TrainSample[] = Array.from({ length: o.samples }, () => ({
    agent: 'bench', prompt: tokens(o.promptLen), action: tokens(o.actionLen), reward: rng.next(),
  }));
  const settings = { microBatchSize: o.microBatch };
  const step = async () => {
    const t0 = performance.now();
    await policyUpdate(thisThread(model), policies, samples, settings);
    return (performance.now() - t0) / 1000;
  };

  // Warm-up step, profiled for the tfjs memory peak (untimed: profiling adds bookkeeping).
  log(`${backend}: warm-up step (profiled for the memory peak)`);
  const profile = await tf.profile(async () => { await step(); });
  if (process.env.MAPPA_BENCH_KERNELS) await logKernels(profile, Number(process.env.MAPPA_BENCH_KERNELS) || 20);
  const fused = fusedLogProbsActive();
  const stepSeconds: number[] = [];
  for (let i = 0; i < o.steps; i++) {
    stepSeconds.push(await step());
    log(`${backend}: step ${i + 1}/${o.steps}: ${stepSeconds[i].toFixed(2)} s`);
  }
  const t0 = performance.now();
  await actionLogProbs(model, samples, adapter, o.microBatch);
  const forwardSeconds = (performance.now() - t0) / 1000;

  let plainStepSeconds: number | undefined;
  if (fused) {
    // The same step on plain ops: unregister the fused kernel, time, register it again.
    tf.unregisterKernel(SELECTED_LOGPROB, 'webgpu');
    tf.unregisterGradient(SELECTED_LOGPROB);
    await step(); // shapes of the plain path compile once
    plainStepSeconds = await step();
    registerCustomKernels();
    log(`${backend}: step with plain log-prob ops: ${plainStepSeconds.toFixed(2)} s`);
  }
  let laneStepSeconds: number[] | undefined;
  if (backend === 'wasm' && o.threads > 1) {
    const { startWorkerLanes } = await import('../src/cli/train-workers.ts');
    const lanes = await startWorkerLanes(o.threads - 1, model);
    const compute = new LaneCompute(thisThread(model), lanes, (m) => log(`warning: ${m}`));
    const laneStep = async () => {
      const t1 = performance.now();
      await policyUpdate(compute, policies, samples, settings);
      return (performance.now() - t1) / 1000;
    };
    await laneStep(); // the workers' shapes warm up once
    laneStepSeconds = [];
    for (let i = 0; i < o.steps; i++) {
      laneStepSeconds.push(await laneStep());
      log(`${backend}: step with ${o.threads} threads ${i + 1}/${o.steps}: ${laneStepSeconds[i].toFixed(2)} s`);
    }
    await lanes.close();
  }
  const leakedTensors = tf.memory().numTensors - baseTensors;
  adapter.dispose();
  optimizer.dispose();
  model.dispose();

  let logprob: LogProbBench | undefined;
  if (o.logprob) {
    log(`${backend}: chosen-token log-prob kernel on [${o.samples * (T - 1)}, ${config.vocabSize}]`);
    logprob = await benchLogProb(backend, o.samples * (T - 1), config.vocabSize, { iters: o.quick ? 1 : 3, warmup: 1 });
  }
  return {
    backend, description, weightsMB: weightBytes / MB, matmulGflops, stepSeconds, laneStepSeconds, forwardSeconds, fused, plainStepSeconds,
    tfPeakMB: profile.peakBytes / MB, maxRssMB: process.resourceUsage().maxRSS / 1024, leakedTensors, logprob, notes,
  };
}

function runWorker(backend: BackendName, opts: UpdateBenchOptions): Promise<UpdateResult> {
  return runInChild<UpdateResult>(import.meta.url, backend, opts, (why) => ({ backend, skipped: why, notes: [] }));
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** The markdown report. */
export function formatUpdateReport(results: UpdateResult[], o: UpdateBenchOptions, date = new Date()): string {
  const c = benchConfig(o.layers, o.shape);
  const cpus = os.cpus();
  const T = o.promptLen + o.actionLen;
  const flops = updateStepFlops(c, o);
  const out: string[] = [];
  out.push(`# Update-step benchmark${o.quick ? ' (quick smoke run)' : ''}`, '');
  out.push(`- date: ${date.toISOString()}`);
  out.push(`- machine: ${cpus.length} cores (${cpus[0]?.model.trim() ?? 'unknown cpu'}), ${(os.totalmem() / 1024 ** 3).toFixed(0)} GiB RAM, Node ${process.version}, tfjs ${tf.version_core}`);
  out.push(`- model: ${SHAPES[o.shape ?? 'smollm2-135m'].label} shape, random weights, ${c.numLayers} layers, hidden ${c.hiddenSize}, intermediate ${c.intermediateSize}, ` +
    `${c.numHeads} heads / ${c.numKvHeads} KV heads, vocab ${c.vocabSize}, tied embeddings, ${(parameterCount(c) / 1e6).toFixed(1)}M parameters, float32`);
  out.push(`- step: policyUpdate on ${o.samples} samples x (prompt ${o.promptLen} + action ${o.actionLen}) = ${flops.tokens} tokens, ` +
    `rank-${o.rank} LoRA on ${TARGETS.join(', ')}, micro-batch ${o.microBatch}, ${o.steps} timed step(s) after 1 warm-up`);
  out.push(`- FLOPs per step (analytic, bench/update.ts): ${(flops.step / 1e9).toFixed(1)} GFLOP = 4 x forward (${(flops.forward / 1e9).toFixed(1)} GFLOP: ` +
    'old + reference log-probs, training forward, backward without base-weight gradients) + LoRA weight gradients');
  for (const r of results) out.push(`- ${r.description ?? r.backend}${r.skipped ? ` **skipped**: ${r.skipped}` : ''}`);
  out.push('', '| backend | log-prob path | step s | update tok/s | no-grad forward s | step GFLOP/s | matmul GFLOP/s | step / matmul | tfjs peak MB | peak RSS MB | tensors leaked |');
  out.push('|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const r of results) {
    if (r.skipped || !r.stepSeconds) continue;
    const s = median(r.stepSeconds);
    const gflops = flops.step / s / 1e9;
    out.push(`| ${r.backend} | ${r.fused ? 'fused kernel' : 'plain ops'} | ${fmt(s)} | ${fmt(flops.tokens / s)} | ${fmt(r.forwardSeconds)} | ${fmt(gflops)} | ` +
      `${fmt(r.matmulGflops)} | ${fmt((100 * gflops) / r.matmulGflops!, 1)}% | ${fmt(r.tfPeakMB, 0)} | ${fmt(r.maxRssMB, 0)} | ${r.leakedTensors} |`);
    if (r.laneStepSeconds) {
      const l = median(r.laneStepSeconds);
      out.push(`| ${r.backend}, ${o.threads} threads (${fmt(s / l, 2)}x the 1-thread step) | ${r.fused ? 'fused kernel' : 'plain ops'} | ${fmt(l)} | ` +
        `${fmt(flops.tokens / l)} | | ${fmt(flops.step / l / 1e9)} | | | | | |`);
    }
    if (r.plainStepSeconds !== undefined) {
      const p = r.plainStepSeconds;
      out.push(`| ${r.backend} | plain ops | ${fmt(p)} | ${fmt(flops.tokens / p)} | | ${fmt(flops.step / p / 1e9)} | ${fmt(r.matmulGflops)} | ` +
        `${fmt((100 * flops.step) / p / 1e9 / r.matmulGflops!, 1)}% | | | |`);
    }
  }
  const lp = results.filter((r) => r.logprob);
  if (lp.length) {
    out.push('', `Chosen-token log-prob on [${o.samples * (T - 1)}, ${c.vocabSize}] logits (median ms; src/core/engine/kernels/logprob-bench.ts):`, '');
    out.push('| backend | plain forward | plain fwd+bwd | fused forward | fused fwd+bwd | speed-up fwd+bwd |');
    out.push('|---|---:|---:|---:|---:|---:|');
    for (const r of lp) {
      const b = r.logprob!;
      out.push(`| ${r.backend} | ${fmt(b.plain.forwardMs)} | ${fmt(b.plain.forwardBackwardMs)} | ${b.fused ? fmt(b.fused.forwardMs) : 'n/a'} | ` +
        `${b.fused ? fmt(b.fused.forwardBackwardMs) : 'n/a'} | ${b.speedup?.forwardBackward ? `${fmt(b.speedup.forwardBackward, 1)}x` : 'n/a'} |`);
    }
    for (const r of lp) for (const n of r.logprob!.notes) out.push(`- ${r.backend}: ${n}`);
  }
  out.push('', 'update tok/s = tokens of the batch / step time (the step reads every token 3 times forward and once backward). ' +
    'step / matmul = achieved FLOP/s of the step over the plain [tokens, d] x [d, I] matmul FLOP/s of the same process. ' +
    'The fused log-prob kernel runs on webgpu and wasm; on cpu the plain ops run. ' +
    'Other processes share the cores: compare figures from one run.');
  return out.join('\n') + '\n';
}

export async function runUpdateBenchmark(o: UpdateBenchOptions): Promise<string> {
  const results: UpdateResult[] = [];
  for (const backend of o.backends) {
    log(`starting ${backend} worker`);
    results.push(await runWorker(backend, o));
  }
  return formatUpdateReport(results, o);
}

/** Entry point of `npm run bench -- update [options]`. */
export async function main(argv: string[]): Promise<void> {
  // --agents: a team of N agents at equal samples, per agent against batched (bench/update-team.ts).
  if (argv.includes('--agents')) return (await import('./update-team.ts')).main(argv);
  process.stdout.write(await runUpdateBenchmark(parseUpdateArgs(argv)));
}

// Child process mode: node --import tsx bench/update.ts --worker <backend> <options json>
runAsChild<UpdateBenchOptions>(import.meta.url, (backend, opts) => measureUpdate(backend as BackendName, opts));
