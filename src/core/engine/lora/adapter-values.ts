/**
 * An adapter as plain values: its name, its settings and every variable's values concatenated in
 * `variables()` order. A snapshot that can be kept while training goes on (an evaluation of the team
 * as it was after iteration k), posted to another thread, or turned back into an adapter.
 *
 * For: evaluation snapshots (loop/eval-queue.ts) and work posted to lanes (compute/). Not for: files
 * (peft.ts writes PEFT safetensors).
 *
 * Example: const v = adapterValues(adapter);            // {name: 'solver', settings, values: Float32Array(4096)}
 *          const copy = adapterFromValues(config, v);   // a new adapter, bit-equal to the old one
 */
import * as tf from '@tensorflow/tfjs-core';
import type { ModelConfig } from '../model/config.ts';
import { LoraAdapter, type LoraSettings } from './adapter.ts';

export interface AdapterValues {
  name: string;
  settings: LoraSettings;
  values: Float32Array;
}

/** Every variable of the adapter, concatenated in `variables()` order. */
export function adapterValues(adapter: LoraAdapter): AdapterValues {
  return { name: adapter.name, settings: adapter.settings, values: concatValues(adapter.variables().map((v) => v.dataSync() as Float32Array)) };
}

/** Arrays end to end in one (the inverse of `unflatten`, for tensors read to the host in `variables()` order). */
export function concatValues(parts: Float32Array[]): Float32Array {
  const out = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** Splits a flat array back into tensors shaped like `vars` (the caller disposes them). */
export function unflatten(flat: Float32Array, vars: tf.Variable[]): tf.Tensor[] {
  let at = 0;
  return vars.map((v) => {
    const t = tf.tensor(flat.subarray(at, at + v.size), v.shape);
    at += v.size;
    return t;
  });
}

/** Sets the adapter's variables to the values (shapes must match); returns the adapter. */
export function assignValues(adapter: LoraAdapter, v: AdapterValues): LoraAdapter {
  const vars = adapter.variables();
  const size = vars.reduce((n, x) => n + x.size, 0);
  if (size !== v.values.length) throw new Error(`adapter "${v.name}" has ${v.values.length} values, expected ${size}`);
  const parts = unflatten(v.values, vars);
  vars.forEach((x, i) => x.assign(parts[i]));
  tf.dispose(parts);
  return adapter;
}

/** A new adapter holding these values (the caller disposes it). */
export function adapterFromValues(config: ModelConfig, v: AdapterValues): LoraAdapter {
  return assignValues(LoraAdapter.create(config, v.settings, v.name), v);
}
