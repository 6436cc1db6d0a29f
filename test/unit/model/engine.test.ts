/**
 * The engine against Hugging Face `transformers`: all-position logits of the parity fixtures on the
 * `cpu` and `wasm` backends (1e-4), greedy continuation identical, KV-cache decoding equal to full
 * recomputation, a padded batch equal to single runs, and no tensor leaks.
 */
import * as tf from '@tensorflow/tfjs-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend, type BackendName } from '../../../src/core/engine/backend.ts';
import { generate, promptBatches } from '../../../src/core/engine/model/generate.ts';
import { loadModel, type LoadedModel } from '../../../src/core/engine/model/load.ts';
import { scoreSequences } from '../../../src/core/engine/model/score.ts';
import { folderSource } from '../../../src/core/engine/model/sources.ts';
import { PARITY, maxAbsDiff, readReference } from '../../helpers/fixtures.ts';
import path from 'node:path';

for (const backend of ['cpu', 'wasm'] as BackendName[]) {
  describe(`engine on ${backend}`, () => {
    const models: Record<string, LoadedModel> = {};
    beforeAll(async () => {
      await initBackend({ force: backend });
      for (const name of ['llama', 'qwen2']) models[name] = await loadModel(folderSource(path.join(PARITY, name)));
    });
    afterAll(() => {
      for (const m of Object.values(models)) m.model.dispose();
    });

    for (const name of ['llama', 'qwen2']) {
      it(`${name}: logits at every position match transformers within 1e-4`, async () => {
        const ref = readReference(name);
        for (const c of ['short', 'long'] as const) {
          const { logits } = models[name].model.forward([ref.cases[c].input_ids]);
          const got = ((await logits.array()) as number[][][])[0];
          logits.dispose();
          expect(maxAbsDiff(got, ref.cases[c].logits)).toBeLessThan(1e-4);
        }
      });

      it(`${name}: next-token log-probs match transformers`, async () => {
        const ref = readReference(name);
        const want = ref.cases.long.next_token_logprobs!;
        const [got] = await scoreSequences(models[name].model, [ref.cases.long.input_ids]);
        expect(got.length).toBe(want.length);
        expect(maxAbsDiff([got], [want])).toBeLessThan(1e-4);
      });

      it(`${name}: greedy continuation is identical`, async () => {
        const ref = readReference(name);
        const [g] = await generate(models[name].model, [ref.greedy.prompt_ids], { maxNewTokens: ref.greedy.max_new_tokens, temperature: 0 });
        expect(g.tokens).toEqual(ref.greedy.new_ids);
      });
    }

    it('KV-cache decoding equals full recomputation over 32 steps (logits within 1e-4)', async () => {
      const m = models.llama.model;
      const prompt = readReference('llama').cases.short.input_ids;
      // Sample with a fixed seed through the cache, then recompute the whole sequence once.
      const [g] = await generate(m, [prompt], { maxNewTokens: 32, temperature: 1, seed: 3 });
      const [full] = await generate(m, [prompt], { maxNewTokens: 32, temperature: 1, seed: 3, useCache: false });
      expect(full.tokens).toEqual(g.tokens);
      const seq = [...prompt, ...g.tokens];
      const [lp] = await scoreSequences(m, [seq]);
      const recomputed = lp.slice(prompt.length - 1); // log p of each generated token
      expect(maxAbsDiff([recomputed], [g.logprobs])).toBeLessThan(1e-4);
      expect(maxAbsDiff([full.logprobs], [g.logprobs])).toBeLessThan(1e-4);
    });

    it('a padded batch gives the same tokens and log-probs as one prompt at a time', async () => {
      const m = models.qwen2.model;
      const prompts = [[5, 9, 33, 2, 17, 80, 4], [61], [12, 12, 40]];
      const batch = await generate(m, prompts, { maxNewTokens: 10, temperature: 0 });
      for (let i = 0; i < prompts.length; i++) {
        const [single] = await generate(m, [prompts[i]], { maxNewTokens: 10, temperature: 0 });
        expect(batch[i].tokens).toEqual(single.tokens);
        expect(maxAbsDiff([batch[i].logprobs], [single.logprobs])).toBeLessThan(1e-4);
      }
      // Scoring with padding masks equals unpadded scoring too.
      const ids = [[0, 0, 0, 0, 61, 8, 3, 7], [5, 9, 33, 2, 17, 80, 4, 1]];
      const mask = [[0, 0, 0, 0, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1, 1, 1]];
      const [padded] = await scoreSequences(m, ids, { attentionMask: mask });
      const [alone] = await scoreSequences(m, [[61, 8, 3, 7]]);
      expect(maxAbsDiff([padded.slice(4)], [alone])).toBeLessThan(1e-4);
    });

    it('stops on EOS and on stop strings, and respects the token budget', async () => {
      const m = models.llama.model;
      const ref = readReference('llama');
      const eos = ref.greedy.new_ids[3];
      const events: string[] = [];
      const [g] = await generate(m, [ref.greedy.prompt_ids], { maxNewTokens: 12, temperature: 0, eosTokenIds: [eos],
        onProgress: (p) => events.push(`${p.phase} ${p.done}/${p.total} rows ${p.rows} tokens ${p.tokens}`) });
      expect(g.finishReason).toBe('eos');
      const T = ref.greedy.prompt_ids.length;
      // pre-fill start and end, then one event per decoding step until EOS (the 4th token)
      expect(events).toEqual([`prefill 0/1 rows 1 tokens ${T}`, `prefill 1/1 rows 1 tokens ${T}`, 'decode 1/11 rows 1 tokens 0', 'decode 2/11 rows 1 tokens 0', 'decode 3/11 rows 1 tokens 0']);
      expect(g.tokens).toEqual(ref.greedy.new_ids.slice(0, 4));
      const decode = (ids: number[]) => ids.map((i) => `<${i}>`).join('');
      const stop = `<${ref.greedy.new_ids[2]}>`;
      const [s] = await generate(m, [ref.greedy.prompt_ids], { maxNewTokens: 12, temperature: 0, stopStrings: [stop], decode });
      expect(s.finishReason).toBe('stop');
      expect(s.text).toBe(decode(ref.greedy.new_ids.slice(0, 2)));
      const [l] = await generate(m, [ref.greedy.prompt_ids], { maxNewTokens: 5, temperature: 0 });
      expect(l.finishReason).toBe('length');
      expect(l.tokens.length).toBe(5);
    });

    it('sampling is reproducible per seed and differs across seeds', async () => {
      const m = models.llama.model;
      const opts = { maxNewTokens: 16, temperature: 1, topK: 20, topP: 0.9 };
      const a = await generate(m, [[1, 2, 3]], { ...opts, seed: 7 });
      const b = await generate(m, [[1, 2, 3]], { ...opts, seed: 7 });
      const c = await generate(m, [[1, 2, 3]], { ...opts, seed: 8 });
      expect(a[0].tokens).toEqual(b[0].tokens);
      expect(a[0].tokens).not.toEqual(c[0].tokens);
    });

    it('leaks no tensors across generate and scoring calls', async () => {
      const m = models.qwen2.model;
      await generate(m, [[1, 2, 3], [4]], { maxNewTokens: 6, temperature: 1, seed: 1 }); // warm-up
      const before = tf.memory().numTensors;
      await generate(m, [[1, 2, 3], [4]], { maxNewTokens: 6, temperature: 1, seed: 1 });
      await generate(m, [[1, 2, 3]], { maxNewTokens: 4, temperature: 0, useCache: false });
      await scoreSequences(m, [[1, 2, 3, 4], [5, 6, 7, 8]], { attentionMask: [[1, 1, 1, 1], [0, 1, 1, 1]] });
      expect(tf.memory().numTensors).toBe(before);
    });
  });
}

describe('promptBatches', () => {
  it('bounds rows and rows x longest^2, keeping order', () => {
    expect(promptBatches([100, 100, 2000], 16, 4_000_000)).toEqual([[0, 1], [2]]);
    expect(promptBatches([10, 10, 10, 10, 10], 2)).toEqual([[0, 1], [2, 3], [4]]);
    // 3 x 1000^2 = 3e6 fits 3.5e6; a fourth row does not
    expect(promptBatches([1000, 1000, 1000, 1000], 16, 3_500_000)).toEqual([[0, 1, 2], [3]]);
    expect(promptBatches([5000], 16, 100)).toEqual([[0]]); // one row always goes, however long
    expect(promptBatches([], 4)).toEqual([]);
  });
});
