/**
 * The message plumbing between a training thread and its lane threads, written once for both
 * shells: Node worker threads (src/cli/train-workers.ts) and browser Web Workers (src/worker/lane-workers.ts).
 * Each shell only adapts its worker object to `LanePort`.
 *
 * For: posting jobs to lane i at once (a lane runs its jobs one after another, in the order posted,
 * so it keeps busy while the posting thread computes its own share), matching replies by id, and
 * failing every pending job of a lane that died. Not for: what a job computes (lanes.ts).
 *
 * Example (main side):
 *   const pool = new LanePool(workers.map(nodePort));     // or webPort for Web Workers
 *   const r = await pool.post(1, { kind: 'logprobs', ... });
 * Example (lane side):
 *   serveLaneJobs(port, (job) => server.handle(job), (result) => [result.logp.buffer]);
 */

/** One lane's worker, as the pool sees it. `message` handlers get `{id, ok, result | error}`. */
export interface LanePort {
  postMessage(message: unknown, transfer?: Transferable[]): void;
  /** Calls `onReply` for each message, `onDeath` once if the worker errors or exits. */
  listen(onReply: (m: unknown) => void, onDeath: (e: Error) => void): void;
  terminate(): Promise<unknown> | void;
}

type Reply<R> = { id: number; ok: true; result: R } | { id: number; ok: false; error: string; aborted?: boolean };

/** A lane's job stopped by its signal (a pause), not a failure of the lane. */
export class LaneJobAborted extends Error {
  constructor(lane: string) {
    super(`${lane}: its job was stopped by a pause`);
    this.name = 'LaneJobAborted';
  }
}

export class LanePool<Job, Result> {
  /** Per lane: replies awaited, by job id. */
  private readonly pending: Map<number, { resolve: (r: Result) => void; reject: (e: Error) => void }>[];
  private readonly dead: (Error | null)[];
  private nextId = 0;

  constructor(private readonly ports: LanePort[], label = 'lane') {
    this.pending = ports.map(() => new Map());
    this.dead = ports.map(() => null);
    ports.forEach((port, i) => port.listen(
      (m) => {
        const reply = m as Reply<Result>;
        const p = this.pending[i].get(reply.id);
        if (!p) return;
        this.pending[i].delete(reply.id);
        if (reply.ok) p.resolve(reply.result);
        else p.reject(reply.aborted ? new LaneJobAborted(`${label} ${i + 1}`) : new Error(`${label} ${i + 1}: ${reply.error}`));
      },
      (e) => {
        this.dead[i] = new Error(`${label} ${i + 1} died: ${e.message}`);
        for (const p of this.pending[i].values()) p.reject(this.dead[i]!);
        this.pending[i].clear();
      },
    ));
  }

  /** Lanes, numbered 1..count. */
  get count(): number {
    return this.ports.length;
  }

  /**
   * Posts `job` to lane `lane` (1-based) now; resolves with its result, rejects if the lane fails. When
   * `signal` aborts, the lane is told at once and its job stops at its next pause point (a decoding step):
   * the promise rejects with a LaneJobAborted.
   */
  post(lane: number, job: Job, transfer: Transferable[] = [], signal?: AbortSignal): Promise<Result> {
    const i = lane - 1;
    const port = this.ports[i];
    if (!port) return Promise.reject(new Error(`no lane ${lane} (${this.ports.length} started)`));
    if (this.dead[i]) return Promise.reject(this.dead[i]!);
    const id = this.nextId++;
    return new Promise<Result>((resolve, reject) => {
      const cancel = () => port.postMessage({ cancel: id });
      signal?.addEventListener('abort', cancel, { once: true });
      const done = () => signal?.removeEventListener('abort', cancel);
      this.pending[i].set(id, { resolve: (r) => (done(), resolve(r)), reject: (e) => (done(), reject(e)) });
      port.postMessage({ id, job }, transfer);
    });
  }

  async close(): Promise<void> {
    await Promise.all(this.ports.map((p) => p.terminate()));
  }
}

/** The lane side's view of its channel to the posting thread. */
export interface LaneEndpoint {
  postMessage(message: unknown, transfer?: Transferable[]): void;
  onMessage(handler: (m: unknown) => void): void;
}

/**
 * Lane side: answers `{id, job}` messages with `handle(job, signal)`, one job at a time in the order posted
 * (a job's awaits may let the next message arrive; it waits its turn). A `{cancel: id}` message aborts that
 * job's signal (a pause: the job stops at its next pause point, or never starts) and it answers `aborted`.
 * `transfer` names the result's buffers to move rather than copy.
 */
export function serveLaneJobs<Job, Result>(endpoint: LaneEndpoint, handle: (job: Job, signal: AbortSignal) => Promise<Result>,
  transfer: (result: Result) => Transferable[] = () => []): void {
  let chain: Promise<unknown> = Promise.resolve();
  const running = new Map<number, AbortController>();
  endpoint.onMessage((m) => {
    if (typeof (m as { cancel?: unknown }).cancel === 'number') {
      running.get((m as { cancel: number }).cancel)?.abort();
      return;
    }
    const { id, job } = m as { id: number; job: Job };
    const controller = new AbortController();
    running.set(id, controller);
    chain = chain.then(() => {
      controller.signal.throwIfAborted();
      return handle(job, controller.signal);
    }).then(
      (result) => endpoint.postMessage({ id, ok: true, result } satisfies Reply<Result>, transfer(result)),
      (e: Error) => endpoint.postMessage({ id, ok: false, error: e?.message ?? String(e), aborted: controller.signal.aborted } satisfies Reply<Result>),
    ).finally(() => running.delete(id));
  });
}
