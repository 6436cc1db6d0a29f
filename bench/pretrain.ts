/**
 * Pretraining-step benchmark: how fast `trainModel` (scripts/pretrain/train.ts) takes one full
 * training step (forward, backward, Adam) of the shipped tiny agent (models/agent) on tfjs `wasm`,
 * with the batch's rows computed by this thread alone and with worker threads
 * (scripts/pretrain/data-parallel.ts), at the batch shapes `npm run pretrain` trains on.
 *
 * For: the data-parallel speed-up of `npm run pretrain -- --workers N` (tfjs-backend-wasm 4.22 runs
 * one thread in Node, so a second core is otherwise idle). Not for: checking numbers
 * (test/unit/pretrain/data-parallel.test.ts does, against the single-thread gradient).
 *
 * Shapes: rows x width with rows * width = --tokens-per-batch (2048, as pretraining), one per length
 * class of the corpus: math turns (~200-350 tokens), data-team turns (~500-1200 tokens). Random
 * token ids (the cost does not depend on them), loss on every position. Each (shape, threads) cell:
 * one warm-up step, then --steps steps timed; ms/step is their mean. All cells in one process, one
 * after another, so the speed-up column is a ratio measured in one run.
 *
 * Example: npm run bench -- pretrain --threads 1,2 --shapes 8x256,4x512,2x1024 --steps 6
 */
import os from 'node:os';
import { readFile } from 'node:fs/promises';
import * as tf from '@tensorflow/tfjs-core';
import { describeBackend, initBackend } from '../src/core/engine/backend.ts';
import { parseConfig } from '../src/core/engine/model/config.ts';
import { decodeSafetensors } from '../src/core/engine/model/safetensors.ts';
import { Rng } from '../src/core/stats/rng.ts';
import { GradientWorkers } from '../scripts/pretrain/data-parallel.ts';
import { trainModel } from '../scripts/pretrain/train.ts';
import type { Example } from '../scripts/pretrain/transcripts.ts';

interface Options { model: string; threads: number[]; shapes: [number, number][]; steps: number }

function parse(argv: string[]): Options {
  const o: Options = { model: 'models/agent', threads: [1, Math.min(4, os.availableParallelism())], shapes: [[8, 256], [4, 512], [2, 1024]], steps: 6 };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1]];
    if (value === undefined) throw new Error(`bench pretrain: ${flag} needs a value`);
    if (flag === '--model') o.model = value;
    else if (flag === '--threads') o.threads = value.split(',').map(Number);
    else if (flag === '--steps') o.steps = Number(value);
    else if (flag === '--shapes') o.shapes = value.split(',').map((s) => s.split('x').map(Number) as [number, number]);
    else throw new Error(`bench pretrain: unknown option ${flag} (--model DIR --threads 1,2 --shapes 8x256,2x1024 --steps N)`);
  }
  if (!o.threads.every((t) => Number.isInteger(t) && t >= 1)) throw new Error('bench pretrain: --threads takes whole numbers >= 1, e.g. 1,2');
  if (!o.shapes.every(([r, w]) => r >= 1 && w >= 2)) throw new Error('bench pretrain: --shapes takes ROWSxWIDTH, e.g. 8x256');
  if (!(o.steps >= 1)) throw new Error('bench pretrain: --steps must be >= 1');
  return o;
}

export async function main(argv: string[]): Promise<void> {
  const o = parse(argv);
  const backend = await initBackend({ force: 'wasm' });
  const config = parseConfig(JSON.parse(await readFile(`${o.model}/config.json`, 'utf8')), `${o.model}/config.json`);
  const { tensors } = await decodeSafetensors(new Uint8Array(await readFile(`${o.model}/model.safetensors`)), `${o.model}/model.safetensors`);
  const fresh = () => new Map([...tensors].map(([name, t]) => [name, tf.variable(tf.tensor(t.data, t.shape), true)]));
  const pools = new Map<number, GradientWorkers>();
  for (const n of o.threads) if (n > 1) pools.set(n, await GradientWorkers.start(n - 1, config, fresh()));
  const rng = new Rng('bench-pretrain');
  const rows: string[] = [];
  for (const [r, width] of o.shapes) {
    const examples: Example[] = [...Array(r)].map(() => {
      const ids = [...Array(width)].map(() => Math.floor(rng.next() * config.vocabSize));
      return { ids, lossMask: ids.map(() => 1) };
    });
    let base = NaN;
    for (const n of o.threads) {
      const weights = fresh();
      const opts = { tokensPerBatch: r * width, lr: 1e-5, seed: 0, warmup: 1, workers: pools.get(n) };
      await trainModel(config, weights, examples, { ...opts, steps: 1 });
      const report = await trainModel(config, weights, examples, { ...opts, steps: o.steps });
      for (const w of weights.values()) w.dispose();
      const ms = (report.seconds * 1000) / o.steps;
      if (n === 1) base = ms;
      rows.push(`| ${r} x ${width} | ${n} | ${ms.toFixed(0)} | ${Math.round((r * width) / (ms / 1000))} | ${Number.isNaN(base) ? '' : (base / ms).toFixed(2) + 'x'} |`);
      console.error(rows[rows.length - 1]);
    }
  }
  for (const p of pools.values()) await p.close();
  console.log(`Pretraining step of ${o.model} (${config.numLayers} layers, hidden ${config.hiddenSize}, vocab ${config.vocabSize}), backend ${describeBackend(backend)}, ` +
    `${os.availableParallelism()} cores, ${o.steps} steps per cell after one warm-up, ${new Date().toISOString().slice(0, 10)}\n`);
  console.log('| batch (rows x width) | threads | ms/step | tokens/s | speed-up vs 1 thread |\n|---|---:|---:|---:|---:|');
  console.log(rows.join('\n'));
}
