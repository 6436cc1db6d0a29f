/**
 * Fused WebGPU kernels for the log-probability of the chosen token, forward and backward.
 *
 *   forward   logits [N, V], targets [N] int32 -> logp [N] = logits[n, t_n] - lse[n],  lse [N]
 *   backward  dlogits[n, v] = dyLogp[n] * (onehot(t_n)[v] - p[n, v]) + dyLse[n] * p[n, v],
 *             p = exp(logits - lse), recomputed from the saved lse in one pass (no softmax kept).
 *
 * For: tfjs kernels 'MappaSelectedLogProb' / 'MappaSelectedLogProbGrad' on the `webgpu` backend,
 * registered by ./register.ts and reached through `selectedLogProbs` in ./logprob.ts.
 * Not for: cpu (the plain-ops path in ./logprob.ts), wasm (./logprob-wasm.ts: the same kernel names
 * and this file's gradient) or sampling.
 *
 * Why not `backend.runWebGPUProgram`: tfjs binds every tensor's WHOLE buffer, and a [N, V] float
 * buffer easily outgrows a storage binding (WebGPU's default and SwiftShader-in-Chromium limit is
 * 128 MiB; Qwen's V = 151936 x 240 rows is 146 MB). These kernels bind row ranges instead
 * ({buffer, offset, size}), one dispatch per chunk of rows, so only chunks must fit a binding.
 * Binding offsets must be multiples of minStorageBufferOffsetAlignment (256 bytes), so a chunk's
 * binding may start up to 252 bytes before its first row; `base` (in floats) skips that slack.
 * The passes are recorded into tfjs' own command encoder, which is then submitted, so they are
 * ordered after the ops that produced the inputs and before any later op or read.
 *
 * Numerics: one read of each row with an online (max, sum-of-exp) pair per thread, then a
 * 256-thread tree reduction in workgroup memory that merges the pairs (max-subtracted, stable).
 * Targets outside [0, V) pick nothing, like the plain path's all-zero one-hot (logp = -lse).
 *
 * Example (after initBackend({force: 'webgpu'}) and registerCustomKernels()):
 *   const [logp, lse] = tf.engine().runKernel(SELECTED_LOGPROB, {logits, targets}, {}) as tf.Tensor[];
 *   // logits [[0, ln 3]], targets [1] -> logp [ln(3/4) = -0.2877], lse [ln 4 = 1.3863]
 */
import * as tf from '@tensorflow/tfjs-core';
import { gpuBuffer, pipeline, type WebGPUBackendInternals } from './webgpu-raw.ts';

export const SELECTED_LOGPROB = 'MappaSelectedLogProb';
export const SELECTED_LOGPROB_GRAD = 'MappaSelectedLogProbGrad';

/** Threads per workgroup: one workgroup per row (forward), 256 columns per workgroup (backward). */
const WORKGROUP = 256;
/** Uniform blocks per chunk sit at this stride (WebGPU's minUniformBufferOffsetAlignment is <= 256). */
const UNIFORM_STRIDE = 256;

/** Test/bench knobs: shrink chunks below what the device allows. Defaults: the device's limits. */
export interface LogProbChunkLimits {
  /** At most this many rows per dispatch (e.g. 3 to force several chunks on a tiny input). */
  maxRowsPerChunk?: number;
  /** At most this many bytes per storage binding (e.g. 128 MiB to mimic SwiftShader-in-Chromium). */
  maxBindingBytes?: number;
}

let chunkLimits: LogProbChunkLimits = {};

/** Sets the chunk limits for later calls; returns the previous ones (to restore in `finally`). */
export function setLogProbChunkLimits(limits: LogProbChunkLimits): LogProbChunkLimits {
  const previous = chunkLimits;
  chunkLimits = { ...limits };
  return previous;
}

/** One dispatch's rows and the byte range of the [N, V] buffer it binds. */
export interface RowChunk {
  rowStart: number; // first row of the chunk in [0, N)
  rows: number;
  byteOffset: number; // binding offset: a multiple of the alignment
  byteSize: number; // binding size: covers rows rowStart .. rowStart+rows-1
  base: number; // floats between byteOffset and the chunk's first element
}

/**
 * Splits N rows of V floats into chunks whose bindings fit `maxBindingBytes` after aligning each
 * start down to `alignment`. Example: planRowChunks(8, 97, {maxBindingBytes: 1 << 30,
 * alignment: 256, maxRows: 3}) -> rows 0-2 at offset 0, rows 3-5 at offset 1024 with base 35 (1164
 * = 1024 + 35 * 4), rows 6-7 at offset 2304 with base 6.
 */
export function planRowChunks(
  rows: number,
  vocab: number,
  opts: { maxBindingBytes: number; alignment: number; maxRows: number },
): RowChunk[] {
  const rowBytes = vocab * 4;
  const slack = opts.alignment - 4; // worst case: a chunk starts 4 bytes after an aligned offset
  const fit = Math.floor((opts.maxBindingBytes - slack) / rowBytes);
  if (fit < 1) {
    throw new Error(
      `logprob-webgpu: one row of ${vocab} logits (${rowBytes} bytes) does not fit a storage binding of ` +
        `${opts.maxBindingBytes} bytes (limit maxStorageBufferBindingSize or setLogProbChunkLimits); ` +
        'use the plain path (selectedLogProbsPlain) for such a vocabulary',
    );
  }
  const perChunk = Math.max(1, Math.min(fit, Math.floor(opts.maxRows)));
  const chunks: RowChunk[] = [];
  for (let rowStart = 0; rowStart < rows; rowStart += perChunk) {
    const n = Math.min(perChunk, rows - rowStart);
    const start = rowStart * rowBytes;
    const byteOffset = start - (start % opts.alignment);
    chunks.push({
      rowStart,
      rows: n,
      byteOffset,
      byteSize: start + n * rowBytes - byteOffset,
      base: (start - byteOffset) / 4,
    });
  }
  return chunks;
}

// ---------------------------------------------------------------------------------------------
// WGSL. Params per chunk: vocab V, rows in the chunk, rowStart (global row of its first row),
// base (float offset of the chunk's first element inside the logits/dlogits binding).

const PARAMS_WGSL = /* wgsl */ `
struct Params { vocab : u32, rows : u32, rowStart : u32, base : u32 };
const WG : u32 = ${WORKGROUP}u;
`;

/** One workgroup per row: online (max, sumexp) per thread, then a tree merge of the pairs. */
const FORWARD_WGSL = /* wgsl */ `${PARAMS_WGSL}
@group(0) @binding(0) var<storage, read> logits : array<f32>;        // chunk rows of [N, V]
@group(0) @binding(1) var<storage, read> targets : array<i32>;       // [N]
@group(0) @binding(2) var<storage, read_write> logp : array<f32>;    // [N]
@group(0) @binding(3) var<storage, read_write> lse : array<f32>;     // [N]
@group(0) @binding(4) var<uniform> params : Params;

var<workgroup> shMax : array<f32, ${WORKGROUP}>;
var<workgroup> shSum : array<f32, ${WORKGROUP}>;

@compute @workgroup_size(${WORKGROUP})
fn main(@builtin(workgroup_id) wg : vec3<u32>, @builtin(local_invocation_index) tid : u32) {
  let r = wg.x;                                  // row inside the chunk (dispatch = rows)
  let rowBase = params.base + r * params.vocab;
  var m = -3.402823e38;                          // finite, so exp(-inf - m) = 0, never NaN
  var s = 0.0;
  for (var v = tid; v < params.vocab; v += WG) {
    let x = logits[rowBase + v];
    if (x > m) {
      s = s * exp(m - x) + 1.0;
      m = x;
    } else {
      s += exp(x - m);
    }
  }
  shMax[tid] = m;
  shSum[tid] = s;
  workgroupBarrier();
  for (var half = WG / 2u; half > 0u; half >>= 1u) {
    if (tid < half) {
      let m1 = shMax[tid];
      let m2 = shMax[tid + half];
      let mm = max(m1, m2);
      shSum[tid] = shSum[tid] * exp(m1 - mm) + shSum[tid + half] * exp(m2 - mm);
      shMax[tid] = mm;
    }
    workgroupBarrier();
  }
  if (tid == 0u) {
    let row = params.rowStart + r;
    let l = shMax[0] + log(shSum[0]);
    let t = targets[row];
    var picked = 0.0;
    if (t >= 0 && u32(t) < params.vocab) {
      picked = logits[rowBase + u32(t)];
    }
    lse[row] = l;
    logp[row] = picked - l;
  }
}
`;

/** One thread per element: grid (ceil(V / 256), rows). */
const BACKWARD_WGSL = /* wgsl */ `${PARAMS_WGSL}
@group(0) @binding(0) var<storage, read> logits : array<f32>;        // chunk rows of [N, V]
@group(0) @binding(1) var<storage, read> targets : array<i32>;       // [N]
@group(0) @binding(2) var<storage, read> lse : array<f32>;           // [N]
@group(0) @binding(3) var<storage, read> dyLogp : array<f32>;        // [N]
@group(0) @binding(4) var<storage, read> dyLse : array<f32>;         // [N]
@group(0) @binding(5) var<storage, read_write> dlogits : array<f32>; // chunk rows of [N, V]
@group(0) @binding(6) var<uniform> params : Params;

@compute @workgroup_size(${WORKGROUP})
fn main(@builtin(global_invocation_id) gid : vec3<u32>) {
  let v = gid.x;
  let r = gid.y;
  if (v >= params.vocab || r >= params.rows) {
    return;
  }
  let row = params.rowStart + r;
  let i = params.base + r * params.vocab + v;
  let p = exp(logits[i] - lse[row]);
  let gLogp = dyLogp[row];
  var g = (dyLse[row] - gLogp) * p;
  if (i32(v) == targets[row]) {
    g += gLogp;
  }
  dlogits[i] = g;
}
`;

function chunksFor(be: WebGPUBackendInternals, rows: number, vocab: number): RowChunk[] {
  const lim = be.device.limits;
  return planRowChunks(rows, vocab, {
    maxBindingBytes: Math.min(lim.maxStorageBufferBindingSize, chunkLimits.maxBindingBytes ?? Infinity),
    alignment: lim.minStorageBufferOffsetAlignment,
    maxRows: Math.min(chunkLimits.maxRowsPerChunk ?? Infinity, lim.maxComputeWorkgroupsPerDimension),
  });
}

/**
 * Records one compute pass (one dispatch per chunk) into tfjs' command encoder and submits it.
 * `entries(chunk, params)` gives the bind group of a chunk; `grid(chunk)` its workgroup counts.
 */
function dispatchChunks(
  be: WebGPUBackendInternals,
  pipe: GPUComputePipeline,
  vocab: number,
  chunks: RowChunk[],
  entries: (c: RowChunk, params: GPUBufferBinding) => GPUBufferBinding[],
  grid: (c: RowChunk) => [number, number],
): void {
  const device = be.device;
  const uniforms = device.createBuffer({
    size: chunks.length * UNIFORM_STRIDE,
    usage: GPUBufferUsage.UNIFORM,
    mappedAtCreation: true,
  });
  const u32 = new Uint32Array(uniforms.getMappedRange());
  chunks.forEach((c, i) => u32.set([vocab, c.rows, c.rowStart, c.base], (i * UNIFORM_STRIDE) / 4));
  uniforms.unmap();

  be.ensureCommandEncoderReady();
  be.endComputePassEncoder();
  const pass = be.commandEncoder!.beginComputePass({ label: pipe.label });
  pass.setPipeline(pipe);
  chunks.forEach((c, i) => {
    const params = { buffer: uniforms, offset: i * UNIFORM_STRIDE, size: 16 };
    const bindGroup = device.createBindGroup({
      layout: pipe.getBindGroupLayout(0),
      entries: entries(c, params).map((resource, binding) => ({ binding, resource })),
    });
    pass.setBindGroup(0, bindGroup);
    pass.dispatchWorkgroups(...grid(c));
  });
  pass.end();
  be.submitQueue();
  uniforms.destroy(); // freed by WebGPU once the submitted work is done
}

/** The forward's inputs, checked for every backend's kernel (`kernel` labels the error); returns [N, V]. */
export function checkInputs(logits: tf.TensorInfo, targets: tf.TensorInfo, kernel: string): [number, number] {
  if (logits.shape.length !== 2 || logits.dtype !== 'float32') {
    throw new Error(`${kernel}: logits must be float32 [N, V], got ${logits.dtype} [${logits.shape}]`);
  }
  const [n, v] = logits.shape;
  if (targets.dtype !== 'int32' || targets.shape.length !== 1 || targets.shape[0] !== n) {
    throw new Error(`${kernel}: targets must be int32 [${n}], got ${targets.dtype} [${targets.shape}]; cast with tf.cast(t, 'int32')`);
  }
  if (v < 1) throw new Error(`${kernel}: logits [${n}, ${v}] has an empty vocabulary axis`);
  return [n, v];
}

/** The backward's inputs (logits, targets, lse, dyLogp, dyLse), checked for every backend's kernel; returns [N, V]. */
export function checkGradInputs(inputs: tf.NamedTensorInfoMap, kernel: string): [number, number] {
  const { logits, targets, lse, dyLogp, dyLse } = inputs as Record<string, tf.TensorInfo>;
  const [n, vocab] = checkInputs(logits, targets, kernel);
  for (const [name, t] of Object.entries({ lse, dyLogp, dyLse })) {
    if (t.dtype !== 'float32' || t.shape.length !== 1 || t.shape[0] !== n) {
      throw new Error(`${kernel}: ${name} must be float32 [${n}], got ${t.dtype} [${t.shape}]`);
    }
  }
  return [n, vocab];
}

/** Whole-buffer binding of a small [N] tensor. */
const whole = (buffer: GPUBuffer): GPUBufferBinding => ({ buffer });
/** Row-range binding of an [N, V] tensor. */
const range = (buffer: GPUBuffer, c: RowChunk): GPUBufferBinding => ({ buffer, offset: c.byteOffset, size: c.byteSize });

function forwardKernel(args: { inputs: tf.NamedTensorInfoMap; backend: object }): tf.TensorInfo[] {
  const be = args.backend as WebGPUBackendInternals;
  const logits = args.inputs.logits!;
  const targets = args.inputs.targets!;
  const [n, vocab] = checkInputs(logits, targets, SELECTED_LOGPROB);
  if (n === 0) return [be.makeTensorInfo([0], 'float32', new Float32Array(0)), be.makeTensorInfo([0], 'float32', new Float32Array(0))];
  const logp = be.makeTensorInfo([n], 'float32'); // [N]
  const lse = be.makeTensorInfo([n], 'float32'); // [N]
  const bufs = [logits, targets, logp, lse].map((t, i) => gpuBuffer(be, t, ['logits', 'targets', 'logp', 'lse'][i]));
  const pipe = pipeline(be.device, 'mappa_selected_logprob_fwd', FORWARD_WGSL);
  dispatchChunks(
    be, pipe, vocab, chunksFor(be, n, vocab),
    (c, params) => [range(bufs[0], c), whole(bufs[1]), whole(bufs[2]), whole(bufs[3]), params],
    (c) => [c.rows, 1],
  );
  return [logp, lse];
}

function backwardKernel(args: { inputs: tf.NamedTensorInfoMap; backend: object }): tf.TensorInfo {
  const be = args.backend as WebGPUBackendInternals;
  const { logits, targets, lse, dyLogp, dyLse } = args.inputs as Record<string, tf.TensorInfo>;
  const [n, vocab] = checkGradInputs(args.inputs, SELECTED_LOGPROB_GRAD);
  if (n === 0) return be.makeTensorInfo([0, vocab], 'float32', new Float32Array(0));
  const columnGroups = Math.ceil(vocab / WORKGROUP);
  if (columnGroups > be.device.limits.maxComputeWorkgroupsPerDimension) {
    throw new Error(`${SELECTED_LOGPROB_GRAD}: vocabulary ${vocab} needs ${columnGroups} workgroups in x, over the device limit`);
  }
  const dlogits = be.makeTensorInfo([n, vocab], 'float32'); // [N, V]
  const names = ['logits', 'targets', 'lse', 'dyLogp', 'dyLse', 'dlogits'];
  const bufs = [logits, targets, lse, dyLogp, dyLse, dlogits].map((t, i) => gpuBuffer(be, t, names[i]));
  const pipe = pipeline(be.device, 'mappa_selected_logprob_bwd', BACKWARD_WGSL);
  dispatchChunks(
    be, pipe, vocab, chunksFor(be, n, vocab),
    (c, params) => [range(bufs[0], c), whole(bufs[1]), whole(bufs[2]), whole(bufs[3]), whole(bufs[4]), range(bufs[5], c), params],
    (c) => [columnGroups, c.rows],
  );
  return dlogits;
}

/** Kernel configs for tf.registerKernel (see ./register.ts). */
export const selectedLogProbKernels: tf.KernelConfig[] = [
  { kernelName: SELECTED_LOGPROB, backendName: 'webgpu', kernelFunc: forwardKernel as tf.KernelFunc },
  { kernelName: SELECTED_LOGPROB_GRAD, backendName: 'webgpu', kernelFunc: backwardKernel as tf.KernelFunc },
];

/** Gradient of SELECTED_LOGPROB for both outputs (logp and lse); targets get none (zeros). */
export const selectedLogProbGrad: tf.GradConfig = {
  kernelName: SELECTED_LOGPROB,
  inputsToSave: ['logits', 'targets'],
  outputsToSave: [false, true], // saved = [logits, targets, lse]
  gradFunc: (dys, saved) => {
    const [dyLogp, dyLse] = dys as tf.Tensor[];
    const [logits, targets, lse] = saved;
    return {
      logits: () => tf.engine().runKernel(SELECTED_LOGPROB_GRAD, { logits, targets, lse, dyLogp, dyLse }, {}) as tf.Tensor,
      targets: () => tf.zeros(targets.shape, 'float32'),
    };
  },
};
