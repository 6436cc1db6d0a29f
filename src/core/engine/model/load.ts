/**
 * Loading a model: config -> validated weights -> `CausalLM`, plus its tokenizer and generation
 * defaults when the source has them. The shipped tiny models, the parity fixtures and real hub
 * checkpoints all come through here.
 *
 * For: `loadModel(source)` from any ModelSource. Not for: choosing the backend (backend.ts).
 * Example: const { model, tokenizer } = await loadModel(folderSource('models/agent'));
 */
import { backendLimits } from '../backend.ts';
import { parseConfig, type ModelConfig } from './config.ts';
import { CausalLM } from './llama.ts';
import type { ModelSource, ProgressCallback } from './source.ts';
import { loadWeights } from './weights.ts';
import { TextTokenizer } from '../tokenizer/tokenizer.ts';

/** Sampling defaults from `generation_config.json` (all optional). */
export interface GenerationDefaults {
  temperature?: number;
  topK?: number;
  topP?: number;
  eosTokenIds?: number[];
  maxNewTokens?: number;
}

export interface LoadedModel {
  model: CausalLM;
  config: ModelConfig;
  tokenizer: TextTokenizer | null;
  generation: GenerationDefaults;
  source: ModelSource;
}

export interface LoadOptions {
  onProgress?: ProgressCallback;
  /** 'auto' (default) loads tokenizer.json when present; 'required' fails without it; 'skip' never reads it. */
  tokenizer?: 'auto' | 'required' | 'skip';
  /**
   * Largest single tensor in bytes; a vocabulary table over it is split into row blocks. Default:
   * what the active backend can bind and allocate (webgpu: the device's limits; wasm/cpu: 2 GiB).
   */
  maxTensorBytes?: number;
}

function parseGenerationConfig(raw: Record<string, unknown>): GenerationDefaults {
  const num = (k: string) => (typeof raw[k] === 'number' ? (raw[k] as number) : undefined);
  const eos = raw.eos_token_id;
  return {
    temperature: raw.do_sample === false ? 0 : num('temperature'),
    topK: num('top_k'),
    topP: num('top_p'),
    eosTokenIds: eos == null ? undefined : (Array.isArray(eos) ? eos : [eos]).filter((x): x is number => Number.isInteger(x)),
    maxNewTokens: num('max_new_tokens'),
  };
}

export async function loadModel(source: ModelSource, opts: LoadOptions = {}): Promise<LoadedModel> {
  const config = parseConfig(await source.readJson('config.json'), `${source.name}/config.json`);
  const mode = opts.tokenizer ?? 'auto';
  // Tokenizer first: it is small, and a missing one should fail before a large download.
  let tokenizer: TextTokenizer | null = null;
  if (mode === 'required' || (mode === 'auto' && (await source.has('tokenizer.json')))) {
    tokenizer = await TextTokenizer.fromSource(source);
  }
  const generation = (await source.has('generation_config.json'))
    ? parseGenerationConfig(await source.readJson<Record<string, unknown>>('generation_config.json'))
    : {};
  const limits = backendLimits();
  const maxTensorBytes = opts.maxTensorBytes ?? Math.min(limits.maxStorageBufferBindingSize, limits.maxBufferSize);
  const weights = await loadWeights(source, config, { onProgress: opts.onProgress, maxTensorBytes });
  return { model: new CausalLM(config, weights), config, tokenizer, generation, source };
}

/** End-of-sequence ids from every place a checkpoint may declare them. */
export function stopTokenIds(m: LoadedModel): number[] {
  return [...new Set([...(m.generation.eosTokenIds ?? []), ...(m.tokenizer?.eosTokenIds ?? []), ...m.config.eosTokenIds])];
}
