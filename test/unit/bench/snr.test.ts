// bench/snr.ts's statistics against hand-worked numbers and against the plain per-sample computation
// (the gradients themselves, not their Gram matrix), and its option parser's refusals.
import { describe, expect, it } from 'vitest';
import { gramMoments, parseSnrArgs, pooledSnr } from '../../../bench/snr.ts';

const gram = (G: number[][]) => {
  const M = G.length;
  const K = new Float64Array(M * M);
  G.forEach((x, s) => G.forEach((y, t) => (K[s * M + t] = x.reduce((d, v, k) => d + v * y[k], 0))));
  return K;
};

describe('bench snr', () => {
  it('matches the hand-worked example', () => {
    const r = gramMoments(gram([[1, 0], [3, 0]]), 2, [1, 1], [0, 1]);
    expect(r.signal2).toBeCloseTo(3, 12);
    expect(r.noise2).toBeCloseTo(2, 12);
    expect(pooledSnr([r])).toBeCloseTo(Math.sqrt(3 / 2), 12);
  });

  it('equals the plain estimate from the gradients: |mean|^2 less trace(cov) / M, trace(cov) over M - 1', () => {
    const G = [[0.3, -1, 2], [1.5, 0.2, -0.4], [0.1, 0.9, 1.1], [-0.7, 0.4, 0.5], [2, 1, 0]];
    const a = [0.5, -1.2, 1, 0.3, -0.8];
    const g = G.map((x, s) => x.map((v) => a[s] * v));
    const M = g.length;
    const mean = [0, 1, 2].map((k) => g.reduce((t, x) => t + x[k], 0) / M);
    const cov = g.reduce((t, x) => t + x.reduce((u, v, k) => u + (v - mean[k]) ** 2, 0), 0) / (M - 1);
    const r = gramMoments(gram(G), M, a, [0, 1, 2, 3, 4]);
    expect(r.noise2).toBeCloseTo(cov, 10);
    expect(r.signal2).toBeCloseTo(mean.reduce((t, v) => t + v * v, 0) - cov / M, 10);
  });

  it('a bootstrap draw never pairs a sample with its own copy', () => {
    // Sample 0 drawn twice: the only distinct pairs are (0, 1), counted 2 x 1 each way; K[0][0] never enters the signal.
    const r = gramMoments(gram([[1, 0], [3, 0]]), 2, [1, 1], [0, 0, 1]);
    expect(r.signal2).toBeCloseTo(3, 12);
  });

  it('refuses bad options by name', () => {
    expect(() => parseSnrArgs(['--rollouts', '7'])).toThrow(/--rollouts/);
    expect(() => parseSnrArgs(['--agents', '1,200'])).toThrow(/--agents/);
    expect(() => parseSnrArgs(['--bogus', '1'])).toThrow(/unknown option/);
  });
});
