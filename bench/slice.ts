/**
 * The wasm Slice kernel that copies only the slice (src/core/engine/kernels/wasm-slice.ts) against tfjs'
 * stock one, on the embedded default's real work: one math-team rollout (the shipped agent model,
 * P problems x 1 sample, every agent and turn, Python tool calls included) and one policy update on
 * its actions. The two kernels alternate round by round in one process, so a load that changes
 * during the run shifts both alike; the ratio of their medians is the figure.
 *
 * For: `npm run bench -- slice [--rounds 3] [--prompts 8]`, a markdown table on stdout. Not for: the
 * kernel's correctness (test/unit/kernels/wasm-slice.test.ts checks it against cpu and the stock kernel).
 * Example: npm run -s bench -- slice --rounds 3 > bench/results/slice-wasm.md
 */
import os from 'node:os';
import { describeBackend, initBackend } from '../src/core/engine/backend.ts';
import { registerWasmSlice, unregisterWasmSlice } from '../src/core/engine/kernels/wasm-slice.ts';
import { LoraAdapter } from '../src/core/engine/lora/adapter.ts';
import { EngineAgents } from '../src/core/loop/agents.ts';
import { buildCoach } from '../src/core/coach/coaches.ts';
import { teamOf, resolveTrainConfig } from '../src/core/domains/index.ts';
import { coachTrajectories, trainSamples } from '../src/core/loop/rewards.ts';
import { runRollouts } from '../src/core/loop/rollout.ts';
import { generateMathTasks } from '../src/core/domains/math/tasks.ts';
import { AdamW } from '../src/core/rl/adamw.ts';
import { policyUpdate } from '../src/core/rl/update.ts';
import { thisThread } from '../src/core/compute/local.ts';
import { createSandbox } from '../src/core/tools/code-sandbox.ts';
import { openModel } from '../src/cli/common.ts';

function option(argv: string[], name: string, fallback: number): number {
  const i = argv.indexOf(`--${name}`);
  if (i < 0) return fallback;
  const v = Number(argv[i + 1]);
  if (!Number.isInteger(v) || v < 1) throw new Error(`bench slice: --${name} needs a positive integer, got "${argv[i + 1]}"`);
  return v;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

export async function main(argv: string[]): Promise<void> {
  const rounds = option(argv, 'rounds', 3);
  const prompts = option(argv, 'prompts', 8);
  const info = await initBackend({ force: 'wasm' });
  const config = resolveTrainConfig({});
  const model = await openModel(config.agentModel, { tokenizer: 'required' });
  const sandbox = createSandbox();
  const coach = await buildCoach(config.coach, () => Promise.reject(new Error('rule coach only')), teamOf(config.workflow));
  const tasks = generateMathTasks({ seed: 'bench-slice', count: prompts });
  const times: Record<'stock' | 'project', { rollout: number[]; update: number[] }> = { stock: { rollout: [], update: [] }, project: { rollout: [], update: [] } };
  try {
    for (let r = 0; r < rounds; r++) {
      for (const kind of ['stock', 'project'] as const) {
        if (kind === 'stock') unregisterWasmSlice();
        else registerWasmSlice();
        // Fresh adapters each time: both kernels do exactly the same work.
        const policies = new Map(config.workflow.agents.map((a) => {
          const adapter = LoraAdapter.create(model.config, config.lora, a.id, 0);
          return [a.id, { adapter, optimizer: new AdamW(adapter.variables(), { lr: config.lr }), trainable: true }];
        }));
        const agents = new EngineAgents(model, new Map([...policies].map(([id, p]) => [id, p.adapter])));
        let t0 = performance.now();
        const trajs = await runRollouts(config.workflow, tasks, { agents, tools: { python: sandbox, javascript: sandbox }, samplesPerTask: 1, temperature: 1, seed: r, toolTimeoutMs: config.toolTimeoutMs,
          outcome: teamOf(config.workflow).outcome });
        times[kind].rollout.push((performance.now() - t0) / 1000);
        const { coached } = await coachTrajectories(config.workflow, trajs, coach, config.rewards);
        const { samples } = trainSamples(config.workflow, trajs, coached, config.rewards, () => true);
        t0 = performance.now();
        await policyUpdate(thisThread(model.model), policies, samples, config.update);
        times[kind].update.push((performance.now() - t0) / 1000);
        for (const p of policies.values()) {
          p.adapter.dispose();
          p.optimizer.dispose();
        }
        process.stderr.write(`[bench slice] round ${r + 1} ${kind}: rollout ${times[kind].rollout.at(-1)!.toFixed(1)} s, update ${times[kind].update.at(-1)!.toFixed(1)} s\n`);
      }
    }
  } finally {
    registerWasmSlice();
    await sandbox.dispose();
    model.model.dispose();
  }
  const row = (what: 'rollout' | 'update') => {
    const s = median(times.stock[what]);
    const p = median(times.project[what]);
    return `| ${what} | ${s.toFixed(2)} | ${p.toFixed(2)} | **${(s / p).toFixed(2)}x** |`;
  };
  process.stdout.write([
    '# wasm Slice: stock kernel vs the project\'s (heap-view copy)', '',
    `- backend: ${describeBackend(info)}; machine: ${os.cpus().length} cores, Node ${process.version}`,
    `- work: the embedded default's math team (models/agent), ${prompts} problems x 1 sample at T = 1 (every agent and turn, Python tool calls), then one policy update on its actions; kernels alternated for ${rounds} rounds, medians`, '',
    '| phase | stock Slice (s) | project Slice (s) | speed-up |', '|---|---:|---:|---:|', row('rollout'), row('update'), '',
  ].join('\n'));
}
