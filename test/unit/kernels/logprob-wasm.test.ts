/**
 * The chosen-token log-prob kernels for wasm (src/core/engine/kernels/logprob-wasm.ts), forward and
 * gradient, against the plain-ops path (`selectedLogProbsPlain`) on the same wasm backend, against a
 * float64 JS reference (test/helpers/logprob-cases.ts), and against a hand-worked row.
 */
import * as tf from '@tensorflow/tfjs-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../../src/core/engine/backend.ts';
import { fusedLogProbsActive, selectedLogProbs, selectedLogProbsFused, selectedLogProbsPlain } from '../../../src/core/engine/kernels/logprob.ts';
import { SELECTED_LOGPROB, SELECTED_LOGPROB_GRAD } from '../../../src/core/engine/kernels/logprob-webgpu.ts';
import { registerCustomKernels } from '../../../src/core/engine/kernels/register.ts';
import { bothOutputs, makeCase, maxAbsDiff, referenceF64, runLogProb, type LogProbCase, type LogProbRun } from '../../helpers/logprob-cases.ts';

const TOL = 1e-5;
const CASES: Record<string, LogProbCase> = {
  v97: makeCase(8, 97, 1, { outOfRange: true }), // row 1 targets -1: picks nothing
  v49152: makeCase(6, 49152, 2),
  v151936: makeCase(3, 151936, 3), // Qwen's vocabulary
};

/**
 * Logits with a 1e4 spread and -1e30 masks (max near 0), targets on masked entries in rows 2 and 4.
 * With `offset` 1e4 every live logit is shifted up by 1e4 (float32 spacing there: 2^-10 ~ 1e-3).
 */
function extremeCase(offset = 0): LogProbCase {
  const n = 5;
  const vocab = 64;
  const logits = new Float32Array(n * vocab);
  for (let j = 0; j < vocab; j++) {
    logits[j] = offset - 1e4 + (1e4 * j) / (vocab - 1); // row 0: linspace(-1e4, 0)
    logits[vocab + j] = offset + (j % 2 ? 0 : -1e4); // row 1: two levels 1e4 apart
    logits[2 * vocab + j] = j < 8 ? offset + (j - 4) * 0.5 : -1e30; // row 2: all but 8 masked
    logits[3 * vocab + j] = j === 5 ? offset + 3 : -1e30; // row 3: one live entry
    logits[4 * vocab + j] = j % 3 ? offset - j : -1e30; // row 4: a ramp with every third masked
  }
  const targets = Int32Array.from([vocab - 1, 0, 20, 5, 3]); // rows 2 and 4 pick a masked entry
  return { n, vocab, logits, targets, dy: Float32Array.from([1, -0.5, 0.25, 2, -1]) };
}
const MASKED_ROWS = [2, 4];
const liveRows = (a: ArrayLike<number>) => Array.from(a).filter((_, r) => !MASKED_ROWS.includes(r));

function expectClose(got: LogProbRun, want: { logp: ArrayLike<number>; dlogits: ArrayLike<number> }, label: string, tol = TOL): void {
  const fwd = maxAbsDiff(got.logp, want.logp);
  const bwd = maxAbsDiff(got.dlogits, want.dlogits);
  console.log(`[logprob-wasm] ${label}: max |diff| logp ${fwd.toExponential(2)}, dlogits ${bwd.toExponential(2)}`);
  expect(fwd).toBeLessThan(tol);
  expect(bwd).toBeLessThan(tol);
  expect(got.leaked).toBe(0);
}


describe('fused selected log-prob kernel on wasm', () => {
  beforeAll(async () => {
    const info = await initBackend({ force: 'wasm' }); // registers the custom kernels and gradients
    expect(info.name).toBe('wasm');
  });

  it('is registered for wasm under the webgpu kernel names, and selectedLogProbs takes it', async () => {
    expect(registerCustomKernels()).toEqual([]); // already done by initBackend, idempotent
    expect(tf.getKernel(SELECTED_LOGPROB, 'wasm')).toBeTruthy();
    expect(tf.getKernel(SELECTED_LOGPROB_GRAD, 'wasm')).toBeTruthy();
    expect(fusedLogProbsActive()).toBe(true);
    const viaEntry = await runLogProb(selectedLogProbs, CASES.v97);
    const fused = await runLogProb(selectedLogProbsFused, CASES.v97);
    expect(Array.from(viaEntry.logp)).toEqual(Array.from(fused.logp));
    expect(Array.from(viaEntry.dlogits)).toEqual(Array.from(fused.dlogits));
  });

  it('hand-worked row: logits [[0, ln 3]], target 1 -> ln(3/4), lse ln 4, gradient [-0.25, 0.25]', async () => {
    const logits = tf.tensor2d([[0, Math.log(3)]]);
    const targets = tf.tensor1d([1], 'int32');
    const [logp, lse] = tf.engine().runKernel(SELECTED_LOGPROB, { logits, targets }, {}) as tf.Tensor[];
    const g = tf.grad((x: tf.Tensor) => selectedLogProbsFused(x as tf.Tensor2D, targets))(logits, tf.ones([1]));
    expect((await logp.data())[0]).toBeCloseTo(Math.log(3 / 4), 6); // -0.2877
    expect((await lse.data())[0]).toBeCloseTo(Math.log(4), 6); // 1.3863
    const d = await g.data();
    expect(d[0]).toBeCloseTo(-0.25, 6);
    expect(d[1]).toBeCloseTo(0.25, 6);
    tf.dispose([logits, targets, logp, lse, g]);
  });

  for (const name of Object.keys(CASES)) {
    it(`fused == float64 JS within 1e-5 and == plain within 1e-5 + plain's own error, ${name} (N=${CASES[name].n})`, async () => {
      const c = CASES[name];
      const plain = await runLogProb(selectedLogProbsPlain, c);
      const fused = await runLogProb(selectedLogProbsFused, c);
      const f64 = referenceF64(c);
      expectClose(fused, f64, `fused vs float64 JS, ${name}`);
      // The plain path sums V float32 exps in float32: at large V its own error (vs float64) exceeds
      // 1e-5 (5e-5 at V=49152, 1.5e-4 at V=151936 here); fused must be within 1e-5 of it plus that.
      const plainErr = { logp: maxAbsDiff(plain.logp, f64.logp), dlogits: maxAbsDiff(plain.dlogits, f64.dlogits) };
      console.log(`[logprob-wasm] plain vs float64 JS, ${name}: logp ${plainErr.logp.toExponential(2)}, dlogits ${plainErr.dlogits.toExponential(2)}`);
      expect(maxAbsDiff(fused.logp, plain.logp)).toBeLessThan(TOL + plainErr.logp);
      expect(maxAbsDiff(fused.dlogits, plain.dlogits)).toBeLessThan(TOL + plainErr.dlogits);
      if (c.vocab < 1000) expectClose(fused, plain, `fused vs plain, ${name}`);
    }, 300_000);
  }

  it('extreme logits: 1e4 spread, -1e30 masks, targets on masked entries', async () => {
    const c = extremeCase();
    const plain = await runLogProb(selectedLogProbsPlain, c);
    const fused = await runLogProb(selectedLogProbsFused, c);
    const f64 = referenceF64(c);
    // A masked target gives logp = float32(-1e30 - lse) = -1e30 on both paths.
    for (const r of MASKED_ROWS) {
      expect(fused.logp[r]).toBe(plain.logp[r]);
      expect(fused.logp[r]).toBe(Math.fround(-1e30));
    }
    expectClose({ ...fused, logp: Float32Array.from(liveRows(fused.logp)) }, { ...plain, logp: liveRows(plain.logp) }, 'fused vs plain, extreme logits');
    // logp near -1e4 is stored as float32 (spacing 2^-10 there): compare with the rounded reference.
    expectClose({ ...fused, logp: Float32Array.from(liveRows(fused.logp)) }, { ...f64, logp: Float32Array.from(liveRows(f64.logp)) }, 'fused vs float64 JS rounded to float32, extreme logits');
    expect(fused.dlogits.every(Number.isFinite)).toBe(true);
    expect(fused.logp[0]).toBeCloseTo(0, 6); // the largest of a 1e4 spread: probability 1
    expect(fused.logp[1]).toBeCloseTo(-1e4 - Math.log(32), 2); // -1e4 against 32 entries of 0
    expect(fused.logp[3]).toBe(0); // the one live entry
  });

  // Known limit, shared with the webgpu kernel: the backward recomputes p = exp(x - lse) from the
  // saved float32 lse, whose spacing near 1e4 is 2^-10, so p is off by up to p * 2^-11 relatively.
  // The plain path's gradient goes through exp(x - max) and is more accurate there (3e-8 vs 5e-5).
  it('the same rows shifted by +1e4: gradient within the float32-lse bound (p * |dy| * 2^-11)', async () => {
    const c = extremeCase(1e4);
    const plain = await runLogProb(selectedLogProbsPlain, c);
    const fused = await runLogProb(selectedLogProbsFused, c);
    const f64 = referenceF64(c);
    const errFused = maxAbsDiff(fused.dlogits, f64.dlogits);
    const errPlain = maxAbsDiff(plain.dlogits, f64.dlogits);
    console.log(`[logprob-wasm] logits near 1e4: dlogits vs float64 JS, fused ${errFused.toExponential(2)}, plain ${errPlain.toExponential(2)}`);
    // p * |dy| * (half a float32 spacing at 1e4 = 2^-11) is the error the saved float32 lse allows.
    expect(errFused).toBeLessThan(2 ** -11);
    expect(maxAbsDiff(liveRows(fused.logp), liveRows(f64.logp))).toBeLessThan(2 ** -10);
    expect(maxAbsDiff(liveRows(fused.logp), liveRows(plain.logp))).toBeLessThan(2 ** -10);
    expect(fused.leaked).toBe(0);
  });

  it('gradient flows through both outputs (logp and lse)', async () => {
    const c = CASES.v97;
    const dyLse = Float32Array.from(c.dy, (d, i) => 0.5 - d * (i % 3));
    const plain = await bothOutputs(c, dyLse, (l, t) => [selectedLogProbsPlain(l, t), tf.logSumExp(l, -1)]);
    const fused = await bothOutputs(c, dyLse, (l, t) => tf.engine().runKernel(SELECTED_LOGPROB, { logits: l, targets: t }, {}) as tf.Tensor[]);
    expect(maxAbsDiff(fused.logp, plain.logp)).toBeLessThan(TOL);
    expect(maxAbsDiff(fused.lse, plain.lse)).toBeLessThan(TOL);
    expect(maxAbsDiff(fused.dlogits, plain.dlogits)).toBeLessThan(TOL);
    expect(fused.leaked).toBe(0);
  });

  it('no tensors leak over forward + gradient, repeated, with tf.valueAndGrads', async () => {
    const c = CASES.v49152;
    const before = tf.memory().numTensors;
    for (let i = 0; i < 3; i++) {
      const logits = tf.tensor2d(c.logits, [c.n, c.vocab]);
      const targets = tf.tensor1d(c.targets, 'int32');
      const { value, grads } = tf.valueAndGrads((x: tf.Tensor) => tf.sum(selectedLogProbsFused(x as tf.Tensor2D, targets)))([logits]);
      await value.data();
      await grads[0].data();
      tf.dispose([logits, targets, value, ...grads]);
    }
    expect(tf.memory().numTensors).toBe(before);
  }, 300_000);

  it('empty batch, and float targets: rejected by the raw kernel, cast by the wrapper', async () => {
    const empty = tf.tidy(() => selectedLogProbsFused(tf.zeros([0, 5]) as tf.Tensor2D, tf.zeros([0], 'int32') as tf.Tensor1D));
    expect(empty.shape).toEqual([0]);
    const logits = tf.tensor2d([[0, Math.log(3)]]);
    const floatTargets = tf.tensor1d([1]);
    expect(() => tf.engine().runKernel(SELECTED_LOGPROB, { logits, targets: floatTargets }, {})).toThrow(/targets must be int32/);
    const lp = selectedLogProbs(logits, floatTargets);
    expect((await lp.data())[0]).toBeCloseTo(Math.log(3 / 4), 6);
    tf.dispose([empty, logits, floatTargets, lp]);
  });
});
