/**
 * The loop's Compute (loop/train.ts) on this thread: each job is run as it comes, in order, by the
 * code that owns it: log-probs by rl/batches.ts, gradients by rl/ppo.ts's `ppoGradient`, passes of the
 * team by loop/rollout.ts's `playPass`. The lanes' side (./lane-server.ts) runs its share with this
 * same class, so a share computed on a lane is bit-equal to the same share computed here.
 *
 * For: runs on one thread (the default), and the lane side of LaneCompute. Not for: sharing work (./lanes.ts).
 *
 * Example: const compute = LocalCompute.forTeam({ agentModel, tools });
 *          const [logp] = await compute.logProbs([{ adapter: null, ids: [[1, 5, 6]], mask: [[1, 1, 1]], positions: [0, 1] }]);
 *          // logp = [log p(5 | 1), log p(6 | 1 5)] under the base model
 */
import type { LoraAdapter } from '../engine/lora/adapter.ts';
import type { CausalLM } from '../engine/model/llama.ts';
import { pausePoint } from '../engine/pause-point.ts';
import { positionLogProbs, type LogProbJob } from '../rl/batches.ts';
import { ppoGradient, type Gradient, type GradientJob } from '../rl/ppo.ts';
import { batchedGradient, batchedLogProbs, type BatchedGradient, type BatchedGradientJob, type BatchedLogProbJob } from '../rl/batched-passes.ts';
import { playPass, type PlayOptions, type TeamParts, type TeamPass } from '../loop/rollout.ts';
import { type Trajectory } from '../loop/trajectory.ts';
import type { PlayedTeam } from '../loop/team.ts';
import type { Compute } from '../loop/train.ts';

export class LocalCompute implements Compute {
  /** `team`: the parts a pass of a workflow needs (absent: this compute serves the update alone). */
  constructor(readonly model: CausalLM, private readonly team?: (played: PlayedTeam) => Promise<TeamParts>) {}

  /** A compute for a run whose team plays with these parts. */
  static forTeam(parts: TeamParts): LocalCompute {
    return new LocalCompute(parts.agentModel.model, async () => parts);
  }

  // Between two jobs the event loop gets a turn now and then (pausePoint, no signal: an update, once
  // begun, completes), so that a Pause sent meanwhile is received and shown at once.
  logProbs(jobs: LogProbJob[]): Promise<Float32Array[]> {
    return inTurn(jobs, (j) => positionLogProbs(this.model, j.ids, j.mask, j.positions, j.adapter, j.prefixGroups));
  }

  gradients(adapter: LoraAdapter, jobs: GradientJob[]): Promise<Gradient[]> {
    return inTurn(jobs, (j) => ppoGradient(this.model, adapter, j));
  }

  /** Rows of several agents in one pass (rl/batched-passes.ts), for the batched update. */
  batchedLogProbs(jobs: BatchedLogProbJob[]): Promise<Float32Array[]> {
    return inTurn(jobs, (j) => batchedLogProbs(this.model, j));
  }

  batchedGradients(jobs: BatchedGradientJob[]): Promise<BatchedGradient[]> {
    return inTurn(jobs, (j) => batchedGradient(this.model, j));
  }

  async playTeam(passes: TeamPass[], opts: PlayOptions = {}): Promise<Trajectory[][]> {
    if (!this.team) throw new Error('this compute was made for the update alone; it cannot play the team');
    const out: Trajectory[][] = [];
    for (const p of passes) out.push(await playPass(await this.team(p), p, opts));
    return out;
  }
}

/** This thread alone, for the update of `model` (benchmarks and tests that update without a team). */
export function thisThread(model: CausalLM): LocalCompute {
  return new LocalCompute(model);
}

/** Each job in order, the event loop given a turn before each one. */
async function inTurn<J, R>(jobs: J[], run: (job: J) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (const j of jobs) {
    await pausePoint();
    out.push(await run(j));
  }
  return out;
}
