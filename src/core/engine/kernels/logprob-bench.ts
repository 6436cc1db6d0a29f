/**
 * Micro-benchmark: fused vs plain chosen-token log-prob, forward and forward+backward.
 *
 * For: `npm run bench -- update` (bench/update.ts calls benchLogProb) and ad-hoc comparisons in
 * Node or the browser. Not for: tests (no timing is asserted anywhere) or absolute speed claims on
 * SwiftShader, which is a CPU emulation of a GPU (see /work/shared/WEBGPU-ON-CPU.md).
 *
 * Each timed call ends by reading back one float derived from the result (`tf.sum`, the same for
 * both paths), so queued GPU work is counted. The plain backward needs tfjs' gradient registry
 * (`import '@tensorflow/tfjs-core/dist/register_all_gradients'`, as src/core/rl/update.ts does);
 * without it that figure is null and `notes` says why. The fused path needs only
 * registerCustomKernels(), which this function calls.
 *
 * Example:
 *   const r = await benchLogProb('webgpu', 64, 151936);
 *   // {backend: 'webgpu', n: 64, vocab: 151936, plain: {forwardMs: 40, forwardBackwardMs: 120},
 *   //  fused: {forwardMs: 8, forwardBackwardMs: 25}, speedup: {forward: 5, forwardBackward: 4.8}, ...}
 *   await benchLogProb('wasm', 64, 49152);
 *   // measured here (1 thread): plain 29 / 294 ms, fused 35 / 68 ms (forward / forward+backward)
 */
import * as tf from '@tensorflow/tfjs-core';
import { initBackend, type BackendName } from '../backend.ts';
import { fusedLogProbsActive, fusedLogProbsRegistered, selectedLogProbsFused, selectedLogProbsPlain } from './logprob.ts';
import { registerCustomKernels } from './register.ts';

export interface LogProbTimings {
  forwardMs: number; // median over iterations
  forwardBackwardMs: number | null; // null: could not be measured (see notes)
}

export interface LogProbBench {
  backend: string;
  n: number;
  vocab: number;
  iters: number;
  plain: LogProbTimings;
  fused: LogProbTimings | null; // null where no fused kernel is registered (cpu)
  speedup: { forward: number; forwardBackward: number | null } | null; // plain / fused
  notes: string[];
}

type Fn = (logits: tf.Tensor2D, targets: tf.Tensor1D) => tf.Tensor1D;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

/** Wall time of `body` (which returns a tensor to sync on) including the read-back of its sum. */
async function timeOnce(body: () => tf.Tensor): Promise<number> {
  const t0 = performance.now();
  const out = tf.tidy(() => tf.sum(body()));
  await out.data();
  const ms = performance.now() - t0;
  out.dispose();
  return ms;
}

async function timeMedian(body: () => tf.Tensor, warmup: number, iters: number): Promise<number> {
  for (let i = 0; i < warmup; i++) await timeOnce(body);
  const ms: number[] = [];
  for (let i = 0; i < iters; i++) ms.push(await timeOnce(body));
  return median(ms);
}

async function timePath(fn: Fn, logits: tf.Tensor2D, targets: tf.Tensor1D, dy: tf.Tensor1D, warmup: number, iters: number,
  withGrad: boolean): Promise<LogProbTimings> {
  const forwardMs = await timeMedian(() => fn(logits, targets), warmup, iters);
  const gradOf = tf.grad((x: tf.Tensor) => fn(x as tf.Tensor2D, targets));
  const forwardBackwardMs = withGrad ? await timeMedian(() => gradOf(logits, dy), warmup, iters) : null;
  return { forwardMs, forwardBackwardMs };
}

/**
 * Switches to `backend` (initBackend({force})), times the plain path and, where one is registered
 * (webgpu, wasm), the fused kernel on random logits [n, vocab] (values in [-8, 8)), and leaves the
 * backend switched. The fused path is timed even where `selectedLogProbs` does not take it
 * (fusedLogProbsActive() false); `notes` says so then.
 */
export async function benchLogProb(
  backend: BackendName,
  n: number,
  vocab: number,
  opts: { iters?: number; warmup?: number; seed?: number } = {},
): Promise<LogProbBench> {
  const iters = opts.iters ?? 5;
  const warmup = opts.warmup ?? 1;
  const info = await initBackend({ force: backend });
  registerCustomKernels();
  const notes: string[] = [];
  const withGrad = Boolean(tf.getGradient('Sum') && tf.getGradient('Max'));
  if (!withGrad) {
    notes.push("plain backward not timed: tfjs' gradient registry is not loaded " +
      "(import '@tensorflow/tfjs-core/dist/register_all_gradients')");
  }
  const [logits, targets, dy] = tf.tidy(() => [
    tf.randomUniform([n, vocab], -8, 8, 'float32', opts.seed ?? 1) as tf.Tensor2D,
    tf.randomUniform([n], 0, vocab, 'int32', (opts.seed ?? 1) + 1) as tf.Tensor1D,
    tf.randomUniform([n], -1, 1, 'float32', (opts.seed ?? 1) + 2) as tf.Tensor1D,
  ]);
  try {
    const plain = await timePath(selectedLogProbsPlain, logits, targets, dy, warmup, iters, withGrad);
    let fused: LogProbTimings | null = null;
    if (fusedLogProbsRegistered()) {
      fused = await timePath(selectedLogProbsFused, logits, targets, dy, warmup, iters, true);
      if (!fusedLogProbsActive()) notes.push(`fused kernel timed on ${info.name}, but selectedLogProbs takes the plain path there`);
    } else {
      notes.push(`no fused kernel on ${info.name}: the plain path is what runs there`);
    }
    if (info.adapter?.isFallbackAdapter) notes.push('fallback adapter (SwiftShader): a CPU emulation, not GPU speed');
    const speedup = fused && {
      forward: plain.forwardMs / fused.forwardMs,
      forwardBackward: plain.forwardBackwardMs != null && fused.forwardBackwardMs ? plain.forwardBackwardMs / fused.forwardBackwardMs : null,
    };
    return { backend: info.name, n, vocab, iters, plain, fused, speedup, notes };
  } finally {
    tf.dispose([logits, targets, dy]);
  }
}
