/**
 * The page's evaluation schedule: held-out evaluations fitted around training, a chunk of problems
 * at a time, so that their running estimates arrive while the team learns (a StepHook of
 * loop/session.ts). Where the Compute has lanes, a chunk plays on them in the background while this
 * thread trains; without, a chunk plays here after each iteration, sized to a quarter of the time
 * between iterations.
 *
 *   each iteration:  [background]  next evaluation chunk (greedy + sampled)  } at the same time, where
 *                    [here]        the iteration (rollouts, coach, update)     } there are lanes
 *                    then: queue this iteration's evaluation if due; report the chunk
 *   no lanes:        the chunk runs here after the iteration
 *   after the last:  the remaining evaluations, MAX_CHUNK problems at a time
 *
 * Chunk sizes adapt: each next chunk is sized to take about as long as the iteration's rollouts and
 * coaching (background), or LOCAL_SHARE of the whole iteration (here), within MIN_CHUNK..MAX_CHUNK.
 *
 * For: the page's lab (src/core/lab/lab.ts). Not for: what an evaluation measures (loop/eval-queue.ts).
 * Example: RunSession.open(config, parts, { store, hook: alongside(parts.compute), emit });
 */
import type { EvalChunk } from '../loop/eval-queue.ts';
import type { IterationMetrics } from '../loop/records.ts';
import type { RunSession, StepHook } from '../loop/session.ts';
import type { Compute } from '../loop/train.ts';
import { LaneCompute } from './lanes.ts';

/** Problems per evaluation chunk: the first guess, and the bounds of the adaptive size. */
const FIRST_CHUNK = 8;
const MIN_CHUNK = 4;
const MAX_CHUNK = 64;
/** Without lanes, evaluation chunks take about this share of the time between iterations. */
const LOCAL_SHARE = 0.25;

/** The size of the next chunk, so that it takes about `seconds`, from how long `chunk` took. */
function nextChunkSize(current: number, chunk: EvalChunk | null, seconds: number): number {
  if (!chunk || chunk.result.tasks === 0) return current;
  const perTask = chunk.seconds / Math.max(1, Math.min(current, chunk.result.tasks));
  return perTask > 0 ? Math.max(MIN_CHUNK, Math.min(MAX_CHUNK, Math.round(seconds / perTask))) : current;
}

/** Evaluations fitted around training on `compute` (lanes in the background where it has them). */
export function alongside(compute: Compute): StepHook {
  let size = FIRST_CHUNK;
  const background = () => (compute instanceof LaneCompute ? compute.background() : null);
  return {
    finalChunk: MAX_CHUNK,
    async around(step: () => Promise<IterationMetrics | null>, session: RunSession, signal?: AbortSignal): Promise<IterationMetrics | null> {
      const { queue, trainer } = session;
      const player = background();
      // A pause reaches the lanes: the chunk they play stops at its next decoding step (and runs again on resuming).
      const beside = player && queue.pending.length
        ? queue.runChunk(size, player, signal).catch((e) => {
          if (signal?.aborted) return null;
          throw e;
        })
        : null;
      let metrics: IterationMetrics | null;
      try {
        metrics = await step();
      } catch (e) {
        await beside?.catch(() => null);
        throw e;
      }
      const chunk = beside ? await beside : null;
      await session.record(chunk);
      if (!metrics) return null;
      if (trainer.evalDue(metrics.iteration)) queue.enqueue(metrics.iteration, trainer.adapterValues());
      const { rollout, coach, update } = metrics.seconds;
      if (beside) size = nextChunkSize(size, chunk, rollout + coach);
      else if (queue.pending.length && !background()) {
        const here = await queue.runChunk(size, undefined, signal).catch((e) => {
          if (signal?.aborted) return null; // paused: the iteration is whole; the chunk runs again on resuming
          throw e;
        });
        await session.record(here);
        size = nextChunkSize(size, here, LOCAL_SHARE * (rollout + coach + update));
      }
      return metrics;
    },
  };
}
