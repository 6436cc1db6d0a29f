/**
 * The loop's Compute (loop/train.ts) over this thread and lane threads, each lane with its own
 * replica of the base model (tfjs-backend-wasm runs one thread, so on a multi-core CPU the other
 * cores take part this way). The results are those of LocalCompute alone, to the bit:
 *   logProbs, gradients  the micro-batches are shared by cost (`shareJobs`); each is computed by the
 *                        same code on the same inputs, and the results come back in job order;
 *   play                 passes go to lanes (the first stays here, and so does one whose lane is busy),
 *                        each with its own fixed seed, so it plays as it would here;
 *   background()         a handle that plays passes on the lanes only, so that this thread can do other
 *                        work meanwhile (./alongside.ts plays evaluation chunks with it).
 * When a lane fails, its share is redone here, `onWarning` hears why once, and from then on this
 * compute runs everything here: a run never loses work to a dead thread.
 *
 * For: `mappa train --threads N` (worker threads) and the page's lane Web Workers; `computeFor`
 * picks it when there are lanes. Not for: the transport (./lane-pool.ts) or the lane side (./lane-server.ts).
 *
 * Example (main thread + 1 lane, 4 micro-batches of equal cost):
 *   shareJobs(jobs, cost, 1, local, remote)  ->  jobs 0 and 2 here, 1 and 3 on lane 1, results in job order
 */
import type { LoraAdapter } from '../engine/lora/adapter.ts';
import { adapterValues, unflatten, type AdapterValues } from '../engine/lora/adapter-values.ts';
import type { LogProbJob } from '../rl/batches.ts';
import type { Gradient, GradientJob } from '../rl/ppo.ts';
import type { PlayOptions, TeamParts, TeamPass } from '../loop/rollout.ts';
import type { Trajectory } from '../loop/trajectory.ts';
import type { Compute } from '../loop/train.ts';
import type { LaneJob, LaneResult } from './lane-server.ts';
import { LocalCompute } from './local.ts';
import { LaneJobAborted } from './lane-pool.ts';

/** Lane threads, numbered 1..count, as LaneCompute uses them (a LanePool over any transport is one). */
export interface Lanes {
  readonly count: number;
  /** Posts `job` to lane `lane` now; resolves with its result, rejects if the lane fails (LaneJobAborted once `signal` aborts). */
  post(lane: number, job: LaneJob, transfer?: Transferable[], signal?: AbortSignal): Promise<LaneResult>;
  close(): Promise<void>;
}

/** A job's cost for sharing: its padded [rows, T] cells. */
const rowsCost = (j: { ids: number[][] }) => j.ids.length * j.ids[0].length;

/** The result of `kind`, or an error naming what came instead. */
function expect<K extends LaneResult['kind']>(r: LaneResult, kind: K): Extract<LaneResult, { kind: K }> {
  if (r.kind !== kind) throw new Error(`a lane answered a ${kind} job with ${r.kind}`);
  return r as Extract<LaneResult, { kind: K }>;
}

export class LaneCompute implements Compute {
  private failure: Error | null = null;
  /** Jobs posted to each lane and not answered yet. */
  private readonly inFlight = new Map<number, number>();

  constructor(private readonly here: LocalCompute, private readonly pool: Lanes, private readonly onWarning: (message: string) => void = () => {}) {}

  /** Lanes still taking work (0 after a failure). */
  private get lanes(): number {
    return this.failure ? 0 : this.pool.count;
  }

  /**
   * Passes played away from this thread (on the lanes; here only when a lane fails), so that this thread
   * can train meanwhile: null when there is no lane to play them.
   */
  background(): Pick<Compute, 'playTeam'> | null {
    return this.lanes > 0 ? { playTeam: (passes, opts) => this.playOn(passes, opts ?? {}, true) } : null;
  }

  /** Posts a job, counting it in flight on its lane until it settles. */
  private send(lane: number, job: LaneJob, signal?: AbortSignal): Promise<LaneResult> {
    this.inFlight.set(lane, (this.inFlight.get(lane) ?? 0) + 1);
    return this.pool.post(lane, job, [], signal).finally(() => this.inFlight.set(lane, this.inFlight.get(lane)! - 1));
  }

  private readonly failed = (e: Error): void => {
    if (this.failure) return;
    this.failure = e;
    this.onWarning(`a lane thread failed (${e.message}); its share was redone on this thread, and the rest of the run uses this thread alone`);
  };

  logProbs(jobs: LogProbJob[]): Promise<Float32Array[]> {
    const values = new Map<LoraAdapter, AdapterValues>();
    const valuesOf = (a: LoraAdapter) => values.get(a) ?? values.set(a, adapterValues(a)).get(a)!;
    return shareJobs(jobs, rowsCost, this.lanes, async (j) => (await this.here.logProbs([j]))[0],
      async (lane, j) => expect(await this.send(lane, {
        kind: 'logprobs', adapter: j.adapter && valuesOf(j.adapter), ids: j.ids, mask: j.mask, positions: j.positions, prefixGroups: j.prefixGroups,
      }), 'logprobs').logp,
      this.failed);
  }

  gradients(adapter: LoraAdapter, jobs: GradientJob[]): Promise<Gradient[]> {
    const values = this.lanes ? adapterValues(adapter) : null;
    return shareJobs(jobs, (j) => rowsCost(j.batch), this.lanes, async (j) => (await this.here.gradients(adapter, [j]))[0],
      async (lane, j) => {
        const r = expect(await this.send(lane, { kind: 'gradients', adapter: values ?? adapterValues(adapter), job: j }), 'gradients');
        return { loss: r.loss, grads: unflatten(r.grads, adapter.variables()), side: r.side };
      }, this.failed);
  }

  /** Every item's jobs shared over this thread and the lanes together (per agent, one micro-batch would run here alone). */
  async gradientsOfMany(items: { adapter: LoraAdapter; jobs: GradientJob[] }[]): Promise<Gradient[][]> {
    const values = new Map<LoraAdapter, AdapterValues>();
    const valuesOf = (a: LoraAdapter) => values.get(a) ?? values.set(a, adapterValues(a)).get(a)!;
    const flat = items.flatMap((it) => it.jobs.map((job) => ({ adapter: it.adapter, job })));
    const results = await shareJobs(flat, (f) => rowsCost(f.job.batch), this.lanes, async (f) => (await this.here.gradients(f.adapter, [f.job]))[0],
      async (lane, f) => {
        const r = expect(await this.send(lane, { kind: 'gradients', adapter: valuesOf(f.adapter), job: f.job }), 'gradients');
        return { loss: r.loss, grads: unflatten(r.grads, f.adapter.variables()), side: r.side };
      }, this.failed);
    let at = 0;
    return items.map((it) => results.slice(at, (at += it.jobs.length)));
  }

  playTeam(passes: TeamPass[], opts: PlayOptions = {}): Promise<Trajectory[][]> {
    return this.playOn(passes, opts, false);
  }

  /**
   * Each pass on a lane, counted back from the last (greedy on the second-to-last where there are two,
   * sampled on the last); unless `away`, the first pass is played here meanwhile, and so is a pass
   * whose lane is busy now (an evaluation chunk played in the background, in the page): waiting behind
   * it would leave this thread idle, and a pass plays the same anywhere. A pass whose lane fails is played here.
   */
  private async playOn(passes: TeamPass[], opts: PlayOptions, away: boolean): Promise<Trajectory[][]> {
    const n = this.lanes;
    if (n === 0) return this.here.playTeam(passes, opts);
    const laneOf = (i: number) => {
      if (!away && i === 0) return 0;
      const lane = Math.max(1, n - (passes.length - 1 - i));
      return !away && this.inFlight.get(lane) ? 0 : lane;
    };
    const remote = passes.map((pass, i) => {
      const lane = laneOf(i); // in order: a pass posted makes its lane busy for the next
      return lane === 0 ? null : this.send(lane, { kind: 'play', pass }, opts.signal).then((r) => expect(r, 'play').trajectories, (e: Error) => {
        if (e instanceof LaneJobAborted) throw opts.signal?.reason ?? e; // a pause reached the lane: not a failure
        this.failed(e);
        return null;
      });
    });
    remote.forEach((r) => r?.catch(() => undefined)); // each is awaited below; a pause rejects them all at once
    const out: Trajectory[][] = [];
    for (const [i, pass] of passes.entries()) out.push((await remote[i]) ?? (await this.here.playTeam([pass], opts))[0]);
    return out;
  }
}

/** This thread alone, or with the lanes when there are some. */
export function computeFor(parts: TeamParts, lanes: Lanes | null, onWarning?: (message: string) => void): Compute {
  const here = LocalCompute.forTeam(parts);
  return lanes?.count ? new LaneCompute(here, lanes, onWarning) : here;
}

/**
 * Runs `jobs` over this thread and `laneCount` lanes and returns their results in job order. Jobs
 * go, in order, to whichever lane has the least cost so far (this thread first on ties); a lane's
 * jobs are posted before this thread starts its own. If a lane fails, its jobs are computed here
 * and `onLaneError` is told once, so an update never loses work to a dead thread.
 *
 * Example: costs [4, 4, 4, 4], 1 lane -> this thread runs jobs 0 and 2, lane 1 runs 1 and 3.
 */
export async function shareJobs<J, R>(jobs: J[], cost: (j: J) => number, laneCount: number,
  local: (j: J) => Promise<R>, remote: (lane: number, j: J) => Promise<R>, onLaneError?: (e: Error) => void): Promise<R[]> {
  const load = new Array(laneCount + 1).fill(0);
  const owner = jobs.map((j) => {
    let best = 0;
    for (let l = 1; l < load.length; l++) if (load[l] < load[best]) best = l;
    load[best] += cost(j);
    return best;
  });
  const results: R[] = new Array(jobs.length);
  const failed: number[] = [];
  let reported = false;
  const pending = jobs.map((j, i) => owner[i] === 0 ? null : remote(owner[i], j).then((r) => { results[i] = r; }, (e: Error) => {
    failed.push(i);
    if (!reported) {
      reported = true;
      onLaneError?.(e);
    }
  }));
  for (let i = 0; i < jobs.length; i++) if (owner[i] === 0) results[i] = await local(jobs[i]);
  await Promise.all(pending);
  for (const i of failed.sort((a, b) => a - b)) results[i] = await local(jobs[i]);
  return results;
}
