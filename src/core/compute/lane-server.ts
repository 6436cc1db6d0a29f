/**
 * The lane side of LaneCompute (./lanes.ts): what travels to a lane thread, and how the lane
 * answers it. A lane holds a replica of the base model and runs every job with LocalCompute, the
 * same code the posting thread runs, so its share of the work is bit-equal to the same share done
 * there. Adapters travel as values and are kept by name between jobs, overwritten by each job's
 * values, so a lane holds no state that matters.
 *
 * For: the shells' lane threads (src/cli/train-workers.ts, src/worker/lane-worker.ts), which start
 * a LaneServer on their replica and serve it with serveLaneJobs (./lane-pool.ts).
 * Not for: deciding what runs where (./lanes.ts).
 *
 * Example (lane side): const server = new LaneServer(model, (config) => partsFor(config));
 *                      serveLaneJobs(endpoint, (job) => server.handle(job), laneTransfer);
 */
import * as tf from '@tensorflow/tfjs-core';
import { LoraAdapter } from '../engine/lora/adapter.ts';
import { assignValues, concatValues, type AdapterValues } from '../engine/lora/adapter-values.ts';
import type { CausalLM } from '../engine/model/llama.ts';
import type { TeamParts, TeamPass } from '../loop/rollout.ts';
import type { Trajectory } from '../loop/trajectory.ts';
import type { PlayedTeam } from '../loop/team.ts';
import type { GradientJob } from '../rl/ppo.ts';
import { LocalCompute } from './local.ts';

/** A job as it travels: Compute's jobs with adapters as values. */
export type LaneJob =
  | { kind: 'logprobs'; adapter: AdapterValues | null; ids: number[][]; mask: number[][]; positions: number[]; prefixGroups?: number[] }
  | { kind: 'gradients'; adapter: AdapterValues; job: GradientJob }
  | { kind: 'play'; pass: TeamPass };

/** A lane's answer: the job's result, or (to a shell's boot message) that the replica is loaded. */
export type LaneResult =
  | { kind: 'logprobs'; logp: Float32Array }
  | { kind: 'gradients'; loss: number; grads: Float32Array; side: [number, number, number] }
  | { kind: 'play'; trajectories: Trajectory[] }
  | { kind: 'ready' };

/** The buffers of a result to transfer rather than copy. */
export function laneTransfer(result: LaneResult): Transferable[] {
  if (result.kind === 'logprobs') return [result.logp.buffer as ArrayBuffer];
  if (result.kind === 'gradients') return [result.grads.buffer as ArrayBuffer];
  return [];
}

export class LaneServer {
  private readonly adapters = new Map<string, LoraAdapter>();
  private readonly local: LocalCompute;

  /** `team`: the parts a pass of a workflow needs on this lane (its tools are the lane's own). */
  constructor(private readonly model: CausalLM, team: (played: PlayedTeam) => Promise<TeamParts>) {
    this.local = new LocalCompute(model, team);
  }

  private adapter(v: AdapterValues): LoraAdapter {
    let a = this.adapters.get(v.name);
    if (!a || JSON.stringify(a.settings) !== JSON.stringify(v.settings)) {
      a?.dispose();
      a = LoraAdapter.create(this.model.config, v.settings, v.name);
      this.adapters.set(v.name, a);
    }
    return assignValues(a, v);
  }

  /** Runs `job`; a play job stops at its next decoding step once `signal` aborts (a pause reaching the lane). */
  async handle(job: LaneJob, signal?: AbortSignal): Promise<LaneResult> {
    if (job.kind === 'logprobs') {
      const [logp] = await this.local.logProbs([
        { adapter: job.adapter ? this.adapter(job.adapter) : null, ids: job.ids, mask: job.mask, positions: job.positions, prefixGroups: job.prefixGroups },
      ]);
      return { kind: 'logprobs', logp };
    }
    if (job.kind === 'play') {
      const [trajectories] = await this.local.playTeam([job.pass], { signal });
      return { kind: 'play', trajectories };
    }
    const [g] = await this.local.gradients(this.adapter(job.adapter), [job.job]);
    const grads = concatValues(await Promise.all(g.grads.map(async (t) => (await t.data()) as Float32Array)));
    tf.dispose(g.grads);
    return { kind: 'gradients', loss: g.loss, grads, side: g.side };
  }

  dispose(): void {
    for (const a of this.adapters.values()) a.dispose();
    this.adapters.clear();
  }
}
