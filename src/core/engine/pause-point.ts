/**
 * A pause point for long loops: every PAUSE_POINT_MS of work it gives the event loop one turn (a
 * macrotask), so that a message the host sent meanwhile is handled (the page's Pause reaches the
 * code that aborts the signal), then checks the signal. Between two turns it costs one microtask.
 *
 * Why: decoding on wasm is synchronous, and an `await` on a settled value only runs microtasks; a
 * generation of thousands of rows (a run of 100,000 prompts an iteration) never let a message in,
 * so a Pause pressed in the page was read minutes later. A turn of the event loop changes no result:
 * every computation runs in the same order with the same seeds.
 *
 * For: loops that run long without waiting on anything (decoding steps, rendering and tokenizing a
 * batch's prompts, playing each row's turn). Not for: deciding what a pause leaves behind (the
 * caller's: loop/train.ts throws StepAborted for the signal's reason).
 *
 * Example: for (const row of rows) { await pausePoint(signal); work(row); }   // throws signal.reason once aborted
 */

/** The longest stretch of work between two turns of the event loop (ms). */
const PAUSE_POINT_MS = 20;

let lastTurn = typeof performance === 'undefined' ? 0 : performance.now();

/** One macrotask: setImmediate in Node, a MessageChannel message in a browser (setTimeout(0) is clamped to 4 ms there). */
const nextTurn: () => Promise<void> = (() => {
  if (typeof setImmediate === 'function') return () => new Promise<void>((resolve) => setImmediate(resolve));
  if (typeof MessageChannel !== 'undefined') {
    const channel = new MessageChannel();
    const waiting: (() => void)[] = [];
    channel.port1.onmessage = () => waiting.shift()?.();
    return () => new Promise<void>((resolve) => {
      waiting.push(resolve);
      channel.port2.postMessage(null);
    });
  }
  return () => new Promise<void>((resolve) => setTimeout(resolve, 0));
})();

/**
 * Throws the signal's reason once it is aborted; every PAUSE_POINT_MS since the last turn, first
 * lets the event loop run (so an abort sent as a message can arrive).
 */
export async function pausePoint(signal?: AbortSignal): Promise<void> {
  signal?.throwIfAborted();
  if (performance.now() - lastTurn < PAUSE_POINT_MS) return;
  await nextTurn();
  lastTurn = performance.now();
  signal?.throwIfAborted();
}
