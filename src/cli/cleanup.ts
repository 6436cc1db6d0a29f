/**
 * One cleanup path for a command, run on success, on failure and on a signal: what was started
 * (tools, worker threads, the run's lock, the session) is undone in reverse order, each step on its
 * own, so that one that fails does not leave the others running and the process can exit. A worker
 * thread or a MessagePort that stays open keeps Node alive: this is why `mappa train` once idled for
 * minutes after an error.
 *
 * For: the CLI's long-running commands. Not for: the page (the worker's life is the tab's).
 *
 * Example: const cleanup = new Cleanup();
 *          try { const w = await startWorkers(); cleanup.add(() => w.close()); ... } finally { await cleanup.run(); }
 *          cleanup.onSignals(() => controller.abort());   // Ctrl-C once: stop gently; twice: exit now (130)
 */
export class Cleanup {
  private steps: (() => unknown)[] = [];
  private signalHandler: ((signal: NodeJS.Signals) => void) | null = null;

  add(step: () => unknown): void {
    this.steps.push(step);
  }

  /**
   * SIGINT / SIGTERM: the first calls `gentle` (e.g. abort at the next safe point, keeping a
   * checkpoint); the second exits at once with 130, after the steps that can run synchronously.
   */
  onSignals(gentle: () => void): void {
    let count = 0;
    this.signalHandler = () => {
      count++;
      if (count === 1) {
        gentle();
        return;
      }
      process.stderr.write('stopping now, without a checkpoint of this iteration (the last one is whole; continue with --resume)\n');
      for (const step of this.steps.splice(0).reverse()) {
        try {
          void step();
        } catch { /* exiting anyway */ }
      }
      process.exit(130);
    };
    process.on('SIGINT', this.signalHandler);
    process.on('SIGTERM', this.signalHandler);
  }

  /** Runs every step, last added first; a failing step is reported on stderr and the rest still run. */
  async run(): Promise<void> {
    if (this.signalHandler) {
      process.removeListener('SIGINT', this.signalHandler);
      process.removeListener('SIGTERM', this.signalHandler);
      this.signalHandler = null;
    }
    for (const step of this.steps.splice(0).reverse()) {
      try {
        await step();
      } catch (e) {
        process.stderr.write(`warning: cleaning up failed: ${(e as Error).message}\n`);
      }
    }
  }
}
