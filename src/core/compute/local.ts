/**
 * The Compute interface (./compute.ts) on this thread: the log-prob passes and PPO gradients of
 * rl/ on the model, and passes of the team played with loop/rollout.ts. Each job is run as it comes,
 * in order; the lanes' side (./lane-server.ts) runs its share with this same class, so a share
 * computed on a lane is bit-equal to the same share computed here.
 *
 * For: runs on one thread (the default), and the lane side of LaneCompute. Not for: sharing work.
 *
 * Example: const compute = LocalCompute.forTeam({ agentModel, tools });
 *          const [logp] = await compute.logProbs([{ adapter: null, ids: [[1, 5, 6]], mask: [[1, 1, 1]], positions: [0, 1] }]);
 *          // logp = [log p(5 | 1), log p(6 | 1 5)] under the base model
 */
import * as tf from '@tensorflow/tfjs-core';
import type { LoraAdapter } from '../engine/lora/adapter.ts';
import { adapterFromValues } from '../engine/lora/adapter-values.ts';
import type { CausalLM } from '../engine/model/llama.ts';
import { positionLogProbs } from '../rl/batches.ts';
import { ppoLoss } from '../rl/ppo.ts';
import { EngineAgents } from '../loop/agents.ts';
import type { TrainConfig } from '../loop/config.ts';
import { runRollouts, type Trajectory } from '../loop/rollout.ts';
import { domainOf } from '../domains/index.ts';
import type { Compute, Gradient, GradientJob, LogProbJob, PlayOptions, TeamParts, TeamPass } from './compute.ts';

export class LocalCompute implements Compute {
  readonly spare = false;

  /** `team`: the parts a pass of a workflow needs (absent: this compute serves the update alone). */
  constructor(readonly model: CausalLM, private readonly team?: (config: TrainConfig) => Promise<TeamParts>) {}

  /** A compute for a run whose team plays with these parts. */
  static forTeam(parts: TeamParts): LocalCompute {
    return new LocalCompute(parts.agentModel.model, async () => parts);
  }

  async logProbs(jobs: LogProbJob[]): Promise<Float32Array[]> {
    const out: Float32Array[] = [];
    for (const j of jobs) out.push(await positionLogProbs(this.model, j.ids, j.mask, j.positions, j.adapter));
    return out;
  }

  async gradients(adapter: LoraAdapter, jobs: GradientJob[]): Promise<Gradient[]> {
    const vars = adapter.variables();
    const out: Gradient[] = [];
    for (const j of jobs) {
      const sideOut: tf.Tensor1D[] = [];
      const { value, grads } = tf.variableGrads(() => ppoLoss(this.model, adapter, j.batch, j.clipEps, j.tokenCount, sideOut), vars);
      const loss = (await value.data())[0];
      const side = Array.from(await sideOut[0].data()) as [number, number, number];
      tf.dispose([value, ...sideOut]);
      out.push({ loss, grads: vars.map((v) => grads[v.name]), side });
    }
    return out;
  }

  async play(passes: TeamPass[], opts: PlayOptions = {}): Promise<Trajectory[][]> {
    const out: Trajectory[][] = [];
    for (const p of passes) out.push(await this.playOne(p, opts));
    return out;
  }

  /** One pass: the adapters made from their values for the pass, the team played, the adapters freed. */
  private async playOne(pass: TeamPass, opts: PlayOptions): Promise<Trajectory[]> {
    if (!this.team) throw new Error('this compute was made for the update alone; it cannot play the team');
    const parts = await this.team(pass.config);
    const adapters = new Map<string, LoraAdapter>();
    for (const [id, v] of pass.adapters) if (v) adapters.set(id, adapterFromValues(parts.agentModel.config, v));
    try {
      const agents = new EngineAgents(parts.agentModel, adapters);
      agents.onProgress = opts.onProgress;
      agents.signal = opts.signal;
      return await runRollouts(pass.config.workflow, pass.tasks, {
        agents, tools: parts.tools, outcome: domainOf(pass.config.workflow).outcome, samplesPerTask: pass.samplesPerTask,
        temperature: pass.temperature, seed: pass.seed, toolTimeoutMs: pass.config.toolTimeoutMs,
      });
    } finally {
      for (const a of adapters.values()) a.dispose();
    }
  }
}

/** This thread alone, for the update of `model` (benchmarks and tests that update without a team). */
export function thisThread(model: CausalLM): LocalCompute {
  return new LocalCompute(model);
}
