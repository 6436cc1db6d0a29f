/**
 * An experiment's Start and Pause buttons, as every experiment panel has them: a press while the page is
 * still opening its run waits for it (then the lab's state decides: ready starts it, anything else shows why
 * on the disabled button), an error is kept to show, and Pause says "pausing" at once. It asks the lab's one
 * `experiment` request (core/lab/protocol.ts), so a new experiment's panel needs nothing more.
 *
 * For: Lesson.svelte (the lesson, credit methods) and Scale.svelte. Not for: the views (RunState keeps them).
 * Example: const scale = new ExperimentButton(() => ({ client, run }), 'scale');   // in a component's script
 *          scale.start(true);  // "again": its stored runs deleted and trained anew; scale.waiting while the page loads
 */
import type { ExperimentName } from '../../core/lab/experiments/experiment-names.ts';
import type { TrainerClient } from '../../worker/client.ts';
import type { RunState } from '../run-state.svelte.ts';

export class ExperimentButton {
  /** Pressed while the page still loads: it starts as soon as the page is ready. */
  waiting = $state(false);
  error: string | null = $state(null);
  /** Whether the press that waits asked to train again. */
  private fresh = false;

  /** `of`: the component's client and run state (read when used: they are its props). */
  constructor(private readonly of: () => { client: TrainerClient; run: RunState }, private readonly name: ExperimentName) {
    $effect(() => {
      if (this.waiting && !this.settling) {
        if (this.of().run.state === 'ready') void this.start(this.fresh);
        else this.waiting = false; // read-only, lost or refused: the button says why
      }
    });
  }

  /** The page is still starting or opening its run: a press waits for it. */
  get settling(): boolean {
    return this.of().run.state === 'booting' || this.of().run.state === 'loading' || !this.of().run.config;
  }

  async start(fresh = false): Promise<void> {
    this.error = null;
    this.fresh = fresh;
    if (this.settling) {
      this.waiting = true;
      return;
    }
    this.waiting = false;
    this.fresh = false;
    try {
      await this.of().client.lab.experiment({ name: this.name, ...(fresh ? { fresh: true } : {}) });
    } catch (e) {
      this.error = (e as Error).message;
    }
  }

  async pause(): Promise<void> {
    this.of().run.requestPause();
    try {
      await this.of().client.lab.pause({});
    } catch (e) {
      this.error = (e as Error).message;
    }
  }
}
