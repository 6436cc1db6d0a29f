/**
 * Decode speed on a laptop GPU, projected on paper: `npm run bench -- projection [flags]`.
 * No GPU is needed: one token of one sequence (what web-llm's tok/s figures are) costs
 *
 *   time / token = max(weight bytes / bandwidth, FLOPs / compute) + dispatches x cost per dispatch
 *
 * with the weight bytes and FLOPs of the shape's step (decodeStepCost in ./decode.ts, 1 row, a
 * cached context) and the dispatches of each path:
 *   plain   the dispatches per layer `npm run bench -- decode --backend webgpu` counts for the plain
 *           step (--plain-per-layer, default 51) x layers + 10 (embedding, final norm, head, pick)
 *   fused   the WGSL step of decode-webgpu.ts: 5 dispatches per layer, counted by the same bench
 *           (--fused-per-layer) x layers + 2 (the embedding, the head)
 *   web-llm compiled, fused kernels and 4-bit weights: --webllm-bytes bytes per parameter (q4f16: 0.56)
 *           and --webllm-per-layer dispatches per layer (default 8)
 * Every assumption is a flag; the table states the values used. The per-dispatch cost on WebGPU
 * (encoding, validation, scheduling) is the least known: the device run (bench/gpu.sh) must
 * measure it, and the bandwidth a real step reaches, before any of these rows is believed.
 *
 * Flags: --bandwidth GB/s (100: an M2-class laptop), --efficiency (0.7 of it reached),
 *        --tflops (3.5 float32), --dispatch-us (20), --context (128), --plain-per-layer (51),
 *        --fused-per-layer (5), --webllm-bytes (0.56), --webllm-per-layer (8),
 *        --shapes smollm2-135m,qwen2.5-0.5b
 * Example: npm run bench -- projection --dispatch-us 40
 */
import type { ModelConfig } from '../src/core/engine/model/config.ts';
import { shapeConfig, shapeNamed } from '../src/core/engine/model/shapes.ts';
import { decodeStepCost } from './decode.ts';

export interface ProjectionOptions {
  bandwidth: number;
  efficiency: number;
  tflops: number;
  dispatchUs: number;
  context: number;
  plainPerLayer: number;
  fusedPerLayer: number;
  webllmBytes: number;
  webllmPerLayer: number;
  shapes: string[];
}

export const DEFAULTS: ProjectionOptions = {
  bandwidth: 100, efficiency: 0.7, tflops: 3.5, dispatchUs: 20, context: 128,
  plainPerLayer: 51, fusedPerLayer: 5, webllmBytes: 0.56, webllmPerLayer: 8, shapes: ['smollm2-135m', 'qwen2.5-0.5b'],
};

export interface ProjectedRow { shape: string; path: string; mb: number; dispatches: number; memoryMs: number; dispatchMs: number; tokPerS: number }

/** The three paths' projected single-sequence decode speed for one shape. */
export function project(c: ModelConfig, shape: string, o: ProjectionOptions): ProjectedRow[] {
  const { flops, bytes } = decodeStepCost(c, 1, o.context);
  const params = bytes / 4;
  const paths = [
    { path: 'plain (float32, a dispatch per tfjs kernel)', bytes, dispatches: o.plainPerLayer * c.numLayers + 10 },
    { path: 'fused (float32, decode-webgpu.ts)', bytes, dispatches: o.fusedPerLayer * c.numLayers + 2 },
    { path: `web-llm-like (${o.webllmBytes} B / parameter, compiled)`, bytes: params * o.webllmBytes, dispatches: o.webllmPerLayer * c.numLayers + 4 },
  ];
  return paths.map((p) => {
    const memoryMs = Math.max(p.bytes / (o.bandwidth * o.efficiency * 1e9), flops / (o.tflops * 1e12)) * 1000;
    const dispatchMs = (p.dispatches * o.dispatchUs) / 1000;
    return { shape, path: p.path, mb: p.bytes / 1e6, dispatches: p.dispatches, memoryMs, dispatchMs, tokPerS: 1000 / (memoryMs + dispatchMs) };
  });
}

export function parseProjectionArgs(argv: string[]): ProjectionOptions {
  const o = { ...DEFAULTS };
  const names: Record<string, keyof ProjectionOptions> = {
    '--bandwidth': 'bandwidth', '--efficiency': 'efficiency', '--tflops': 'tflops', '--dispatch-us': 'dispatchUs', '--context': 'context',
    '--plain-per-layer': 'plainPerLayer', '--fused-per-layer': 'fusedPerLayer', '--webllm-bytes': 'webllmBytes', '--webllm-per-layer': 'webllmPerLayer',
  };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, v] = [argv[i], argv[i + 1]];
    if (v === undefined) throw new Error(`bench projection: ${flag} needs a value`);
    if (flag === '--shapes') {
      o.shapes = v.split(',').map((s) => shapeNamed(s, 'projection'));
      continue;
    }
    const key = names[flag];
    if (!key) throw new Error(`bench projection: unknown flag ${flag} (${[...Object.keys(names), '--shapes'].join(', ')})`);
    const n = Number(v);
    if (!(n > 0) || !Number.isFinite(n)) throw new Error(`bench projection: ${flag} must be a positive number, got "${v}"`);
    (o as unknown as Record<string, number>)[key] = n;
  }
  return o;
}

export function formatProjection(rows: ProjectedRow[], o: ProjectionOptions): string {
  const head = `Projected decode speed of one sequence on a laptop GPU (on paper, not measured): ${o.bandwidth} GB/s x ${o.efficiency} reached, ${o.tflops} TFLOP/s, ${o.dispatchUs} us a dispatch, context ${o.context}.\n\n`
    + '| shape | path | weights MB / token | dispatches / token | memory-bound ms | dispatch ms | tok/s |\n|---|---|---:|---:|---:|---:|---:|\n';
  return head + rows.map((r) => `| ${r.shape} | ${r.path} | ${r.mb.toFixed(0)} | ${r.dispatches} | ${r.memoryMs.toFixed(2)} | ${r.dispatchMs.toFixed(2)} | ${r.tokPerS.toFixed(0)} |`).join('\n') + '\n';
}

export async function main(argv: string[]): Promise<void> {
  const o = parseProjectionArgs(argv);
  const rows = o.shapes.flatMap((s) => project(shapeConfig(s), s, o));
  process.stdout.write(formatProjection(rows, o));
}
