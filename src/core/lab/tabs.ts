/**
 * Tab locks: one tab writes a run, the others show it read-only and follow it. The lab claims the right
 * to write a run when it opens it (the platform's claimRun; absent where there is one writer only); a tab
 * that asks for the run is answered by pausing at a checkpoint and letting go; a tab that loses it goes
 * read-only. While read-only, the tab reads the run's records every 2 s and redraws them.
 *
 * For: the lab (lab.ts) and the open run (runs.ts). Not for: the lock itself (platform/browser/run-lock.ts).
 *
 * Example: const tabs = new TabLocks(platform, hooks, () => runs.close());
 *          await tabs.claim(runId, store, 'if-free')   // -> false: another tab trains it; open it read-only, then tabs.follow(runId)
 */
import { splitRecords, type StoredRecord } from '../loop/records.ts';
import type { LabMode } from './lab-state.ts';
import type { WorkerEvent } from './protocol.ts';
import type { LabPlatform, LabStore, RunWriter } from './shelf.ts';

/** What the rooms of the lab need of its host (lab.ts): the event stream and the one state. */
export interface LabHooks {
  post(e: WorkerEvent): void;
  mode(): LabMode;
  setMode(mode: LabMode, message?: string): void;
  /** Aborts what runs (it stops at its next safe point); the promise it ends with, if any. */
  stopLoop(): Promise<void> | null;
  /** Runs `work` as the lab's one activity (lab.ts launch): the state says it, Pause aborts its signal. */
  launch(activity: Extract<LabMode, { state: 'running' }>['activity'], message: string | undefined,
    work: (signal: AbortSignal) => Promise<unknown>, after?: () => Promise<void>): Promise<void>;
  reportError(e: unknown): void;
}

export class TabLocks {
  /** The right to write the open run (platforms with tabs); null where the platform has one writer only. */
  private writer: { runId: string; lock: RunWriter } | null = null;

  /** `close` closes the open run and its twin, and says the patch it came from and its iteration. */
  constructor(private readonly platform: LabPlatform, private readonly hooks: LabHooks,
    private readonly close: () => { partial: unknown; iteration: number }) {}

  /**
   * Takes the right to write run `runId` (kept when this tab already holds it): false when another
   * tab trains it. A run this tab held before is let go. The store is claimed, so that the tab that
   * had the run cannot write to it any more, whatever it has in flight.
   */
  async claim(runId: string, store: LabStore, how: 'if-free' | 'take-over'): Promise<boolean> {
    if (!this.platform.claimRun) return true;
    if (this.writer?.runId === runId) return true;
    const lock = await this.platform.claimRun(runId, how);
    if (!lock) return false;
    this.writer?.lock.release();
    this.writer = { runId, lock };
    await store.claim?.();
    lock.onTakeOverRequest(async () => {
      if (this.writer?.lock !== lock) return;
      await this.hooks.stopLoop(); // the loop stops at a checkpoint (a pause loses nothing)
      this.toReadOnly(runId, 'another tab took this run over; this tab shows it read-only');
      lock.release();
    });
    void lock.lost.then((why) => {
      if (this.writer?.lock !== lock) return;
      this.hooks.stopLoop();
      this.toReadOnly(runId, `${why}; this tab shows it read-only`);
    });
    return true;
  }

  /** Lets go of the run this tab wrote (it opens another read-only). */
  release(): void {
    this.writer?.lock.release();
    this.writer = null;
  }

  /** This tab no longer writes run `runId`: the session closes, the page keeps its charts. */
  private toReadOnly(runId: string, message: string): void {
    this.writer = null;
    const { partial, iteration } = this.close();
    this.hooks.setMode({ state: 'readonly', runId, partial, iteration }, message);
    this.follow(runId);
  }

  /**
   * While this tab shows run `runId` read-only, it follows the tab that writes it: every 2 s it reads the
   * run's records and, when they grew, redraws them and says the iteration, and how long ago it last moved.
   */
  follow(runId: string): void {
    const store = this.platform.store(runId);
    let seen = -1;
    let movedAt = Date.now();
    const timer = setInterval(() => {
      const m = this.hooks.mode();
      if (m.state !== 'readonly' || m.runId !== runId) return clearInterval(timer);
      void store.metrics<StoredRecord>().then((records) => {
        if (this.hooks.mode() !== m) return;
        const { metrics, evals } = splitRecords(records);
        const iteration = metrics.at(-1)?.iteration ?? 0;
        const count = records.length;
        if (count !== seen) {
          if (seen >= 0) movedAt = Date.now();
          if (seen >= 0) this.hooks.post({ kind: 'history', runId, metrics, evals, trajectories: null });
          seen = count;
        }
        const still = Math.round((Date.now() - movedAt) / 1000);
        const words = still < 20
          ? `this run is training in another tab; this tab shows it read-only and follows it: iteration ${iteration}`
          : `this run is open in another tab, which has not trained it for ${still} s (iteration ${iteration}); this tab shows it read-only`;
        if (iteration !== m.iteration || still >= 20) this.hooks.setMode({ ...m, iteration }, `${words} (Take over to train it here)`);
      }, () => undefined);
    }, 2000);
  }
}
