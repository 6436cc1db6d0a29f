// Browser-only: the tfjs-backend-wasm binaries as vite assets, so the built static site carries
// them in dist/assets and works offline (no CDN). backend.ts imports this only in the browser;
// Node reads the same files from node_modules instead.
//
// Example: setWasmPaths(wasmFileUrls)  // before the first tf.setBackend('wasm')

/// <reference types="vite/client" />
import plainUrl from '@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm.wasm?url';
import simdUrl from '@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm-simd.wasm?url';
import threadedSimdUrl from '@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm-threaded-simd.wasm?url';

/** File name (as tfjs-backend-wasm asks for it) -> URL of the emitted asset. */
export const wasmFileUrls: Record<string, string> = {
  'tfjs-backend-wasm.wasm': plainUrl,
  'tfjs-backend-wasm-simd.wasm': simdUrl,
  'tfjs-backend-wasm-threaded-simd.wasm': threadedSimdUrl,
};
