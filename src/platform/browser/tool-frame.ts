/**
 * The code tools' opaque origin: a hidden `<iframe sandbox="allow-scripts">` (no allow-same-origin, so
 * its origin is opaque) that starts tool workers from script text handed in as bytes, and relays each
 * one's messages over a MessagePort. A worker started there has no storage, channel or file of the
 * page's origin: `indexedDB` and `caches` throw SecurityError, a BroadcastChannel reaches only its own
 * opaque origin, and a fetch of the site's files is refused (the frame's policy has no connect-src,
 * and an opaque origin gets no CORS answer from the site anyway). docs/threat-model.md, "Browser".
 *
 * The frame is an `srcdoc` document: it needs no file from the host (it works on any static host and
 * offline), and as an about:srcdoc document it inherits the page's cross-origin embedder policy, so a
 * cross-origin-isolated page can embed it. Its Content-Security-Policy (TOOL_FRAME_CSP, a <meta> in the
 * document; a blob: worker inherits its creator's policy) allows the frame's one inline script (by its
 * hash), workers and scripts from blob: URLs made in the frame's own opaque origin, WebAssembly, and
 * nothing else: no eval, no connection, no script or worker from any host.
 *
 * For: the page (a document is needed to host the frame); the page hands each port to whoever speaks
 * to the tool (the lab worker, and through it its lane workers). Not for: Node (jail.ts is its wall).
 *
 * Example:
 *   const frame = await openToolFrame();
 *   const tool = frame.spawn(await (await fetch('/probe/python-worker-probe.mjs')).text());
 *   tool.port.onmessage = (e) => console.log(e.data);  tool.port.postMessage({ port: 9 });
 *   tool.terminate();  frame.close();
 */

/** The frame's policy; `HASH` becomes the sha256 of FRAME_SCRIPT. */
export const TOOL_FRAME_CSP = "default-src 'none'; script-src 'HASH' blob: 'wasm-unsafe-eval'; worker-src blob:; "
  + "connect-src 'none'; base-uri 'none'; form-action 'none'";

/** Messages on a tool's port that the frame answers itself (any other message goes to the worker as is). */
export const FRAME_EXIT = '__tool-frame-exit'; // frame -> page: {type, reason}: the worker failed to load or crashed
export const FRAME_TERMINATE = '__tool-frame-terminate'; // page -> frame: stop the worker, close the port

// Runs inside the frame. Takes 'spawn' requests {type:'spawn', source, port} from its parent, and on any
// port its parent hands it as {type:'broker', port} (the lab worker's, through which its lanes' come too).
const FRAME_SCRIPT = `
function spawn(m) {
  if (!m || m.type !== 'spawn' || !(m.port instanceof MessagePort)) return;
  const port = m.port;
  let url;
  let moduleUrl;
  let worker;
  try {
    // A module worker from a blob: URL does not load in an opaque origin (Chromium, measured); a classic
    // one does, and imports the module from a blob: URL of the same origin. Messages that arrive before
    // the module has set its own onmessage are held, then handed to it in order.
    moduleUrl = URL.createObjectURL(new Blob([m.source], { type: 'text/javascript' }));
    const boot = 'const held = []; self.onmessage = (e) => held.push(e.data);'
      + 'import(' + JSON.stringify(moduleUrl) + ').then(() => { for (const data of held) self.dispatchEvent(new MessageEvent("message", { data })); },'
      + ' (e) => setTimeout(() => { throw e; }));';
    url = URL.createObjectURL(new Blob([boot], { type: 'text/javascript' }));
    worker = new Worker(url);
  } catch (err) {
    port.postMessage({ type: '${FRAME_EXIT}', reason: 'could not start the tool worker: ' + err });
    return;
  }
  parent.postMessage({ type: 'tool-frame-spawned' }, '*');
  worker.onmessage = (ev) => port.postMessage(ev.data);
  worker.onerror = (ev) => port.postMessage({ type: '${FRAME_EXIT}', reason: 'worker error: ' + (ev.message || 'failed to load or crashed') });
  worker.onmessageerror = () => port.postMessage({ type: '${FRAME_EXIT}', reason: 'worker sent a message that could not be cloned' });
  port.onmessage = (ev) => {
    if (ev.data && ev.data.type === '${FRAME_TERMINATE}') {
      worker.terminate();
      URL.revokeObjectURL(url);
      URL.revokeObjectURL(moduleUrl);
      port.close();
    } else worker.postMessage(ev.data);
  };
}
addEventListener('message', (e) => {
  if (e.source !== parent) return;
  if (e.data && e.data.type === 'broker' && e.data.port instanceof MessagePort) e.data.port.onmessage = (ev) => spawn(ev.data);
  else spawn(e.data);
});
parent.postMessage({ type: 'tool-frame-ready' }, '*');
`;

export interface FrameTool {
  /** Speaks to the worker: what is posted here reaches the worker's onmessage, what it posts arrives here. */
  port: MessagePort;
  terminate(): void;
}

export interface ToolFrame {
  /** Starts a module worker from `source` (its whole script, no imports of the site's files) in the frame. */
  spawn(source: string | Uint8Array): FrameTool;
  /** A port on which a worker (the lab's) asks for tools: worker-host.ts's useToolFrame() takes it. */
  broker(): MessagePort;
  /** How many tool workers the frame has started (the browser red team checks the tools run there). */
  readonly spawned: number;
  close(): void;
}

async function sha256Base64(text: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)));
  return btoa(String.fromCharCode(...digest));
}

/** Adds the hidden frame to the page and resolves once its script runs; rejects after `timeoutMs`. */
export async function openToolFrame(timeoutMs = 10_000): Promise<ToolFrame> {
  const csp = TOOL_FRAME_CSP.replace('HASH', `sha256-${await sha256Base64(FRAME_SCRIPT)}`);
  let spawned = 0;
  const frame = document.createElement('iframe');
  frame.setAttribute('sandbox', 'allow-scripts');
  frame.setAttribute('aria-hidden', 'true');
  frame.tabIndex = -1;
  frame.style.display = 'none';
  frame.srcdoc = `<!doctype html><meta http-equiv="Content-Security-Policy" content="${csp}"><script>${FRAME_SCRIPT}</script>`;
  let onFrameMessage: (e: MessageEvent) => void = () => {};
  const ready = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      removeEventListener('message', onFrameMessage);
      reject(new Error(`the code tools' sandboxed frame did not start within ${timeoutMs} ms`));
    }, timeoutMs);
    onFrameMessage = (e: MessageEvent) => {
      if (e.source === frame.contentWindow && e.data?.type === 'tool-frame-spawned') spawned++;
      if (e.source !== frame.contentWindow || e.data?.type !== 'tool-frame-ready') return;
      clearTimeout(timer);
      resolve();
    };
    addEventListener('message', onFrameMessage);
  });
  document.body.append(frame);
  try {
    await ready;
  } catch (e) {
    removeEventListener('message', onFrameMessage);
    frame.remove();
    throw e;
  }
  return {
    spawn(source) {
      const channel = new MessageChannel();
      // The opaque origin's target is '*': it has no origin to name; the source check above pins the frame.
      frame.contentWindow!.postMessage({ type: 'spawn', source, port: channel.port2 }, '*', [channel.port2]);
      return { port: channel.port1, terminate: () => channel.port1.postMessage({ type: FRAME_TERMINATE }) };
    },
    broker() {
      const channel = new MessageChannel();
      frame.contentWindow!.postMessage({ type: 'broker', port: channel.port2 }, '*', [channel.port2]);
      return channel.port1;
    },
    get spawned() {
      return spawned;
    },
    close() {
      removeEventListener('message', onFrameMessage);
      frame.remove();
    },
  };
}
