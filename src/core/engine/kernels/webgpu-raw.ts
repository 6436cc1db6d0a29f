/**
 * The few tfjs-backend-webgpu internals that the project's own WGSL kernels use (not public API;
 * checked against 4.22.0): the device, tfjs' command encoder (so that a kernel's passes are ordered
 * after the ops that made its inputs), and the GPUBuffer behind a tensor.
 *
 * For: kernels that record raw compute passes (logprob-webgpu.ts, ../model/decode-webgpu.ts).
 * Not for: choosing the backend (../backend.ts does that, alone).
 *
 * Example:
 *   const be = tf.backend() as unknown as WebGPUBackendInternals;
 *   const pipe = pipeline(be.device, 'my_kernel', WGSL);
 *   const buf = gpuBuffer(be, tensor, 'x');   // the tensor's storage, uploaded first if needed
 */
import * as tf from '@tensorflow/tfjs-core';

export interface WebGPUBackendInternals {
  device: GPUDevice;
  commandEncoder: GPUCommandEncoder | null;
  tensorMap: { get(dataId: tf.DataId): { resource?: unknown } | undefined };
  makeTensorInfo(shape: number[], dtype: tf.DataType, values?: tf.backend_util.BackendValues): tf.TensorInfo;
  uploadToGPU(dataId: tf.DataId): void;
  ensureCommandEncoderReady(): void;
  endComputePassEncoder(): void;
  submitQueue(): void;
}

const pipelines = new WeakMap<GPUDevice, Map<string, GPUComputePipeline>>();

/** A compute pipeline for `code` (entry point `main`), compiled once per device and name. */
export function pipeline(device: GPUDevice, name: string, code: string): GPUComputePipeline {
  let cache = pipelines.get(device);
  if (!cache) pipelines.set(device, (cache = new Map()));
  let p = cache.get(name);
  if (!p) {
    const module = device.createShaderModule({ code, label: name });
    p = device.createComputePipeline({ layout: 'auto', compute: { module, entryPoint: 'main' }, label: name });
    cache.set(name, p);
  }
  return p;
}

/** The GPUBuffer behind a tensor, uploading it first if it still lives on the CPU side. */
export function gpuBuffer(be: WebGPUBackendInternals, t: tf.TensorInfo, what: string): GPUBuffer {
  be.uploadToGPU(t.dataId);
  const res = be.tensorMap.get(t.dataId)?.resource;
  if (!(res instanceof GPUBuffer)) {
    throw new Error(`webgpu kernel: input '${what}' is not backed by a GPUBuffer (a texture?); pass a plain tensor`);
  }
  return res;
}
