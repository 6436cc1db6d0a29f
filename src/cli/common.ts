/**
 * Shared pieces of the CLI: option parsing, backend start-up, opening a model by folder or URL.
 * Not for: anything a browser needs (that lives in src/core).
 */
import { availableParallelism } from 'node:os';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { currentBackend, initBackend, type BackendName } from '../core/engine/backend.ts';
import { loadModel, type LoadedModel, type LoadOptions } from '../core/engine/model/load.ts';
import { folderSource, urlSource } from '../core/engine/model/sources.ts';
import type { ModelSource } from '../core/engine/model/source.ts';
import type { LoraAdapter } from '../core/engine/lora/adapter.ts';
import { importPeft } from '../core/engine/lora/peft.ts';

export class CliError extends Error {
  constructor(message: string, readonly exitCode = 2) {
    super(message);
    this.name = 'CliError';
  }
}

type Options = NonNullable<ParseArgsConfig['options']>;

/** Parse argv against `options`; unknown flags and `--help` become clear messages. */
export function parseOptions<O extends Options>(argv: string[], options: O, usage: string) {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(usage);
    process.exit(0);
  }
  try {
    return parseArgs({ args: argv, options, allowPositionals: false, strict: true }).values;
  } catch (err) {
    throw new CliError(`${(err as Error).message}\n\n${usage}`);
  }
}

export const BACKEND_OPTION = { backend: { type: 'string' } } as const;

/** Start the tfjs backend named by --backend (or the automatic choice) and say which on stderr. */
export async function startBackend(name: string | undefined): Promise<void> {
  if (name !== undefined && !['cpu', 'wasm', 'webgpu'].includes(name)) {
    throw new CliError(`--backend must be cpu, wasm or webgpu, got "${name}"`);
  }
  const info = await initBackend({ force: name as BackendName | undefined });
  const adapter = info.adapter ? ` (${[info.adapter.vendor, info.adapter.architecture, info.adapter.description].filter(Boolean).join(', ')})` : '';
  process.stderr.write(`backend: ${info.name}${adapter}${info.notice ? ` — ${info.notice}` : ''}\n`);
}

/** --threads as a number (undefined when absent), refused in one line when malformed: call it before any work starts. */
export function threadsFlag(flag: string | undefined): number | undefined {
  if (flag === undefined) return undefined;
  const n = /^\d+$/.test(flag) ? Number(flag) : NaN;
  if (!Number.isInteger(n) || n < 1) throw new CliError(`--threads must be a whole number of 1 or more, got "${flag}"`);
  return n;
}

/** How many threads a run uses: --threads, else every core on wasm, else 1 (webgpu, cpu). Call after startBackend. */
export function threadCount(flag: string | undefined, backend = currentBackend()?.name ?? 'cpu', cores = availableParallelism()): number {
  const n = threadsFlag(flag);
  if (n !== undefined) {
    if (n > 1 && backend !== 'wasm') {
      throw new CliError(`--threads ${n} needs the wasm backend (this run uses ${backend}); drop --threads or pass --backend wasm`);
    }
    return n;
  }
  return backend === 'wasm' ? Math.max(1, cores) : 1;
}

/** A folder path, a URL (hub layout) or a hub id "org/name" -> ModelSource. */
export async function sourceFor(spec: string): Promise<ModelSource> {
  if (/^https?:\/\//.test(spec)) return urlSource(spec);
  const { existsSync } = await import('node:fs');
  if (existsSync(spec)) return folderSource(spec);
  if (/^[\w.-]+\/[\w.-]+$/.test(spec)) return urlSource(spec);
  throw new CliError(`model "${spec}" is neither a folder here nor a URL; pass a folder holding config.json and model.safetensors`);
}

/** The --model flag resolved to a source, refused in one line when missing or unreadable: before the backend starts. */
export async function modelSource(spec: string | undefined): Promise<ModelSource> {
  if (!spec) throw new CliError('--model is required (a folder with config.json and model.safetensors, or a hub URL)');
  return sourceFor(spec);
}

/** Loads a model from a --model flag (or a source already resolved by modelSource), with progress for large files. */
export async function openModel(spec: string | ModelSource | undefined, opts: LoadOptions = {}): Promise<LoadedModel> {
  let last = 0;
  return loadModel(typeof spec === 'object' ? spec : await modelSource(spec), {
    ...opts,
    onProgress: ({ file, loaded, total }) => {
      if (total && total > 8 << 20 && loaded - last > total / 20) {
        last = loaded;
        process.stderr.write(`loading ${file}: ${Math.round((100 * loaded) / total)}%\n`);
      }
    },
  });
}

/** "1, 2,3" -> [1, 2, 3]; anything else is refused by position. */
export function parseIdList(text: string, flag: string): number[] {
  const parts = text.split(',').map((s) => s.trim());
  return parts.map((p, i) => {
    if (!/^\d+$/.test(p)) throw new CliError(`${flag}: item ${i + 1} ("${p}") is not a non-negative integer token id`);
    return Number(p);
  });
}

/**
 * A number flag, finite and within [min, max]; `fallback` when the flag is absent.
 * Example: parseNumber('-1', '--temperature', 1, {min: 0}) -> CliError '--temperature must be a number of at least 0, got "-1"'
 */
export function parseNumber(value: string | undefined, flag: string, fallback: number, range: { min?: number; max?: number } = {}): number {
  if (value === undefined) return fallback;
  const n = value.trim() === '' ? NaN : Number(value);
  const { min = -Infinity, max = Infinity } = range;
  if (!Number.isFinite(n) || n < min || n > max) throw new CliError(`${flag} must be a number${rangeWords(min, max)}, got "${value}"`);
  return n;
}

/** A whole-number flag of at least `min` (and at most `max`). Example: parseIntFlag('2.5', '--max-tokens', 1) -> CliError. */
export function parseIntFlag(value: string, flag: string, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const n = /^[+-]?\d+$/.test(value.trim()) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) throw new CliError(`${flag} must be a whole number${rangeWords(min, max)}, got "${value}"`);
  return n;
}

function rangeWords(min: number, max: number): string {
  if (Number.isFinite(min) && max < Number.MAX_SAFE_INTEGER && Number.isFinite(max)) return ` in ${min}..${max}`;
  if (Number.isFinite(min)) return ` of at least ${min}`;
  return Number.isFinite(max) && max < Number.MAX_SAFE_INTEGER ? ` of at most ${max}` : '';
}

/** A PEFT adapter folder (--adapter DIR) for the loaded model, or null when not given. */
export async function openAdapter(dir: string | undefined, model: LoadedModel): Promise<LoraAdapter | null> {
  if (!dir) return null;
  return importPeft(await sourceFor(dir), model.config, 'cli');
}
