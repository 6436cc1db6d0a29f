// The fused chosen-token log-prob kernel in headless Chromium (WebGPU on SwiftShader), through the
// browser harness check 'logprob-fused-vs-cpu' (test/e2e/checks/logprob.ts): forward and gradient
// equal the plain path on tfjs cpu within 1e-4, also when forced into several row chunks.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumAvailable, openHarness, type OpenHarness } from '../helpers/browser.ts';
import { warnIfSkipped } from '../helpers/webgpu.ts';

const have = chromiumAvailable();
warnIfSkipped('browser log-prob kernel suite (test/e2e/logprob.test.ts)', have);

interface LogProbCheckResult {
  backend: string;
  fused: boolean;
  diffs: { label: string; logp: number; dlogits: number; leaked: number }[];
}

describe.skipIf(!have.ok)('fused log-prob kernel in headless Chromium', () => {
  let harness: OpenHarness;
  beforeAll(async () => {
    harness = await openHarness();
  });
  afterAll(async () => {
    await harness?.close();
  });

  it('fused forward + gradient on WebGPU equal the plain path on cpu within 1e-4', async () => {
    const r = await harness.run('logprob-fused-vs-cpu');
    if (!r.ok) throw new Error(`harness check failed in the browser: ${r.error}\n${r.stack ?? ''}`);
    expect(r.backend.name).toBe('webgpu');
    const res = r.result as LogProbCheckResult;
    expect(res.fused).toBe(true);
    expect(res.diffs.map((d) => d.label)).toEqual(['v97', 'v97-chunks3', 'v151936', 'v151936-chunks1']);
    for (const d of res.diffs) {
      expect(d.logp, d.label).toBeLessThan(1e-4);
      expect(d.dlogits, d.label).toBeLessThan(1e-4);
      expect(d.leaked, d.label).toBe(0);
    }
    console.log(`[e2e logprob] ${JSON.stringify(res.diffs)} in ${r.ms.toFixed(0)} ms`);
  });
});
