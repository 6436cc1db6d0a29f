// The MARTI export's batch sizes against their sample filter (filter_agents_data, multi_agent_controller.py
// generate_shared_samples): the arithmetic by hand, the shipped layout, and the layouts the export refuses.
// The same arithmetic running in their own code is scripts/marti-dry-run.sh (needs their checkout; not in npm test).
import { describe, expect, it } from 'vitest';
import { resolveTrainConfig } from '../../../src/core/domains/index.ts';
import { MATH_CHAIN } from '../../../src/core/domains/math/index.ts';
import { exportMarti, filterKeeps, martiBatches, MartiExportError } from '../../../src/interop/marti.ts';

describe('MARTI export: batch sizes their filter keeps whole', () => {
  it('filterKeeps follows their lines: whole micro-batches, then whole train batches of one GPU\'s count', () => {
    expect(filterKeeps(12, 8, 24)).toBe(0); // the old export: 12 x 2 over 2 GPUs, train batch 24 (issue's [0, 0, 0])
    expect(filterKeeps(32, 8, 16)).toBe(32); // their stock sizes: 32 prompts x 2 over 2 GPUs, train batch 16
    expect(filterKeeps(23, 8, 16)).toBe(16); // 23 // 8 = 2 micro-batches = 16 samples, 16 // 16 = 1 train batch
    expect(filterKeeps(24, 4, 8)).toBe(24);
  });

  it('the shipped layout: 1 GPU per agent, filter off, one optimizer step of 24', () => {
    const b = martiBatches(resolveTrainConfig({}), 360);
    // microTrain 1: the Executor's count varies, and their PPO loop drops a last partial micro-batch.
    expect(b).toMatchObject({ gpus: 1, filter: false, trainBatch: 24, microTrain: 1 });
    const yaml = exportMarti(resolveTrainConfig({}), { source: 'x' }).files['mappa_mathchat.yaml'];
    expect(yaml).toMatch(/\nfilter_agents_data: false\n/);
    expect(yaml).toMatch(/actor_num_gpus_per_node: 1\n/);
  });

  it('refuses 2 GPUs for a team whose Executor takes 1 or 2 actions, and a power of two is required', () => {
    expect(() => martiBatches(resolveTrainConfig({}), 360, 2)).toThrow(MartiExportError);
    expect(() => martiBatches(resolveTrainConfig({}), 360, 2)).toThrow(/^--gpus-per-agent 2: agent "executor" takes 1 to 2 actions per trajectory/);
    expect(() => martiBatches(resolveTrainConfig({}), 360, 3)).toThrow(/^--gpus-per-agent 3: must be a power of two/);
  });

  it('with one action per agent, 2 GPUs are kept whole only when the train batch is one GPU\'s share', () => {
    const oneTurn = { ...MATH_CHAIN, agents: MATH_CHAIN.agents.map((a) => ({ ...a, turns: 1 })) };
    const one = resolveTrainConfig({ workflow: oneTurn });
    expect(() => martiBatches(one, 360, 2)).toThrow(/filter_agents_data would keep 0 of each agent's 12 samples per GPU .* update.miniBatches/);
    const two = resolveTrainConfig({ workflow: oneTurn, update: { miniBatches: 2 } });
    const b = martiBatches(two, 360, 2);
    expect(b).toMatchObject({ gpus: 2, filter: true, trainBatch: 12 });
    expect(filterKeeps(12, b.microRollout, b.trainBatch)).toBe(12);
  });
});
