// One small interface over Node's worker_threads and the browser's Web Worker, so the Python sandbox
// can start, message and kill its interpreter the same way in both.
//
// For: module workers that speak structured-clone messages. Not for: transferring ownership tricks or
// pools. Node modules are imported dynamically inside the Node branch, so browser bundles never pull
// them in.
//
// Example:
//   const host = await createWorkerHost(new URL('./worker/python-worker.mjs', import.meta.url), { maxHeapMb: 512 });
//   host.onMessage((m) => console.log(m)); host.onExit((why) => console.warn(why)); host.post({ type: 'init', ... });
//   await host.terminate();

export interface WorkerHost {
  post(message: unknown): void;
  onMessage(listener: (message: any) => void): void;
  /** Called once if the worker dies on its own (uncaught error, out of JS heap, exit). */
  onExit(listener: (reason: string) => void): void;
  terminate(): Promise<void>;
}

export interface WorkerHostOptions {
  maxHeapMb?: number; // Node only: V8 old-generation limit for the worker's JS heap (WebAssembly memory is separate)
}

export const isNode = (): boolean =>
  typeof process !== 'undefined' && !!process.versions?.node && typeof (globalThis as { window?: unknown }).window === 'undefined';

export async function createWorkerHost(url: URL, options: WorkerHostOptions = {}): Promise<WorkerHost> {
  return isNode() ? createNodeWorkerHost(url, options) : createBrowserWorkerHost(url);
}

async function createNodeWorkerHost(url: URL, options: WorkerHostOptions): Promise<WorkerHost> {
  const { Worker } = await import(/* @vite-ignore */ 'node:worker_threads');
  const worker = new Worker(url, {
    env: {}, // the worker gets an empty copy of process.env, not the host's secrets
    resourceLimits: options.maxHeapMb ? { maxOldGenerationSizeMb: options.maxHeapMb, maxYoungGenerationSizeMb: 64 } : undefined,
  });
  let exitListener: ((reason: string) => void) | undefined;
  let terminating = false;
  let exited = false;
  const reportExit = (reason: string) => {
    if (exited || terminating) return;
    exited = true;
    exitListener?.(reason);
  };
  worker.on('error', (err: Error & { code?: string }) =>
    reportExit(err.code === 'ERR_WORKER_OUT_OF_MEMORY' ? `worker ran out of JS heap memory (${err.message})` : `worker error: ${err.message}`),
  );
  worker.on('exit', (code: number) => reportExit(`worker exited with code ${code}`));
  return {
    post: (message) => worker.postMessage(message),
    onMessage: (listener) => void worker.on('message', listener),
    onExit: (listener) => void (exitListener = listener),
    async terminate() {
      terminating = true;
      await worker.terminate();
    },
  };
}

function createBrowserWorkerHost(url: URL): WorkerHost {
  const worker = new Worker(url, { type: 'module' });
  let exitListener: ((reason: string) => void) | undefined;
  worker.addEventListener('error', (event) => exitListener?.(`worker error: ${event.message || 'failed to load or crashed'}`));
  worker.addEventListener('messageerror', () => exitListener?.('worker sent a message that could not be cloned'));
  return {
    post: (message) => worker.postMessage(message),
    onMessage: (listener) => worker.addEventListener('message', (event) => listener(event.data)),
    onExit: (listener) => void (exitListener = listener),
    async terminate() {
      worker.terminate();
    },
  };
}
