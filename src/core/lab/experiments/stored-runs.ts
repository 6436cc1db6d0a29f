/**
 * What every experiment does with its stored runs: train one to its end (resumed when stored, claimed while it
 * trains, its training time kept with it), read one back with no model loaded, delete one, and run a list of
 * them in turn ending the view once. The lesson, the credit comparison and the scale runner all train so.
 *
 * For: the runners of experiments/ (<name>/<name>-run.ts). Not for: an experiment's maths (<name>-maths.ts).
 *
 * Example: const ran = await trainStoredRun(host, lessonPatch(4, 'process'), 'lesson: relay of 4, process, seed 0', signal, listener);
 *          ran.how  // 'done' | 'paused'; ran.seconds: its training time over every time it ran
 */
import type { RunStore } from '../../loop/checkpoint.ts';
import type { TrainConfig } from '../../loop/config.ts';
import { resolveTrainConfig } from '../../domains/index.ts';
import { RunSession } from '../../loop/session.ts';
import type { RunParts } from '../../loop/train.ts';
import { splitRecords, type EvalResult, type IterationMetrics, type StoredRecord } from '../../loop/records.ts';
import type { CoachQuality } from '../coach-quality.ts';
import { LAST_TRAJECTORIES, trajectoryViews } from '../transfer.ts';

/** What an experiment needs of the lab: the parts a config trains with, its store, its run id, a writer's lock, and where its view goes. */
export interface ExperimentHost<View = never> {
  parts(c: TrainConfig): Promise<RunParts>;
  store(runId: string): RunStore & { describe(label: string, config: unknown, iteration: number): Promise<void>; claim?(): Promise<void> };
  runId(c: TrainConfig): string;
  /** The right to write a run (platforms with tabs); null: another tab trains it. */
  claim?(runId: string): Promise<{ release(): void } | null>;
  post(view: View): void;
  /** What the coach of a run of `c` is (coach-quality.ts): `coachName` the one that scores it, else the one its config names (no model loaded). */
  coachQuality?(c: TrainConfig, coachName?: string): Promise<CoachQuality>;
}

/** Every finished or running evaluation a run holds: those stored apart, then those its iterations carry. */
export function allEvals(history: { metrics: readonly IterationMetrics[]; evals: readonly { iteration: number; result: EvalResult }[] }):
  { iteration: number; result: EvalResult }[] {
  return [...history.evals, ...history.metrics.filter((m) => m.eval).map((m) => ({ iteration: m.iteration, result: m.eval! }))];
}

/**
 * What the store holds of the run of `c` (no model, no training): its evaluations, its last iteration, whether it
 * is finished (its last iteration and that iteration's evaluation) and its training time; null when nothing is stored.
 */
export async function readStoredRun(host: Pick<ExperimentHost, 'runId' | 'store'>, c: TrainConfig):
  Promise<{ runId: string; evals: { iteration: number; result: EvalResult }[]; iteration: number; done: boolean; seconds?: number; finishedAt?: number } | null> {
  const runId = host.runId(c);
  const store = host.store(runId);
  const records = await store.metrics<StoredRecord>();
  if (!records.length) return null;
  const history = splitRecords(records);
  const evals = allEvals(history);
  const iteration = history.metrics.at(-1)?.iteration ?? 0;
  const done = iteration >= c.iterations && evals.some((e) => e.iteration === c.iterations && e.result.of === undefined);
  return { runId, evals, iteration, done, ...(await storedTime(store)) };
}

/** A stored run's training time: seconds spent training and evaluating it (summed over every time it ran), and when it finished. */
export const RUN_TIME = 'lesson-time.json';
interface LessonTime {
  seconds: number;
  finishedAt?: number;
}

/** What trainStoredRun reports as a run trains: its finished evaluations and its iterations. */
export interface RunListener {
  /** The session is open, with what the store held of the run. */
  opened(session: RunSession): void;
  evaluated(iteration: number, result: EvalResult): void;
  iterated(metrics: IterationMetrics): void;
}

/** A stored run's training time (RUN_TIME), or nothing for runs trained before it was recorded. */
export async function storedTime(store: RunStore): Promise<{ seconds?: number; finishedAt?: number }> {
  const text = await store.readFile(RUN_TIME);
  if (typeof text !== 'string') return {};
  try {
    const t = JSON.parse(text) as LessonTime;
    return { seconds: t.seconds, ...(t.finishedAt === undefined ? {} : { finishedAt: t.finishedAt }) };
  } catch {
    return {};
  }
}

/**
 * Opens one stored run (resumed when stored, claimed while it trains) and trains it to its end: the
 * lesson's runs and the credit comparison's. The seconds it trained here are added to its stored time
 * (RUN_TIME), with the moment it finished. 'paused' when `signal` aborts.
 */
export async function trainStoredRun(host: ExperimentHost<unknown>, patch: Record<string, unknown>, label: string, signal: AbortSignal,
  listen: RunListener, opts: { baseline?: boolean } = {}): Promise<{ how: 'done' | 'paused'; seconds?: number; finishedAt?: number; coach: string }> {
  const c = resolveTrainConfig(patch);
  const runId = host.runId(c);
  const lock = host.claim ? await host.claim(runId) : null;
  if (host.claim && !lock) throw new Error(`the run "${runId}" (${label}) is training in another tab; close that tab or pause it there`);
  try {
    const store = host.store(runId);
    await store.claim?.();
    const parts = await host.parts(c);
    const session = await RunSession.open(c, parts, {
      store, baseline: opts.baseline ?? true,
      emit: (e) => (e.type === 'eval' && e.result.of === undefined ? listen.evaluated(e.iteration, e.result) : undefined),
    });
    const stored = await storedTime(store);
    const finished = session.trainer.iteration >= c.iterations && allEvals(session.history).some((e) => e.iteration === c.iterations);
    listen.opened(session);
    session.trainer.on((e) => {
      if (e.type === 'eval' && e.result.of === undefined) listen.evaluated(e.iteration, e.result);
      if (e.type === 'iteration') listen.iterated(e.metrics);
      // Its last batch, as the page's own runs keep it: "Open in the inspector" then shows its rollouts.
      if (e.type === 'trajectories') {
        void trajectoryViews(c.workflow, e.trajectories, parts.coach.name)
          .then((trajectories) => store.writeFile(LAST_TRAJECTORIES, JSON.stringify({ iteration: e.iteration, trajectories })))
          .catch(() => undefined); // a view not kept only leaves the inspector empty when the run is opened again
      }
    });
    const began = performance.now();
    let how: 'done' | 'paused' | 'stepped' = 'paused';
    let time: LessonTime | null = null;
    try {
      await store.describe(label, patch, session.trainer.iteration);
      how = await session.run({ signal });
      await session.saveIfBehind();
    } finally {
      // The time it trained here is stored with it (a finished run read back adds none).
      if (!finished) {
        time = { seconds: (stored.seconds ?? 0) + (performance.now() - began) / 1000, ...(how === 'done' ? { finishedAt: Date.now() } : {}) };
        await store.writeFile(RUN_TIME, JSON.stringify(time)).catch(() => undefined);
      }
      session.dispose();
    }
    return { how: how === 'done' ? 'done' : 'paused', ...(time ?? stored), coach: parts.coach.name };
  } finally {
    lock?.release();
  }
}

/**
 * Runs `steps` in turn (each 'paused' when the signal aborted it), and ends the view once: 'done', 'paused'
 * with the button that goes on, or 'failed' with the error (rethrown). The lesson and the credit comparison
 * both train their runs this way.
 * Example: await inTurn([() => train(a), () => train(b)], signal, 'Go on with the lesson', (status, m) => show(status, m))
 */
export async function inTurn(steps: (() => Promise<'done' | 'paused'>)[], signal: AbortSignal, button: string,
  end: (status: 'done' | 'paused' | 'failed', message?: string) => void): Promise<'done' | 'paused'> {
  try {
    for (const step of steps) {
      if (signal.aborted || (await step()) === 'paused') {
        end('paused', `paused: press "${button}" to train the rest from where it stopped`);
        return 'paused';
      }
    }
    end('done');
    return 'done';
  } catch (e) {
    end('failed', (e as Error).message);
    throw e;
  }
}

/** Deletes a stored run, holding its writer's right meanwhile (another tab training it is an error naming `what`). */
export async function clearStoredRun(host: Pick<ExperimentHost, 'claim' | 'store'>, runId: string, what: string): Promise<void> {
  const lock = host.claim ? await host.claim(runId) : null;
  if (host.claim && !lock) throw new Error(`${what} "${runId}" is training in another tab; close that tab or pause it there`);
  try {
    const store = host.store(runId);
    await store.claim?.();
    await store.clear();
  } finally {
    lock?.release();
  }
}
