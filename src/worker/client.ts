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
 *   await client.lab.configure({ config: {} });
 *   await client.lab.step({});
 */
import { type EventMessage, type LabApi, type ReplyMessage, type RequestType, type Requests, type WorkerEvent } from '../core/lab/protocol.ts';

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

  /** One request type as a method of the lab. */
  private method<K extends RequestType>(type: K): (args: Requests[K]['args']) => Promise<Requests[K]['value']> {
    return (args) => this.request(type, args);
  }

  /** The lab in the worker, method by method (each call is one request; a request left out fails to compile). */
  readonly lab: LabApi = {
    init: this.method('init'), configure: this.method('configure'), start: this.method('start'), compare: this.method('compare'),
    pause: this.method('pause'), lesson: this.method('lesson'), creditMethods: this.method('creditMethods'), scale: this.method('scale'),
    step: this.method('step'),
    takeOver: this.method('takeOver'), openSaved: this.method('openSaved'),
    reset: this.method('reset'), export: this.method('export'), importAdapter: this.method('importAdapter'), importDataset: this.method('importDataset'),
    loadModel: this.method('loadModel'), listRuns: this.method('listRuns'), webllmModels: this.method('webllmModels'), webllmCoach: this.method('webllmCoach'),
    recover: this.method('recover'), runTool: this.method('runTool'), loseDevice: this.method('loseDevice'), judgeDesk: this.method('judgeDesk'),
  };

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
