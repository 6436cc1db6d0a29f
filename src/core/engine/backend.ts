// Chooses the tfjs backend for the whole program: the ONE place that calls tf.setBackend.
//
// Order by default: webgpu (if an adapter exists) -> wasm -> cpu. `force` picks exactly one and
// throws a clear error when it is unavailable. Works in the browser (vite bundle) and in Node
// (webgpu from Dawn via ./webgpu-node.ts, wasm binaries read from node_modules).
//
// Not for: kernels, models or anything that needs a specific backend's internals beyond the
// device/limits exposed here.
//
// Caveats:
//   - In Node, tensors living on webgpu cannot be moved to another backend (tfjs' synchronous
//     webgpu read needs OffscreenCanvas): dispose or `await t.data()` them before switching.
//   - After a WebGPU device loss (onDeviceLost) the webgpu backend is dead; reload the page.
//
// Example:
//   const info = await initBackend();              // {name: 'webgpu', adapter: {...}} or a fallback
//   console.log(describeBackend(info));            // "webgpu: google swiftshader (SwiftShader ...)"
//   const { maxStorageBufferBindingSize } = backendLimits();
//   await initBackend({ force: 'cpu' });           // switch; same call again is a no-op
//   await initBackend({ force: 'webgpu', webgpuLimits: 'default' }); // as a 128 MiB-binding GPU would run

import { registerCustomKernels } from './kernels/register.ts';
import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-backend-cpu';
import { installNodeWebGPU, isNode, nodeImport } from './webgpu-node.ts';

export type BackendName = 'webgpu' | 'wasm' | 'cpu';

export interface AdapterSummary {
  vendor: string;
  architecture: string;
  device?: string;
  description?: string;
  isFallbackAdapter?: boolean;
  limits: { maxBufferSize: number; maxStorageBufferBindingSize: number };
  features: string[];
}

export interface BackendInfo {
  name: BackendName;
  /** Only for webgpu: the adapter the device came from (limits/features are the device's). */
  adapter?: AdapterSummary;
  /** Only for wasm: whether the SIMD binary is used and how many threads. */
  wasm?: { simd: boolean; threads: number };
  /** Why we fell back from a better backend (only for automatic choice). */
  notice?: string;
}

/** Sizes kernels must respect (chunk by) on the current backend. */
export interface BackendLimits {
  maxBufferSize: number;
  maxStorageBufferBindingSize: number;
  maxComputeWorkgroupStorageSize: number;
  maxComputeInvocationsPerWorkgroup: number;
  maxComputeWorkgroupsPerDimension: number;
}

export interface DeviceLostInfo {
  reason: string;
  message: string;
}

const AUTO_ORDER: BackendName[] = ['webgpu', 'wasm', 'cpu'];
/** cpu/wasm have no per-buffer limit beyond memory; report 2 GiB (wasm32 heap, typed arrays). */
const NO_GPU_LIMIT = 2 ** 31 - 1;

/**
 * Which limits the WebGPU device is asked for. 'adapter' (tfjs' own choice): the adapter's best,
 * e.g. 1 GiB storage bindings on SwiftShader in Chromium, 2-4 GiB on desktop GPUs. 'default':
 * none requested, so WebGPU's defaults (128 MiB bindings, 256 MiB buffers), which every WebGPU
 * device supports: a run that works so works on the most limited GPU a browser gives.
 */
export type WebGPULimits = 'adapter' | 'default';

let current: BackendInfo | null = null;
let webgpuLimits: WebGPULimits = 'adapter';
let queue: Promise<unknown> = Promise.resolve();
let wasmPathsSet = false;
const lostListeners = new Set<(info: DeviceLostInfo) => void>();
const watchedDevices = new WeakSet<object>();

/** The tfjs WebGPUBackend fields we read (typed loosely so this file needs no GPU types). */
interface WebGPUBackendLike {
  device: GPUDevice;
}

/**
 * Selects and initializes the tfjs backend. Calls are serialized; repeating the current choice is
 * a no-op. Without `force` the best available one is used (so it also switches back from a forced
 * cpu) and `notice` says why better ones failed. With `force` it throws if that one cannot start.
 */
export function initBackend(opts: { force?: BackendName; webgpuLimits?: WebGPULimits } = {}): Promise<BackendInfo> {
  const run = queue.then(() => {
    if (opts.webgpuLimits) webgpuLimits = opts.webgpuLimits;
    return choose(opts.force);
  });
  queue = run.catch(() => undefined);
  return run;
}

/** The backend chosen by the last successful initBackend(), or null before that. */
export function currentBackend(): BackendInfo | null {
  return current;
}

async function choose(force: BackendName | undefined): Promise<BackendInfo> {
  if (force) {
    if (!AUTO_ORDER.includes(force)) {
      throw new Error(`initBackend: unknown backend '${force}'; use one of ${AUTO_ORDER.join(', ')}`);
    }
    if (current?.name === force && tf.getBackend() === force) return current;
    current = await activate(force);
    return current;
  }
  const failures: string[] = [];
  for (const name of AUTO_ORDER) {
    if (current?.name === name && tf.getBackend() === name) return current;
    if (name === 'webgpu') {
      const software = await softwareAdapter();
      if (software) {
        failures.push(`the WebGPU adapter is a software fallback (${software}), slower than wasm on this CPU; force webgpu to use it anyway`);
        continue;
      }
    }
    try {
      const info = await activate(name);
      if (failures.length) info.notice = failures.join('; ');
      current = info;
      return info;
    } catch (err) {
      failures.push(`${name} unavailable (${(err as Error).message})`);
    }
  }
  throw new Error(`initBackend: no tfjs backend could start: ${failures.join('; ')}`);
}

/**
 * The automatic choice skips a software WebGPU adapter (SwiftShader reports isFallbackAdapter):
 * it is correct but ~40x slower than wasm. Returns its description, or null for a real GPU / none.
 */
async function softwareAdapter(): Promise<string | null> {
  try {
    if (isNode() && !(await installNodeWebGPU()).ok) return null;
    const adapter = (await globalThis.navigator?.gpu?.requestAdapter()) as
      (GPUAdapter & { isFallbackAdapter?: boolean; info?: GPUAdapterInfo & { isFallbackAdapter?: boolean } }) | null | undefined;
    if (!adapter) return null;
    const fallback = adapter.info?.isFallbackAdapter ?? adapter.isFallbackAdapter ?? false;
    return fallback ? [adapter.info?.vendor, adapter.info?.architecture].filter(Boolean).join(' ') || 'software' : null;
  } catch {
    return null;
  }
}

let gradientsReady: Promise<void> | null = null;

/**
 * Registers tfjs-core's gradient functions once (training needs them; inference does not).
 * Bundlers take tfjs-core's ESM entry; plain Node cannot (its ESM build uses directory imports),
 * so there the CommonJS bundle of @tensorflow/tfjs, which shares our tfjs-core, registers them.
 */
function ensureGradients(): Promise<void> {
  gradientsReady ??= (async () => {
    if (tf.getGradient('RealDiv')) return;
    try {
      await import('@tensorflow/tfjs-core/dist/register_all_gradients');
    } catch {
      await nodeImport('@tensorflow/tfjs');
    }
    if (!tf.getGradient('RealDiv')) throw new Error('tfjs gradients could not be registered; training is unavailable');
  })();
  return gradientsReady;
}

/** Start one backend, then register the project's custom kernels and the gradient registry. */
async function activate(name: BackendName): Promise<BackendInfo> {
  const info = await activateOne(name);
  registerCustomKernels();
  await ensureGradients();
  return info;
}

async function activateOne(name: BackendName): Promise<BackendInfo> {
  if (name === 'webgpu') return activateWebGPU();
  if (name === 'wasm') return activateWasm();
  await setOrThrow('cpu');
  // The cpu backend's first write in Node advertises tfjs-node, which cannot install here; mute it.
  if (isNode()) (tf.backend() as unknown as { firstUse?: boolean }).firstUse = false;
  return { name: 'cpu' };
}

async function setOrThrow(name: BackendName): Promise<void> {
  // tf.setBackend returns false (and logs) when the backend's factory throws.
  const ok = await tf.setBackend(name);
  if (!ok || tf.getBackend() !== name) {
    throw new Error(`${name} requested but tfjs could not initialize it (see the warning above)`);
  }
  await tf.ready();
}

async function activateWebGPU(): Promise<BackendInfo> {
  if (isNode()) {
    const res = await installNodeWebGPU();
    if (!res.ok) throw new Error(`webgpu requested but no WebGPU adapter: ${res.why}`);
  } else {
    const gpu = (globalThis.navigator as Navigator | undefined)?.gpu;
    if (!gpu) {
      throw new Error(
        'webgpu requested but this browser has no navigator.gpu: use a recent Chrome/Edge over ' +
          'http://localhost or https (secure context); headless Chromium needs --enable-unsafe-webgpu',
      );
    }
    const probe = await gpu.requestAdapter().catch(() => null);
    if (!probe) {
      throw new Error('webgpu requested but no WebGPU adapter: navigator.gpu.requestAdapter() returned null ' +
        '(GPU blocklisted or disabled; in headless Chromium pass --enable-unsafe-webgpu)');
    }
  }
  // tfjs-backend-webgpu registers its factory only if navigator.gpu exists when it is evaluated,
  // which is why it is imported here, after the checks above, and never statically.
  const webgpu = await import('@tensorflow/tfjs-backend-webgpu');
  tfjsWebGPUFactory ??= tf.findBackendFactory('webgpu');
  // tfjs' factory asks for the adapter's limits; ours asks for none (WebGPU's defaults).
  const wanted = webgpuLimits === 'default' ? defaultLimitsFactory(webgpu.WebGPUBackend) : tfjsWebGPUFactory;
  if (wanted && tf.findBackendFactory('webgpu') !== wanted) {
    tf.removeBackend('webgpu');
    tf.registerBackend('webgpu', wanted, 3);
  }
  if (!tf.findBackendFactory('webgpu')) {
    throw new Error('webgpu requested but @tensorflow/tfjs-backend-webgpu did not register: it was ' +
      'imported somewhere before navigator.gpu existed; import it only through src/core/engine/backend.ts');
  }
  await setOrThrow('webgpu');
  const device = (tf.backend() as unknown as WebGPUBackendLike).device;
  watchDeviceLoss(device);
  return { name: 'webgpu', adapter: await summarizeAdapter(device) };
}

type BackendFactory = NonNullable<ReturnType<typeof tf.findBackendFactory>>;
/** tfjs-backend-webgpu's own factory, kept when ours replaces it. */
let tfjsWebGPUFactory: BackendFactory | null = null;
let ourFactory: BackendFactory | null = null;

/** A webgpu factory whose device is requested with no limits, so it gets WebGPU's defaults. */
function defaultLimitsFactory(Backend: new (device: GPUDevice, info?: GPUAdapterInfo) => tf.KernelBackend): BackendFactory {
  ourFactory ??= async () => {
    const adapter = await navigator.gpu.requestAdapter();
    if (!adapter) throw new Error('no WebGPU adapter');
    return new Backend(await adapter.requestDevice(), (adapter as GPUAdapter & { info?: GPUAdapterInfo }).info);
  };
  return ourFactory;
}

async function summarizeAdapter(device: GPUDevice): Promise<AdapterSummary> {
  // GPUDevice.adapterInfo is recent (Chrome 132+, Dawn); else ask a fresh adapter for its info.
  let info = (device as GPUDevice & { adapterInfo?: GPUAdapterInfo }).adapterInfo;
  if (!info) {
    const adapter = await navigator.gpu.requestAdapter();
    const legacy = adapter as (GPUAdapter & { info?: GPUAdapterInfo; requestAdapterInfo?: () => Promise<GPUAdapterInfo> }) | null;
    info = legacy?.info ?? (await legacy?.requestAdapterInfo?.());
  }
  const withFallback = info as (GPUAdapterInfo & { isFallbackAdapter?: boolean }) | undefined;
  return {
    vendor: info?.vendor ?? '',
    architecture: info?.architecture ?? '',
    device: info?.device || undefined,
    description: info?.description || undefined,
    isFallbackAdapter: withFallback?.isFallbackAdapter,
    limits: {
      maxBufferSize: device.limits.maxBufferSize,
      maxStorageBufferBindingSize: device.limits.maxStorageBufferBindingSize,
    },
    features: [...device.features].map(String).sort(),
  };
}

async function activateWasm(): Promise<BackendInfo> {
  const wasm = await import('@tensorflow/tfjs-backend-wasm');
  if (!wasmPathsSet) {
    // Must happen before the wasm backend first initializes.
    if (isNode()) {
      const { createRequire } = await nodeImport<typeof import('node:module')>('node:module');
      const pkg = createRequire(import.meta.url).resolve('@tensorflow/tfjs-backend-wasm/package.json');
      wasm.setWasmPaths(pkg.replace(/package\.json$/, 'dist/'));
    } else {
      const { wasmFileUrls } = await import('./wasm-assets.ts');
      wasm.setWasmPaths(wasmFileUrls);
    }
    wasmPathsSet = true;
  }
  // The threaded-SIMD build is turned off on purpose. Its pthread workers are started from
  // `wasmFactoryThreadedSimd.toString()`, which a bundler (vite) rewrites so that the function refers
  // to names outside itself: in a cross-origin-isolated page the workers then die with
  // "ReferenceError: e is not defined". The page gets its parallelism the way the CLI does, from lane
  // workers (one single-threaded wasm backend per core, src/worker/lane-workers.ts), whose results equal a
  // one-thread run's to the bit. Node never takes that build (tfjs reports no threads there).
  if (!isNode()) tf.env().set('WASM_HAS_MULTITHREAD_SUPPORT', false);
  await setOrThrow('wasm');
  const simd = Boolean(await tf.env().getAsync('WASM_HAS_SIMD_SUPPORT'));
  const threaded = Boolean(await tf.env().getAsync('WASM_HAS_MULTITHREAD_SUPPORT'));
  return { name: 'wasm', wasm: { simd, threads: threaded ? wasm.getThreadsCount() : 1 } };
}

function watchDeviceLoss(device: GPUDevice): void {
  if (watchedDevices.has(device)) return;
  watchedDevices.add(device);
  void device.lost.then((lost) => {
    const info = { reason: String(lost.reason ?? 'unknown'), message: lost.message ?? '' };
    if (current?.name === 'webgpu') {
      current = { ...current, notice: `WebGPU device lost (${info.reason}): ${info.message}` };
    }
    for (const cb of lostListeners) cb(info);
  });
}

/**
 * After a device loss: asks the browser for a new adapter and device and makes a fresh tfjs
 * WebGPU backend on it (tensors of the lost backend are gone; reload weights from a checkpoint).
 * Throws, saying so, when no GPU comes back, so the caller can continue on wasm instead.
 * Example: onDeviceLost(async () => { try { await restartWebGPU(); } catch { await initBackend({ force: 'wasm' }); } });
 */
export function restartWebGPU(): Promise<BackendInfo> {
  const run = queue.then(async () => {
    const factory = tf.findBackendFactory('webgpu');
    if (!factory) throw new Error('restartWebGPU: the webgpu backend was never started in this page');
    try {
      tf.removeBackend('webgpu'); // disposes the old backend; its device is already lost
    } catch {
      // a lost device may refuse some frees; the registry entry is gone either way
    }
    tf.registerBackend('webgpu', factory, 3);
    try {
      current = await activate('webgpu');
    } catch (e) {
      current = null;
      throw new Error(`the GPU did not come back (${(e as Error).message}); continue on wasm or reload the page`);
    }
    return current;
  });
  queue = run.catch(() => undefined);
  return run;
}

/**
 * Calls `cb` when the WebGPU device behind tfjs is lost (driver reset, tab backgrounded too long,
 * device.destroy()). Returns an unsubscribe function. Never fires on cpu/wasm.
 */
export function onDeviceLost(cb: (info: DeviceLostInfo) => void): () => void {
  lostListeners.add(cb);
  return () => lostListeners.delete(cb);
}

/** The GPUDevice tfjs uses, or null when the current backend is not webgpu. */
export function webgpuDevice(): GPUDevice | null {
  if (current?.name !== 'webgpu' || tf.getBackend() !== 'webgpu') return null;
  return (tf.backend() as unknown as WebGPUBackendLike).device;
}

/**
 * Limits to chunk work by. webgpu: the device's limits (SwiftShader in Chromium: 256 MiB buffers,
 * 128 MiB storage bindings). cpu/wasm: 2 GiB for buffer sizes, WebGPU defaults for the rest.
 * Example: `const rows = Math.floor(backendLimits().maxStorageBufferBindingSize / (4 * cols));`
 */
export function backendLimits(): BackendLimits {
  const device = webgpuDevice();
  if (device) {
    const l = device.limits;
    return {
      maxBufferSize: l.maxBufferSize,
      maxStorageBufferBindingSize: l.maxStorageBufferBindingSize,
      maxComputeWorkgroupStorageSize: l.maxComputeWorkgroupStorageSize,
      maxComputeInvocationsPerWorkgroup: l.maxComputeInvocationsPerWorkgroup,
      maxComputeWorkgroupsPerDimension: l.maxComputeWorkgroupsPerDimension,
    };
  }
  return {
    maxBufferSize: NO_GPU_LIMIT,
    maxStorageBufferBindingSize: NO_GPU_LIMIT,
    maxComputeWorkgroupStorageSize: 16384,
    maxComputeInvocationsPerWorkgroup: 256,
    maxComputeWorkgroupsPerDimension: 65535,
  };
}

/** One line for logs and the UI, e.g. "webgpu: google swiftshader (SwiftShader driver 5.0.0, fallback adapter)". */
export function describeBackend(info: BackendInfo): string {
  let s: string = info.name;
  if (info.adapter) {
    const a = info.adapter;
    const extra = [a.description, a.isFallbackAdapter ? 'fallback adapter' : ''].filter(Boolean).join(', ');
    s += `: ${[a.vendor, a.architecture].filter(Boolean).join(' ') || 'unknown adapter'}${extra ? ` (${extra})` : ''}`;
  }
  if (info.wasm) s += ` (${info.wasm.simd ? 'SIMD' : 'no SIMD'}, ${info.wasm.threads} thread${info.wasm.threads === 1 ? '' : 's'})`;
  if (info.notice) s += ` [${info.notice}]`;
  return s;
}
