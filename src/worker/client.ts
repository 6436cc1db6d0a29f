/**
 * The page's handle on the training worker: `lab` is the lab's own interface (core/lab/protocol.ts
 * LabApi), each method a request that resolves with the worker's reply, as web-llm's engine client
 * proxies its worker; `on` subscribes to the event stream. The UI talks only to this.
 *
 * For: src/ui. Not for: the worker side (trainer-worker.ts) or the message shapes (protocol.ts).
 * Example:
 *   const client = new TrainerClient();
 *   client.on((e) => { if (e.kind === 'train' && e.event.type === 'iteration') draw(e.event.metrics); });
 *   await client.lab.init({ baseUrl: new URL('.', location.href).href });
 *   await client.lab.open({ config: {} });
 *   await client.lab.start({ single: true });
 */
import { REQUEST_TYPES, type EventMessage, type LabApi, type ReplyMessage, type RequestType, type Requests, type WorkerEvent } from '../core/lab/protocol.ts';

export class WorkerRequestError extends Error {
  constructor(readonly request: RequestType, message: string) {
    super(message);
    this.name = 'WorkerRequestError';
  }
}

export class TrainerClient {
  private nextId = 1;
  private pending = new Map<number, { type: RequestType; resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private listeners = new Set<(e: WorkerEvent) => void>();
  readonly worker: Worker;

  constructor(worker?: Worker) {
    this.worker = worker ?? new Worker(new URL('./trainer-worker.ts', import.meta.url), { type: 'module', name: 'mappa-trainer' });
    this.worker.addEventListener('message', (ev: MessageEvent<ReplyMessage | EventMessage>) => {
      const m = ev.data;
      if (m.type === 'event') {
        for (const l of this.listeners) l(m.event);
        return;
      }
      const p = this.pending.get(m.id);
      if (!p) return;
      this.pending.delete(m.id);
      if (m.ok) p.resolve(m.value);
      else p.reject(new WorkerRequestError(p.type, m.error));
    });
    this.worker.addEventListener('error', (ev) => {
      const message = `the training worker crashed: ${ev.message || 'it failed to load'}; reload the page (the last checkpoint is kept)`;
      for (const l of this.listeners) l({ kind: 'error', message });
      for (const p of this.pending.values()) p.reject(new WorkerRequestError(p.type, message));
      this.pending.clear();
    });
  }

  /** The lab in the worker, method by method (each call is one request; the list is protocol.ts REQUEST_TYPES). */
  readonly lab = Object.fromEntries(REQUEST_TYPES.map((type) => [type, (args: unknown) => this.request(type, args as never)])) as LabApi;

  /** Send one request; resolves with the worker's value or rejects with its error message. */
  request<K extends RequestType>(type: K, args: Requests[K]['args']): Promise<Requests[K]['value']> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { type, resolve: resolve as (v: unknown) => void, reject });
      this.worker.postMessage({ id, type, args });
    });
  }

  /** Subscribe to worker events; returns the unsubscribe function. */
  on(listener: (e: WorkerEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  terminate(): void {
    this.worker.terminate();
  }
}
