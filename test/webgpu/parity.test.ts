/**
 * The engine on real WebGPU in Node (Dawn on SwiftShader): parity fixtures' logits within 1e-3 of
 * transformers, greedy continuation identical, KV-cache decoding equal to recomputation, LoRA
 * fixture. Skips loudly without Debian's chromium (which ships the SwiftShader Vulkan driver).
 */
import * as tf from '@tensorflow/tfjs-core';
import path from 'node:path';
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../src/core/engine/backend.ts';
import { importPeft } from '../../src/core/engine/lora/peft.ts';
import { generate } from '../../src/core/engine/model/generate.ts';
import { loadModel } from '../../src/core/engine/model/load.ts';
import { scoreSequences } from '../../src/core/engine/model/score.ts';
import { folderSource } from '../../src/core/engine/model/sources.ts';
import { PARITY, maxAbsDiff, readReference } from '../helpers/fixtures.ts';
import { warnIfSkipped, webgpuAvailable } from '../helpers/webgpu.ts';

const gpu = webgpuAvailable();
warnIfSkipped('WebGPU engine parity suite (test/webgpu/parity.test.ts)', gpu);

describe.skipIf(!gpu.ok)('engine parity on WebGPU (Node, Dawn + SwiftShader)', () => {
  beforeAll(async () => {
    const info = await initBackend({ force: 'webgpu' });
    expect(info.name).toBe('webgpu');
  });

  for (const name of ['llama', 'qwen2']) {
    it(`${name}: logits within 1e-3 of transformers, greedy identical, no leaks`, async () => {
      const { model } = await loadModel(folderSource(path.join(PARITY, name)));
      const ref = readReference(name);
      const before = tf.memory().numTensors;
      for (const c of ['short', 'long'] as const) {
        const { logits } = model.forward([ref.cases[c].input_ids]);
        const got = ((await logits.array()) as number[][][])[0];
        logits.dispose();
        expect(maxAbsDiff(got, ref.cases[c].logits)).toBeLessThan(1e-3);
      }
      const [g] = await generate(model, [ref.greedy.prompt_ids], { maxNewTokens: ref.greedy.max_new_tokens, temperature: 0 });
      expect(g.tokens).toEqual(ref.greedy.new_ids);
      expect(tf.memory().numTensors).toBe(before);
      model.dispose();
    });
  }

  it('a vocabulary table held in row blocks (as a small binding limit makes it) gives the same logits on webgpu (within 1e-5: the matmul tiles by output width)', async () => {
    for (const name of ['llama', 'qwen2']) {
      const whole = await loadModel(folderSource(path.join(PARITY, name)));
      const split = await loadModel(folderSource(path.join(PARITY, name)), { maxTensorBytes: 25 * whole.config.hiddenSize * 4 });
      expect(split.model.weights.has('model.embed_tokens.weight#3')).toBe(true);
      const ids = readReference(name).cases.long.input_ids;
      const a = whole.model.forward([ids]).logits;
      const b = split.model.forward([ids]).logits;
      expect(maxAbsDiff((await a.array())[0], (await b.array())[0])).toBeLessThan(1e-5);
      tf.dispose([a, b]);
      whole.model.dispose();
      split.model.dispose();
    }
  });

  it('KV-cache decode equals recomputation, and the PEFT fixture matches, on webgpu', async () => {
    const { model, config } = await loadModel(folderSource(path.join(PARITY, 'qwen2')));
    const prompt = readReference('qwen2').cases.short.input_ids;
    const [g] = await generate(model, [prompt], { maxNewTokens: 32, temperature: 1, seed: 4 });
    const [lp] = await scoreSequences(model, [[...prompt, ...g.tokens]]);
    expect(maxAbsDiff([lp.slice(prompt.length - 1)], [g.logprobs])).toBeLessThan(1e-3);
    const lora = JSON.parse(readFileSync(path.join(PARITY, 'qwen2_lora/reference.json'), 'utf8'));
    const adapter = await importPeft(folderSource(path.join(PARITY, 'qwen2_lora')), config, 'peft');
    const { logits } = model.forward([lora.input_ids], { adapter });
    expect(maxAbsDiff(((await logits.array()) as number[][][])[0], lora.logits_unmerged)).toBeLessThan(1e-3);
    logits.dispose();
    adapter.dispose();
    model.dispose();
  });
});
