// Browser check: the parity fixtures (tiny HF checkpoints) run on the harness' backend in Chromium;
// returns the largest logit difference to transformers' reference and the greedy continuation.

import * as tf from '@tensorflow/tfjs-core';
import { generate } from '../../../src/core/engine/model/generate.ts';
import { loadModel } from '../../../src/core/engine/model/load.ts';
import { memorySource } from '../../../src/core/engine/model/sources.ts';
import type { HarnessCheck } from '../harness-types.ts';

interface Reference {
  cases: Record<'short' | 'long', { input_ids: number[]; logits: number[][] }>;
  greedy: { prompt_ids: number[]; new_ids: number[]; max_new_tokens: number };
}

export const check: HarnessCheck = {
  name: 'parity',
  description: 'llama and qwen2 fixtures: all-position logits vs transformers, greedy continuation',
  async run(ctx) {
    const out: Record<string, unknown> = {};
    for (const name of ['llama', 'qwen2']) {
      const dir = `parity/${name}`;
      const source = memorySource({
        'config.json': await ctx.fetchBytes(`${dir}/config.json`),
        'model.safetensors': await ctx.fetchBytes(`${dir}/model.safetensors`),
      }, dir);
      const ref = await ctx.fetchJson<Reference>(`${dir}/reference.json`);
      const { model } = await loadModel(source);
      const before = tf.memory().numTensors;
      let maxAbsDiff = 0;
      for (const c of ['short', 'long'] as const) {
        const { logits } = model.forward([ref.cases[c].input_ids]);
        const got = ((await logits.array()) as number[][][])[0];
        logits.dispose();
        got.forEach((row, t) => row.forEach((v, j) => (maxAbsDiff = Math.max(maxAbsDiff, Math.abs(v - ref.cases[c].logits[t][j])))));
      }
      const [g] = await generate(model, [ref.greedy.prompt_ids], { maxNewTokens: ref.greedy.max_new_tokens, temperature: 0 });
      out[name] = { maxAbsDiff, greedyEqual: JSON.stringify(g.tokens) === JSON.stringify(ref.greedy.new_ids), leaked: tf.memory().numTensors - before };
      model.dispose();
    }
    return out;
  },
};
