/**
 * Comparing a team's adapters after two updates that should agree: every variable's values, in order,
 * and the largest relative difference between two such lists (1e-3 keeps near-zero entries from dominating).
 * Example: expect(maxRelDiff(await adapterData(a), await adapterData(b))).toBeLessThan(1e-4)
 */
import type { AgentPolicy } from '../../src/core/rl/update-steps.ts';

export async function adapterData(p: Map<string, AgentPolicy>): Promise<Float32Array[]> {
  const out: Float32Array[] = [];
  for (const x of p.values()) for (const v of x.adapter.variables()) out.push((await v.data()) as Float32Array);
  return out;
}

export function maxRelDiff(a: Float32Array[], b: Float32Array[]): number {
  let worst = 0;
  a.forEach((x, i) => x.forEach((v, j) => (worst = Math.max(worst, Math.abs(v - b[i][j]) / (1e-3 + Math.abs(v))))));
  return worst;
}
