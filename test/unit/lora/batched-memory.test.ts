/**
 * The memory plan counts every trained adapter: each agent's LoRA weights and two AdamW moments, and
 * the gradient sets held at once (one per agent at a time, or every agent's in the batched update);
 * a team whose adapters do not fit is refused with what to change. Worked by hand on the relay model.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/core/engine/model/config.ts';
import { fitsLimits, loraParameters, planMemory } from '../../../src/core/engine/model/memory-plan.ts';
import { resolveTrainConfig } from '../../../src/core/domains/index.ts';
import { runSettings, WASM_HEAP } from '../../../src/core/measure/run-plan.ts';

const relay = parseConfig(JSON.parse(readFileSync(new URL('../../../models/relay/config.json', import.meta.url), 'utf8')));

describe('the memory plan of a team of adapters', () => {
  it('counts N adapters with their moments, and N gradient sets when batched', () => {
    const run = { rows: 16, promptTokens: 32, actionTokens: 4, rank: 8 };
    // q, k, v, o over 2 layers of hidden 64 (q 64, kv 32): 2 x 8 x ((64 + 64) + 2 x (64 + 32) + (64 + 64)) = 7168 parameters.
    expect(loraParameters(relay, 8, ['q_proj', 'k_proj', 'v_proj', 'o_proj'])).toBe(7168);
    expect(planMemory(relay, run).lora).toBe(7168 * 4 * 4); // one adapter: weights, 2 moments, 1 gradient
    expect(planMemory(relay, { ...run, adapters: 128 }).lora).toBe(7168 * 4 * (3 * 128 + 1));
    expect(planMemory(relay, { ...run, adapters: 128, batchedUpdate: true }).lora).toBe(7168 * 4 * 4 * 128);
    expect(() => planMemory(relay, { ...run, adapters: 0 })).toThrow(/adapters must be a positive whole number/);
  });

  it('reads the trained agents and the update mode from a config', () => {
    const c = resolveTrainConfig(JSON.parse(readFileSync(new URL('../../../configs/relay-128.json', import.meta.url), 'utf8')));
    expect(runSettings(relay, c, 'wasm')).toMatchObject({ adapters: 128, batchedUpdate: false });
    const frozen = { ...c, workflow: { ...c.workflow, agents: c.workflow.agents.map((a, i) => ({ ...a, trainable: i < 10 })) } };
    expect(runSettings(relay, frozen, 'wasm').adapters).toBe(10);
  });

  it('refuses a team whose adapters do not fit, saying what to change', () => {
    const big = parseConfig({ model_type: 'llama', hidden_size: 1024, intermediate_size: 4096, num_hidden_layers: 16, num_attention_heads: 16,
      num_key_value_heads: 16, vocab_size: 32000, max_position_embeddings: 2048 });
    const run = { rows: 16, promptTokens: 64, actionTokens: 8, rank: 64, targets: ['q_proj', 'k_proj', 'v_proj', 'o_proj'] as const };
    expect(fitsLimits(planMemory(big, { ...run, targets: [...run.targets], adapters: 1 }), { memory: WASM_HEAP }).fits).toBe(true);
    const v = fitsLimits(planMemory(big, { ...run, targets: [...run.targets], adapters: 128, batchedUpdate: true }), { memory: WASM_HEAP });
    expect(v.fits).toBe(false);
    expect(v.problems[0]).toMatch(/128 adapters with their AdamW moments and gradients take \d+ MiB: train fewer agents, lower the LoRA rank \(now 64\)/);
    expect(v.problems[0]).toMatch(/or update per agent \(update\.batched false\)$/);
  });
});
