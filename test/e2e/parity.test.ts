// The engine on WebGPU in headless Chromium (SwiftShader): the parity fixtures' logits within 1e-3
// of transformers and the same greedy continuation. Skips loudly without Debian's chromium.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumAvailable, openHarness, type OpenHarness } from '../helpers/browser.ts';
import { warnIfSkipped } from '../helpers/webgpu.ts';

const have = chromiumAvailable();
warnIfSkipped('browser parity suite (test/e2e/parity.test.ts)', have);

describe.skipIf(!have.ok)('engine parity on WebGPU in headless Chromium', () => {
  let harness: OpenHarness;
  beforeAll(async () => {
    harness = await openHarness();
  });
  afterAll(async () => {
    await harness?.close();
  });

  it('llama and qwen2 logits match transformers within 1e-3; greedy identical; no leaks', async () => {
    const r = await harness.run('parity');
    if (!r.ok) throw new Error(`parity check failed in the browser: ${r.error}\n${r.stack ?? ''}`);
    expect(r.backend.name).toBe('webgpu');
    const res = r.result as Record<string, { maxAbsDiff: number; greedyEqual: boolean; leaked: number }>;
    console.log(`[e2e parity] ${JSON.stringify(res)}`);
    for (const name of ['llama', 'qwen2']) {
      expect(res[name].maxAbsDiff).toBeLessThan(1e-3);
      expect(res[name].greedyEqual).toBe(true);
      expect(res[name].leaked).toBe(0);
    }
  });
});
