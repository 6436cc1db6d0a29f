/**
 * Before a model loads: its config.json alone says whether it can. Refuses an unsupported
 * architecture (parseConfig says which), a tensor larger than one GPU buffer, or weights (float32 in
 * memory) above half the device's memory, each with what to do instead. The vocabulary tables
 * (embedding, lm_head) are exempt from the per-buffer limit: the loader splits them (vocab-table.ts).
 *
 * For: the lab (lab/lab.ts) before it downloads a model. Not for: the run's whole memory plan
 * (memory-plan.ts, measure/run-plan.ts) or loading (load.ts).
 *
 * Example: SmolLM2-135M's largest tensor that is not a vocabulary table is an MLP weight, [1536, 576],
 *          1536 * 576 * 4 bytes = 3.4 MiB:
 *          await checkFits(source, { maxBufferSize: 2 * 2 ** 20 })
 *          // throws "… its tensor model.layers.0.mlp.gate_proj.weight needs 3 MiB but the adapter allows 2 MiB per buffer …"
 */
import { expectedWeights, parseConfig } from './config.ts';
import type { ModelSource } from './source.ts';
import { VOCAB_TABLES } from './vocab-table.ts';

export interface FitLimits {
  /** Largest single GPU buffer (bytes). */
  maxBufferSize: number;
  /** navigator.deviceMemory in GiB when the browser tells (rounded, capped at 8 by Chrome). */
  deviceMemoryGiB?: number;
}

/**
 * Reads config.json only and refuses models that cannot load: unsupported architecture (parseConfig
 * says which), a tensor larger than one GPU buffer, or weights (f32 in memory) above half the
 * device's memory. Returns the parameter count and the bytes the weights will take.
 */
export async function checkFits(source: ModelSource, limits: FitLimits): Promise<{ parameters: number; bytes: number }> {
  const config = parseConfig(await source.readJson('config.json'), `${source.name}/config.json`);
  let parameters = 0;
  let largest = 0;
  let largestName = '';
  for (const [name, shape] of expectedWeights(config)) {
    const n = shape.reduce((a, b) => a * b, 1);
    parameters += n;
    if ((VOCAB_TABLES as readonly string[]).includes(name)) continue; // held in row blocks when large
    if (n > largest) [largest, largestName] = [n, name];
  }
  const bytes = parameters * 4; // weights are held as float32
  const mib = (b: number) => `${(b / 2 ** 20).toFixed(0)} MiB`;
  if (largest * 4 > limits.maxBufferSize) {
    throw new Error(`${source.name} is too big for this GPU: its tensor ${largestName} needs ${mib(largest * 4)} ` +
      `but the adapter allows ${mib(limits.maxBufferSize)} per buffer; pick a smaller model`);
  }
  if (limits.deviceMemoryGiB && bytes > (limits.deviceMemoryGiB * 2 ** 30) / 2) {
    throw new Error(`${source.name} needs about ${mib(bytes)} of memory as float32, ` +
      `more than half of this device's ${limits.deviceMemoryGiB} GiB; pick a smaller model`);
  }
  return { parameters, bytes };
}
