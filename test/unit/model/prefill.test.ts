/**
 * The shared prefill (src/core/engine/model/prefill.ts): the plan by hand (twins, the common
 * prefix, its minimum), and its cache and logits against the plain left-padded prefill on wasm
 * and cpu, with an adapter: logits within 1e-5, and generate's tokens unchanged.
 */
import * as tf from '@tensorflow/tfjs-core';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { initBackend } from '../../../src/core/engine/backend.ts';
import { LoraAdapter } from '../../../src/core/engine/lora/adapter.ts';
import { alikeBatches, generate } from '../../../src/core/engine/model/generate.ts';
import { PROJECTIONS, disposeCache } from '../../../src/core/engine/model/llama.ts';
import { loadModel } from '../../../src/core/engine/model/load.ts';
import { leftPad, planPrefill, sharedPrefill, tokenOrder } from '../../../src/core/engine/model/prefill.ts';
import { ENGINE_PATHS } from '../../../src/core/engine/paths.ts';
import { folderSource } from '../../../src/core/engine/model/sources.ts';
import { Rng } from '../../../src/core/stats/rng.ts';
import { repoRoot } from '../../helpers/webgpu.ts';

describe('planPrefill', () => {
  it('runs twins once and the common prefix once, leaving a token of each prompt', () => {
    expect(planPrefill([[1, 5, 6, 7], [1, 5, 6, 8], [1, 5, 6, 7]], 2)).toEqual({ distinct: [[1, 5, 6, 7], [1, 5, 6, 8]], order: [0, 1, 0], groups: [0, 0], prefixes: [3] });
    // One distinct prompt: nothing to share a prefix with (the twins still run once).
    expect(planPrefill([[1, 2, 3], [1, 2, 3]], 1)).toEqual({ distinct: [[1, 2, 3]], order: [0, 0], groups: [], prefixes: [] });
    // The prefix stops one token short of the shortest prompt, and below the minimum it is not used.
    expect(planPrefill([[1, 2, 3], [1, 2, 3, 4]], 1).prefixes).toEqual([2]);
    expect(planPrefill([[1, 2, 3], [1, 2, 9]], 8).prefixes).toEqual([]);
    expect(planPrefill([[1, 2, 3], [1, 2, 4], [7]], 1).prefixes).toEqual([]); // [7] alone would have an empty head
  });

  it('orders prompts by their tokens, and batches those that start alike together (the docstring examples)', () => {
    expect(tokenOrder([[2], [1, 3], [1]])).toEqual([2, 1, 0]);
    expect(alikeBatches([[5, 1], [3, 1], [5, 2], [3, 2]], 2)).toEqual([[1, 3], [0, 2]]);
  });

  it('groups prompts by what they share, keeping a long shared prefix over a short one that covers more', () => {
    const a = [9, 1, 1, 1, 1, 1, 2]; // "agent 9 replied 1 ..." shares 6 tokens with b, 1 with the rest
    const b = [9, 1, 1, 1, 1, 1, 3];
    const c = [4, 2, 2, 2, 2, 7];
    const d = [4, 2, 2, 2, 2, 8];
    const e = [4, 3, 3, 3, 3, 8]; // shares 1 token with c and d: a group of its own
    const plan = planPrefill([e, a, c, b, d], 2);
    // in token order: c, d (group 0, sharing 5); e alone (group 1: all but its last token); a, b (group 2, sharing 6)
    expect(plan.groups).toEqual([1, 2, 0, 2, 0]);
    expect(plan.prefixes).toEqual([5, 5, 6]);
    // with the grouped path off, only a prefix common to every prompt is shared: here none
    ENGINE_PATHS.groupedPrefill = false;
    try {
      expect(planPrefill([e, a, c, b, d], 2).prefixes).toEqual([]);
      expect(planPrefill([c, d], 2)).toEqual({ distinct: [c, d], order: [0, 1], groups: [0, 0], prefixes: [5] });
      expect(alikeBatches([[5, 1], [3, 1], [5, 2], [3, 2]], 2)).toEqual([[0, 1], [2, 3]]);
    } finally {
      ENGINE_PATHS.groupedPrefill = true;
    }
  });
});

describe('sharedPrefill against the plain prefill', () => {
  const system = Array.from({ length: 40 }, (_, i) => 100 + i); // a shared "system prompt"
  const other = Array.from({ length: 30 }, (_, i) => 200 - i); // a second family of prompts: two groups
  const prompts = [[...system, 7, 8, 9], [...other, 4, 4], [...system, 300], [...system, 7, 8, 9], [...other, 9],
    [...system, 5, 6, 7, 8, 9, 10, 11], [...other.slice(0, 20), 1, 2]];

  for (const backend of ['wasm', 'cpu'] as const) {
    it(`${backend}: the same logits within 1e-5, and generate's greedy tokens unchanged`, async () => {
      await initBackend({ force: backend });
      const { model } = await loadModel(folderSource(path.join(repoRoot, 'models/agent')));
      const adapter = LoraAdapter.create(model.config, { rank: 4, alpha: 8, targetModules: [...PROJECTIONS] }, `prefill-${backend}`, 1);
      const rng = new Rng(5);
      for (const p of adapter.pairs.values()) p.b.assign(tf.tensor2d(Float32Array.from({ length: p.b.size }, () => 0.2 * (rng.next() - 0.5)), p.b.shape));
      expect(planPrefill(prompts).prefixes).toEqual([40, 20]); // two groups: the test does run grouped heads
      const { ids, mask } = leftPad(prompts);
      const plain = model.forward(ids, { attentionMask: mask, useCache: true, lastOnly: true, adapter });
      const want = plain.logits.dataSync();
      const shared = await sharedPrefill(model, prompts, adapter);
      expect(shared.logits.length).toBe(want.length);
      let diff = 0;
      for (let i = 0; i < want.length; i++) diff = Math.max(diff, Math.abs(want[i] - shared.logits[i]));
      expect(diff).toBeLessThan(1e-5);
      expect(Array.from(shared.cache.nextPosition)).toEqual(Array.from(plain.cache!.nextPosition));
      plain.logits.dispose();
      disposeCache(plain.cache!);
      disposeCache(shared.cache);
      const o = { maxNewTokens: 10, temperature: 0, adapter };
      const a = await generate(model, prompts, { ...o, sharePrefill: false });
      const b = await generate(model, prompts, o);
      expect(b.map((g) => g.tokens)).toEqual(a.map((g) => g.tokens));
      adapter.dispose();
      model.dispose();
    });
  }
});
