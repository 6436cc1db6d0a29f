/**
 * An evaluation pass as a job for another thread: the team with given adapters (as plain values) on
 * given tasks, one sample each, at one temperature and seed. Both shells' lane threads (Node worker
 * threads, browser Web Workers) run it with `runRolloutJob`, so the trajectories are the ones the
 * posting thread would have made itself.
 *
 * `TeamLanes` is the posting side both shells use: update jobs on any lane, rollout jobs on the last.
 *
 * For: EvalOffload (train.ts) and the page's chunked evaluations (eval-queue.ts).
 * Not for: the transport (rl/lane-pool.ts) or starting and loading the replicas (each shell does).
 *
 * Example: await runRolloutJob({ kind: 'rollouts', config, adapters: [['solver', spec], ['executor', null]],
 *            tasks, temperature: 0.6, seed: 1_000_003 }, { agentModel, tools })   // -> Trajectory[]
 */
import { LoraAdapter } from '../engine/lora/adapter.ts';
import type { LoadedModel } from '../engine/model/load.ts';
import type { LanePool } from '../rl/lane-pool.ts';
import { assignSpec, type AdapterSpec, type LaneJob, type LaneResult, type UpdateLanes } from '../rl/lanes.ts';
import type { ToolRunners } from '../tools/runners.ts';
import { EngineAgents } from './agents.ts';
import type { TrainConfig } from './config.ts';
import { domainOf } from '../domains/index.ts';
import { runRollouts, type RolloutTask, type Trajectory } from './rollout.ts';

export interface RolloutJob {
  kind: 'rollouts';
  config: TrainConfig;
  /** Agent id -> its adapter's values (null: the base model). */
  adapters: [string, AdapterSpec | null][];
  tasks: RolloutTask[];
  temperature: number;
  seed: number;
}

/** The replica's parts a rollout job needs: the model (with tokenizer) and the workflow's tools. */
export interface ReplicaParts {
  agentModel: LoadedModel;
  tools: ToolRunners;
}

export async function runRolloutJob(job: RolloutJob, parts: ReplicaParts): Promise<Trajectory[]> {
  const adapters = new Map<string, LoraAdapter>();
  for (const [id, spec] of job.adapters) {
    if (spec) adapters.set(id, assignSpec(LoraAdapter.create(parts.agentModel.config, spec.settings, spec.name), spec));
  }
  try {
    return await runRollouts(job.config.workflow, job.tasks, {
      agents: new EngineAgents(parts.agentModel, adapters), tools: parts.tools,
      outcome: domainOf(job.config.workflow).outcome, samplesPerTask: 1,
      temperature: job.temperature, seed: job.seed, toolTimeoutMs: job.config.toolTimeoutMs,
    });
  } finally {
    for (const a of adapters.values()) a.dispose();
  }
}

/** What a team lane answers: update jobs (rl/lanes.ts) and rollout jobs. */
export type TeamJob = LaneJob | RolloutJob;
export type TeamResult = LaneResult | { kind: 'rollouts'; trajectories: Trajectory[] };

/** The buffers of a result to transfer rather than copy. */
export function resultTransfer(result: TeamResult): Transferable[] {
  if (result.kind === 'rollouts') return [];
  return [(result.kind === 'logprobs' ? result.logp : result.grads).buffer as ArrayBuffer];
}

/** The lane side: one replica's answers to every team job. */
export function teamJobHandler(handleUpdate: (job: LaneJob) => Promise<LaneResult>, parts: (config: TrainConfig) => Promise<ReplicaParts>) {
  return async (job: TeamJob): Promise<TeamResult> => {
    if (job.kind !== 'rollouts') return handleUpdate(job);
    return { kind: 'rollouts', trajectories: await runRolloutJob(job, await parts(job.config)) };
  };
}

/**
 * Lanes 1..count of a team over any transport: `run` is UpdateLanes' (update micro-batches), and
 * `rollouts` is train.ts's EvalOffload, on the last lane.
 */
export class TeamLanes implements UpdateLanes {
  constructor(protected readonly pool: LanePool<TeamJob, TeamResult>) {}

  get count(): number {
    return this.pool.count;
  }

  run(lane: number, job: LaneJob): Promise<LaneResult> {
    return this.pool.post(lane, job) as Promise<LaneResult>;
  }

  /** The team with these adapters on `tasks`, one sample each, on lane `lane` (default: the last). */
  readonly rollouts = async (config: TrainConfig, adapters: Map<string, AdapterSpec | null>, tasks: RolloutTask[],
    temperature: number, seed: number, lane = this.pool.count): Promise<Trajectory[]> => {
    const r = await this.pool.post(lane, { kind: 'rollouts', config, adapters: [...adapters], tasks, temperature, seed });
    if (r.kind !== 'rollouts') throw new Error('a lane answered a rollout job with update results');
    return r.trajectories;
  };

  close(): Promise<void> {
    return this.pool.close();
  }
}
