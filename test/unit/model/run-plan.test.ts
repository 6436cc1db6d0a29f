/**
 * The run's memory plan (src/core/measure/run-plan.ts): the settings it derives from a training config,
 * worked by hand from the agents' budgets, the limits per backend, and a run that a WebGPU device with
 * a small binding limit must refuse with a message that says what to change.
 */
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/core/engine/model/config.ts';
import { planMemory } from '../../../src/core/engine/model/memory-plan.ts';
import { resolveTrainConfig } from '../../../src/core/domains/index.ts';
import { deviceLimits, planRun, runSettings, PROMPT_BASE, WASM_HEAP } from '../../../src/core/measure/run-plan.ts';
import { shapeConfig } from '../../../src/core/engine/model/shapes.ts';
import { relayConfig } from '../../../src/core/domains/relay/team.ts';

// SmolLM2-135M's widths with 2 layers (vocab 49152, hidden 576, 9 heads, 3 KV heads, tied).
const smol = parseConfig({
  model_type: 'llama', hidden_size: 576, intermediate_size: 1536, num_hidden_layers: 2, num_attention_heads: 9,
  num_key_value_heads: 3, vocab_size: 49152, tie_word_embeddings: true, max_position_embeddings: 8192,
});

describe('run plan', () => {
  it('derives rows and token budgets from the default math chain by hand', () => {
    const c = resolveTrainConfig({});
    const budgets = c.workflow.agents.map((a) => [a.maxTokens, a.turns]);
    expect(budgets).toEqual([[96, 1], [96, 2], [48, 1]]); // solver, executor (2 turns), verifier
    const s = runSettings(smol, c, 'wasm');
    // rows: 12 prompts x 2 samples = 24, capped at the 16 rows the engine decodes at once.
    // prompt: the verifier's holds the solver's 96 and the executor's 2 x 96 = 288, + 256 of base text.
    expect(s).toMatchObject({ rows: 16, promptTokens: PROMPT_BASE + 288, actionTokens: 96, rank: 8, microBatch: 4, backend: 'wasm' });
    expect(s.targets).toEqual(c.lora.targetModules);
  });

  it('caps the prompt at the model context and follows the relay team', () => {
    const small = parseConfig({ ...JSON.parse(JSON.stringify({ model_type: 'llama', hidden_size: 8, intermediate_size: 16, num_hidden_layers: 1,
      num_attention_heads: 2, num_key_value_heads: 1, vocab_size: 32 })), max_position_embeddings: 100 });
    const relay = resolveTrainConfig(relayConfig(4) as never);
    const s = runSettings(small, relay, 'cpu');
    expect(s.promptTokens).toBe(100);
    expect(s.rows).toBe(Math.min(relay.promptsPerIteration * relay.samplesPerPrompt, 16));
  });

  it('gives each backend its limits', () => {
    expect(deviceLimits('wasm')).toEqual({ memory: WASM_HEAP });
    expect(deviceLimits('cpu')).toEqual({});
    expect(deviceLimits('webgpu', { maxStorageBufferBindingSize: 128 << 20, maxBufferSize: 256 << 20 }))
      .toEqual({ maxStorageBufferBindingSize: 128 << 20, maxBufferSize: 256 << 20 });
  });

  it('plans the same bytes as planMemory, and refuses a buffer over a small binding limit with what to do', () => {
    const c = resolveTrainConfig({});
    const p = planRun(smol, c, 'webgpu', deviceLimits('webgpu', { maxStorageBufferBindingSize: 64 << 20, maxBufferSize: 256 << 20 }));
    expect(p.peak).toBe(planMemory(smol, runSettings(smol, c, 'webgpu')).peak);
    // The prefill's [16, 9, 544, 544] scores block is 163 MiB, over a 64 MiB binding. The tied embedding
    // [49152, 576] (108 MiB) is too, but the loader holds it in two row blocks, so it is no problem.
    expect(p.fits).toBe(false);
    expect(p.problems.join('\n')).toMatch(/prefill attention scores \[16, 9, 544, 544\] is 163 MiB, over the 64 MiB storage binding limit.*split/);
    expect(p.problems.join('\n')).not.toMatch(/49152/);
    // Qwen2.5-0.5B's 519 MiB embedding under WebGPU's default limits: 5 row blocks, said in the plan's line.
    const qwen = planRun(shapeConfig('qwen2.5-0.5b', 2), c, 'webgpu', deviceLimits('webgpu', { maxStorageBufferBindingSize: 128 << 20, maxBufferSize: 256 << 20 }));
    expect(qwen.line).toMatch(/largest buffer 519 MiB \(embedding \(tied output projection\) \[151936, 896\], held in 5 row blocks\)/);
    expect(p.line).toMatch(/^peak up to \d+ MiB \(update \d+, rollout \d+; weights \d+\); largest buffer \d+ MiB \(/);
    const roomy = planRun(smol, c, 'webgpu', deviceLimits('webgpu', { maxStorageBufferBindingSize: 1 << 30, maxBufferSize: 1 << 30 }));
    expect(roomy).toMatchObject({ fits: true, problems: [] });
  });
});

describe('promptBase', () => {
  it('counts the chat-encoded system and user prompt with the problem in and hand-overs empty', async () => {
    const { TextTokenizer } = await import('../../../src/core/engine/tokenizer/tokenizer.ts');
    const fs = await import('node:fs');
    const tok = TextTokenizer.fromJson(JSON.parse(fs.readFileSync('models/agent/tokenizer.json', 'utf8')),
      JSON.parse(fs.readFileSync('models/agent/tokenizer_config.json', 'utf8')));
    const { MATH_CHAIN } = await import('../../../src/core/domains/math/index.ts');
    const { promptBase } = await import('../../../src/core/measure/run-plan.ts');
    const w = { ...MATH_CHAIN, agents: [{ ...MATH_CHAIN.agents[0], system: 'You are {{role}}.', user: 'Task: {{problem}}{{output:x}}' }] };
    const expected = tok.encodeChat([{ role: 'system', content: `You are ${MATH_CHAIN.agents[0].role}.` }, { role: 'user', content: 'Task: 2+2?' }], { addGenerationPrompt: true }).length;
    expect(promptBase(tok, w, { problem: '2+2?' })).toBe(expected);
    // The default chain on a real problem: the longest base prompt is a few hundred tokens at most.
    const base = promptBase(tok, MATH_CHAIN, { problem: 'What is 17 * 23 + 4?' });
    expect(base).toBeGreaterThan(30);
    expect(base).toBeLessThan(400);
  });
});
