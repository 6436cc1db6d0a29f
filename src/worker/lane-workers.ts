/**
 * Every core in the page: lane Web Workers (lane-worker.ts), each with its own replica of the agent
 * model on a single-threaded `wasm` backend, as `mappa train --threads` does with worker threads.
 * The training worker's LaneCompute (core/compute/lanes.ts) shares each update's micro-batches with
 * them (the same adapters, to the bit, as one worker) and plays evaluation passes on them.
 *
 * For: trainer-worker.ts on the wasm backend (on webgpu the one device does the work). Not for: the
 * jobs' maths (core) or the message plumbing (core/compute/lane-pool.ts).
 *
 * Example: const lanes = await startWebLanes(navigator.hardwareConcurrency - 1, 'models/agent', baseUrl);
 *          const compute = computeFor(parts, lanes, warn);   // what the run trains with (lab.ts)
 */
/// <reference lib="webworker" />
import { LanePool, type LanePort } from '../core/compute/lane-pool.ts';
import type { Lanes } from '../core/compute/lanes.ts';
import type { LaneJob, LaneResult } from '../core/compute/lane-server.ts';
import type { PickedFile } from '../core/engine/model/sources.ts';
import type { LaneBoot } from './lane-worker.ts';

/** A Web Worker as a LanePool port. */
function webPort(w: Worker): LanePort {
  return {
    postMessage: (m, transfer) => w.postMessage(m, transfer ?? []),
    listen(onReply, onDeath) {
      w.addEventListener('message', (ev) => onReply(ev.data));
      w.addEventListener('error', (ev) => onDeath(new Error(ev.message || 'the lane worker failed to load')));
    },
    terminate: () => w.terminate(),
  };
}

/** How many lanes to start: one per core beyond the training worker's own (at most 7). */
export function laneCount(cores = globalThis.navigator?.hardwareConcurrency ?? 1): number {
  return Math.max(0, Math.min(7, Math.floor(cores) - 1));
}

/** Starts `count` lanes, each loading `spec` itself; rejects (and stops them) if any fails to boot. */
export async function startWebLanes(count: number, spec: string, baseUrl: string, files?: PickedFile[],
  toolFrame: () => MessagePort | undefined = () => undefined): Promise<Lanes> {
  const workers = [...Array(count)].map((_, i) => new Worker(new URL('./lane-worker.ts', import.meta.url), { type: 'module', name: `mappa-lane-${i + 1}` }));
  // Each lane's code tools start in the page's opaque-origin frame too, through the lab worker's port.
  for (const w of workers) {
    const port = toolFrame();
    if (port) w.postMessage({ kind: 'tool-frame', port }, [port]);
  }
  const pool = new LanePool<LaneJob | LaneBoot, LaneResult>(workers.map(webPort), 'lane worker');
  try {
    await Promise.all(workers.map((_, i) => pool.post(i + 1, { kind: 'boot', spec, baseUrl, files })));
  } catch (e) {
    await pool.close();
    throw new Error(`a lane worker failed to start (${(e as Error).message})`);
  }
  return pool; // a LanePool that also takes boot messages is a Lanes: every LaneJob is one of its jobs
}
