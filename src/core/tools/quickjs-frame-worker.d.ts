// The module vite.config.ts's quickjsFrameWorker() makes (browser builds only; js-sandbox.ts imports it
// in its opaque-origin frame branch): the QuickJS worker as one self-contained script, and its wasm's URL.
declare module 'virtual:quickjs-frame-worker' {
  /** src/core/tools/worker/quickjs-worker.mjs with quickjs-emscripten, bundled into one module script. */
  export const source: string;
  /** QuickJS's release-sync wasm, a file of this site. */
  export const wasmUrl: string;
}
