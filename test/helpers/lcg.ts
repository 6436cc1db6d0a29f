/**
 * Deterministic test inputs independent of any backend's RNG: a linear congruential generator in
 * [-1, 1). Browser-safe (used by harness checks too). Example: lcg(3, 1) -> the same 3 floats every run.
 */
export function lcg(n: number, seed: number): Float32Array {
  const out = new Float32Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = s / 2 ** 31 - 1;
  }
  return out;
}
