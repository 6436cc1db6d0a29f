// WebGPU for Node: puts Dawn's `navigator.gpu` (npm package `webgpu`) on globalThis so that
// tfjs-backend-webgpu can register itself, and finds a Vulkan driver on a machine with no GPU.
//
// Node-only. backend.ts imports it dynamically and only when running under Node; every Node
// module in here is itself imported through a variable specifier (`nodeImport`), so a browser
// bundle that happens to include this file never tries to resolve 'webgpu' or 'node:*'.
//
// Not for: choosing a tfjs backend (backend.ts) or anything in the browser, which has its own
// navigator.gpu.
//
// Vulkan on a GPU-less Debian machine (see /work/shared/WEBGPU-ON-CPU.md):
//   - driver: a VK_ICD_FILENAMES the user set, else a real driver installed system-wide (e.g.
//     nvidia_icd.json), else the SwiftShader ICD that Debian's `chromium` package ships,
//     /usr/lib/chromium/vk_swiftshader_icd.json. The Vulkan loader reads VK_ICD_FILENAMES at
//     each instance creation, so setting process.env here, before `create()`, works (checked:
//     no need to set it before Node starts).
//   - loader: Dawn dlopen()s `libvulkan.so.1`. When Debian's `libvulkan1` is not installed we
//     preload the copy chromium ships (/usr/lib/chromium/libvulkan.so.1) with RTLD_NODELETE, so
//     Dawn's later dlopen by soname finds the already-loaded library. The alternative,
//     LD_LIBRARY_PATH=/usr/lib/chromium, only works when set before Node starts.
//
// Example:
//   const r = await installNodeWebGPU();
//   if (!r.ok) console.warn(r.why);   // else globalThis.navigator.gpu is Dawn's GPU

/** Where Debian's chromium package puts its SwiftShader Vulkan driver and Vulkan loader. */
const CHROMIUM_LIB_DIR = '/usr/lib/chromium';
const SWIFTSHADER_ICD = `${CHROMIUM_LIB_DIR}/vk_swiftshader_icd.json`;

/** What to tell a user who has no WebGPU adapter in Node. */
const NODE_WEBGPU_HINT =
  "in Node, WebGPU runs on Dawn (npm 'webgpu') over Vulkan; without a GPU driver install Debian's " +
  `chromium, which ships the SwiftShader Vulkan driver (${SWIFTSHADER_ICD}): ` +
  'apt-get update && apt-get install -y chromium';

export interface NodeWebGPUResult {
  ok: boolean;
  /** Why there is no usable adapter (only when ok is false). */
  why?: string;
  /** Environment changes made, e.g. ['VK_ICD_FILENAMES=...'] (for logs). */
  actions: string[];
}

// dlopen flags of glibc on Linux; os.constants.dlopen lacks RTLD_NODELETE.
const RTLD_NOW = 0x2;
const RTLD_GLOBAL = 0x100;
const RTLD_NODELETE = 0x1000;

let installed: Promise<NodeWebGPUResult> | null = null;

/** True when running under Node (not a browser, not a web worker). */
export function isNode(): boolean {
  const p = (globalThis as { process?: { versions?: { node?: string } } }).process;
  return typeof p?.versions?.node === 'string' && typeof (globalThis as { window?: unknown }).window === 'undefined';
}

/** Imports a Node-only module without letting a bundler follow the specifier. */
export function nodeImport<T>(specifier: string): Promise<T> {
  return import(/* @vite-ignore */ specifier) as Promise<T>;
}

/**
 * Creates Dawn's GPU once per process and sets globalThis.navigator.gpu plus the GPU* classes
 * (GPUBufferUsage, ...). Then checks that an adapter exists. Idempotent; safe to call often.
 */
export function installNodeWebGPU(): Promise<NodeWebGPUResult> {
  installed ??= doInstall();
  return installed;
}

async function doInstall(): Promise<NodeWebGPUResult> {
  if (!isNode()) return { ok: false, why: 'installNodeWebGPU() is for Node only', actions: [] };
  const fs = await nodeImport<typeof import('node:fs')>('node:fs');
  const os = await nodeImport<typeof import('node:os')>('node:os');
  const path = await nodeImport<typeof import('node:path')>('node:path');
  const actions: string[] = [];
  const env = process.env;

  if (!env.XDG_RUNTIME_DIR) {
    const dir = path.join(os.tmpdir(), `mappa-xdg-${process.getuid?.() ?? 'user'}`);
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    env.XDG_RUNTIME_DIR = dir;
    actions.push(`XDG_RUNTIME_DIR=${dir}`);
  }
  const loader = preloadVulkanLoader(fs.existsSync(`${CHROMIUM_LIB_DIR}/libvulkan.so.1`));
  if (loader) actions.push(loader);

  let webgpu: { create(flags: string[]): GPU; globals: object };
  try {
    webgpu = await nodeImport('webgpu');
  } catch (err) {
    return { ok: false, why: `cannot load npm package 'webgpu' (Dawn): ${(err as Error).message}`, actions };
  }
  Object.assign(globalThis, webgpu.globals);
  const tryCreate = async (): Promise<{ gpu: GPU; adapter: GPUAdapter | null }> => {
    const gpu = webgpu.create([]);
    return { gpu, adapter: await gpu.requestAdapter().catch(() => null) };
  };

  // A driver the user chose, or a real one installed system-wide, wins over SwiftShader. Only
  // probe them when they exist: a probe without drivers makes the Vulkan loader print warnings.
  const userChoice = env.VK_ICD_FILENAMES || env.VK_DRIVER_FILES;
  let found: { gpu: GPU; adapter: GPUAdapter | null } | null = null;
  if (userChoice || systemVulkanDrivers(fs, path).length > 0) found = await tryCreate();
  if (!found?.adapter && !userChoice && fs.existsSync(SWIFTSHADER_ICD)) {
    env.VK_ICD_FILENAMES = SWIFTSHADER_ICD; // read by the loader at the next vkCreateInstance
    actions.push(`VK_ICD_FILENAMES=${SWIFTSHADER_ICD}`);
    found = await tryCreate();
  }
  found ??= await tryCreate();
  setNavigatorGpu(found.gpu);

  if (!found.adapter) {
    const why = !userChoice && !fs.existsSync(SWIFTSHADER_ICD)
      ? `Dawn found no Vulkan adapter and ${SWIFTSHADER_ICD} is missing: ${NODE_WEBGPU_HINT}`
      : `Dawn found no WebGPU adapter (VK_ICD_FILENAMES=${env.VK_ICD_FILENAMES ?? 'unset'}, ` +
        `${loader ?? 'system libvulkan.so.1'}): ${NODE_WEBGPU_HINT}`;
    return { ok: false, why, actions };
  }
  return { ok: true, actions };
}

/**
 * Vulkan driver manifests installed system-wide (the loader's default search folders), minus
 * Mesa's lavapipe, which Dawn refuses. Example: ['/usr/share/vulkan/icd.d/nvidia_icd.json'].
 */
function systemVulkanDrivers(fs: typeof import('node:fs'), path: typeof import('node:path')): string[] {
  const env = process.env;
  const dataDirs = (env.XDG_DATA_DIRS || '/usr/local/share:/usr/share').split(':');
  const configDirs = (env.XDG_CONFIG_DIRS || '/etc/xdg').split(':');
  const roots = [...configDirs, '/etc', ...dataDirs];
  if (env.HOME) roots.push(path.join(env.HOME, '.local/share'));
  const found: string[] = [];
  for (const root of roots) {
    const dir = path.join(root, 'vulkan/icd.d');
    let names: string[] = [];
    try {
      names = fs.readdirSync(dir);
    } catch {
      continue;
    }
    for (const n of names) if (n.endsWith('.json') && !/lvp|lavapipe/i.test(n)) found.push(path.join(dir, n));
  }
  return found;
}

/**
 * Makes sure `libvulkan.so.1` can be found by Dawn: the system one if installed, else the one
 * chromium ships. Returns a note for logs, or null when nothing was loaded.
 * Loading a plain library with process.dlopen throws "did not self-register" after the load
 * succeeded; RTLD_NODELETE keeps it mapped after Node's dlclose.
 */
function preloadVulkanLoader(chromiumHasLoader: boolean): string | null {
  if (process.platform !== 'linux') return null;
  const flags = RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE;
  const tryLoad = (file: string): boolean => {
    try {
      process.dlopen({ exports: {} } as NodeJS.Module, file, flags);
      return true;
    } catch (err) {
      return /self-register|napi_register_module/i.test((err as Error).message);
    }
  };
  if (tryLoad('libvulkan.so.1')) return null; // system loader (Debian libvulkan1) is there
  if (chromiumHasLoader && tryLoad(`${CHROMIUM_LIB_DIR}/libvulkan.so.1`)) {
    return `preloaded ${CHROMIUM_LIB_DIR}/libvulkan.so.1`;
  }
  return null;
}

/** Node 21+ has a read-only navigator getter; Node 20 has none. Handle both. */
function setNavigatorGpu(gpu: GPU): void {
  const g = globalThis as { navigator?: { gpu?: GPU } };
  if (g.navigator && g.navigator.gpu === gpu) return;
  if (g.navigator) {
    try {
      Object.defineProperty(g.navigator, 'gpu', { value: gpu, configurable: true, writable: true });
      if (g.navigator.gpu === gpu) return;
    } catch {
      // fall through: replace navigator itself
    }
  }
  Object.defineProperty(globalThis, 'navigator', {
    value: { ...(g.navigator ?? {}), gpu },
    configurable: true,
    writable: true,
  });
}
