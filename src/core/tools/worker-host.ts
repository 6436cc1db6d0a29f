// One small interface over Node's jailed child processes (jail.ts) and the browser's Web Worker, so the
// sandboxes can start, message and kill their interpreters the same way in both.
//
// For: worker scripts that speak structured-clone messages (Node: v8-serialized frames over stdio,
// worker/jail-port.mjs). Not for: transferring ownership tricks or pools. Node modules are imported
// dynamically inside the Node branch, so browser bundles never pull them in.
//
// Example:
//   const host = await createWorkerHost(new URL('./worker/python-worker.mjs', import.meta.url), { maxHeapMb: 512, readPaths: [pyodideDir] });
//   host.onMessage((m) => console.log(m)); host.onExit((why) => console.warn(why)); host.post({ type: 'init', ... });
//   await host.terminate();

export interface WorkerHost {
  post(message: unknown): void;
  onMessage(listener: (message: any) => void): void;
  /** Called once if the worker dies on its own (uncaught error, out of JS heap, exit). */
  onExit(listener: (reason: string) => void): void;
  terminate(): Promise<void>;
  /** Node: kills the interpreter process when its resident memory passes `bytes`. */
  setRssCeiling?(bytes: number | undefined): void;
  /** Node (Linux): the interpreter process's resident memory in bytes. */
  rssBytes?(): number | undefined;
}

export interface WorkerHostOptions {
  maxHeapMb?: number; // Node only: V8 old-generation limit for the worker's JS heap (WebAssembly memory is separate)
  readPaths?: string[]; // Node only: the files the jailed process may read besides its script
  maxFrameBytes?: number; // Node only: the largest message the worker may send
}

export const isNode = (): boolean =>
  typeof process !== 'undefined' && !!process.versions?.node && typeof (globalThis as { window?: unknown }).window === 'undefined';

export async function createWorkerHost(url: URL, options: WorkerHostOptions = {}): Promise<WorkerHost> {
  return isNode() ? createNodeWorkerHost(url, options) : createBrowserWorkerHost(url);
}

/** Node: the worker script runs in a jailed child process (jail.ts), not a thread of the host. */
async function createNodeWorkerHost(url: URL, options: WorkerHostOptions): Promise<WorkerHost> {
  const { startJail } = await import(/* @vite-ignore */ './jail.ts');
  const { fileURLToPath } = await import(/* @vite-ignore */ 'node:url');
  return startJail({ script: fileURLToPath(url), readPaths: options.readPaths ?? [], maxHeapMb: options.maxHeapMb, maxFrameBytes: options.maxFrameBytes });
}

/**
 * Browser: a port to the page's opaque-origin frame (src/platform/browser/tool-frame.ts), handed to this
 * worker by the page (the lab worker) or by the lab worker (its lanes). Once set, tool workers that can
 * start from their script's bytes alone start there (createFrameWorkerHost); without it (a page that
 * has no frame, the harness pages) they start as workers of this origin, as before.
 */
let toolFrame: MessagePort | undefined;

/** The frame's protocol (tool-frame.ts FRAME_EXIT / FRAME_TERMINATE), restated: core imports no DOM code. */
const FRAME_EXIT = '__tool-frame-exit';
const FRAME_TERMINATE = '__tool-frame-terminate';

export function useToolFrame(port: MessagePort): void {
  toolFrame = port;
}

export const toolFrameInUse = (): boolean => toolFrame !== undefined;

/** A port for another worker (a lane) whose spawn requests this worker passes on to its own frame port. */
export function relayToolFrame(): MessagePort | undefined {
  if (!toolFrame) return undefined;
  const frame = toolFrame;
  const channel = new MessageChannel();
  channel.port1.onmessage = (e) => {
    if (e.data?.type === 'spawn' && e.data.port instanceof MessagePort) frame.postMessage(e.data, [e.data.port]);
  };
  return channel.port2;
}

/**
 * Browser, in the opaque-origin frame: `url`'s script is fetched here (this origin may) and handed to the
 * frame as text; the worker it starts there must import nothing by URL. Messages go over a MessagePort.
 */
export async function createFrameWorkerHost(url: URL): Promise<WorkerHost> {
  if (!toolFrame) throw new Error('no tool frame: useToolFrame() was not called in this worker');
  const res = await fetch(url);
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`);
  return frameWorkerFromSource(await res.text());
}

/** As createFrameWorkerHost, from the worker's whole script as text (e.g. a bundle the build made). */
export function frameWorkerFromSource(source: string): WorkerHost {
  if (!toolFrame) throw new Error('no tool frame: useToolFrame() was not called in this worker');
  const channel = new MessageChannel();
  toolFrame.postMessage({ type: 'spawn', source, port: channel.port2 }, [channel.port2]);
  const port = channel.port1;
  let exitListener: ((reason: string) => void) | undefined;
  const listeners: ((message: any) => void)[] = [];
  port.onmessage = (event) => {
    if (event.data?.type === FRAME_EXIT) exitListener?.(String(event.data.reason));
    else for (const l of listeners) l(event.data);
  };
  port.onmessageerror = () => exitListener?.('worker sent a message that could not be cloned');
  return {
    post: (message) => port.postMessage(message),
    onMessage: (listener) => void listeners.push(listener),
    onExit: (listener) => void (exitListener = listener),
    async terminate() {
      port.postMessage({ type: FRAME_TERMINATE });
      port.close();
    },
  };
}

function createBrowserWorkerHost(url: URL): WorkerHost {
  return browserWorkerHost(new Worker(url, { type: 'module' }));
}

/** A started browser worker as a WorkerHost (its load or crash error, and an uncloneable message, end it). */
export function browserWorkerHost(worker: Worker): WorkerHost {
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
