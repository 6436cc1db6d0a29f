/**
 * Checkpoints of a training run: per agent a PEFT adapter folder plus its optimizer state, and the
 * loop's state (iteration, curriculum and RNG state, metrics so far) — everything a resumed run
 * needs to continue exactly where it stopped.
 *
 * For: `encodeCheckpoint` / `decodeCheckpoint` (files <-> state), the `CheckpointStore` the Trainer
 * saves through, and the `RunStore` a whole run lives in (Node: folders, atomic rename; browser: IndexedDB).
 * Not for: deciding when to save (train.ts).
 *
 * Layout (paths inside one checkpoint):
 *   state.json                           iteration, curriculum, metrics, config
 *   adapters/<agent>/adapter_config.json adapter_model.safetensors   (PEFT, loadable as is)
 *   optimizer/<agent>.safetensors        AdamW m_i / v_i per parameter, step in metadata
 *   used.json                            the models and coach template the run used (models-used.ts)
 * A file that cannot be read is refused by `checkCheckpoint` in one line: the file, what is wrong, the way out.
 */
import type { ModelConfig } from '../engine/model/config.ts';
import { LoraAdapter } from '../engine/lora/adapter.ts';
import { exportPeft, importPeft } from '../engine/lora/peft.ts';
import { decodeSafetensors, encodeSafetensors } from '../engine/model/safetensors.ts';
import { memorySource } from '../engine/model/sources.ts';
import type { AdamWState } from '../rl/adamw.ts';
import type { CurriculumState } from './curriculum.ts';

export type CheckpointFiles = Record<string, Uint8Array>;

/** "position 16" from a JSON.parse error, or its message. */
export function jsonWhere(e: Error): string {
  const m = /position (\d+)/.exec(e.message);
  return m ? `position ${m[1]}` : e.message;
}

/** The run's trajectory log in its store: one JSON line per trajectory (rollout.ts trajectoryLines). */
export const TRAJECTORIES = 'trajectories.jsonl';

export interface CheckpointStore {
  /** Replace the checkpoint atomically: after a crash, either the old or the new one is there whole. */
  save(files: CheckpointFiles): Promise<void>;
  load(): Promise<CheckpointFiles | null>;
  /** Append one metrics record (a JSON line). */
  appendMetrics(record: unknown): Promise<void>;
  /** Write an export next to the run (trajectories.jsonl, metrics.csv, ...). */
  writeFile?(name: string, data: Uint8Array | string): Promise<void>;
}

/**
 * Everything a run keeps (core/loop/session.ts): its checkpoint, its metrics records and its files.
 * Node keeps a run in a folder (src/platform/node/file-store.ts), the browser in IndexedDB
 * (src/platform/browser/store-idb.ts).
 */
export interface RunStore extends CheckpointStore {
  writeFile(name: string, data: Uint8Array | string): Promise<void>;
  readFile(name: string): Promise<Uint8Array | string | null>;
  appendText(name: string, text: string): Promise<void>;
  /** Every metrics record, oldest first. */
  metrics<T>(): Promise<T[]>;
  /**
   * On opening a run: keep only the metrics and trajectory records of iterations up to `iteration`
   * (the checkpoint's; later ones were lost work), drop a torn last line, and remove what a failed
   * checkpoint write left behind. Returns what it dropped, in words, for a warning.
   */
  cutBack(iteration: number): Promise<string[]>;
  /** Delete the run: checkpoint, records and files. */
  clear(): Promise<void>;
}

export interface LoopState {
  iteration: number;
  curriculum: CurriculumState;
  metrics: unknown[];
  config: unknown;
  /** 'state' whitening's per-state baselines (rl/advantages.ts StateBaselines.entries), so a resumed run goes on with them. */
  baselines?: [string, number, number][];
}

export interface AgentState {
  adapter: LoraAdapter;
  optimizer: AdamWState;
}

const text = (s: string) => new TextEncoder().encode(s);

export async function encodeCheckpoint(loop: LoopState, agents: Map<string, AgentState>): Promise<CheckpointFiles> {
  const files: CheckpointFiles = { 'state.json': text(JSON.stringify(loop)) };
  for (const [id, a] of agents) {
    const peft = await exportPeft(a.adapter);
    for (const [name, bytes] of Object.entries(peft)) files[`adapters/${id}/${name}`] = bytes;
    const tensors = a.optimizer.m.flatMap((m, i) => [
      { name: `m.${i}`, shape: [m.length], data: m },
      { name: `v.${i}`, shape: [m.length], data: a.optimizer.v[i] },
    ]);
    files[`optimizer/${id}.safetensors`] = encodeSafetensors(tensors, { step: String(a.optimizer.step), slots: String(a.optimizer.m.length) });
  }
  return files;
}

export async function decodeCheckpoint(files: CheckpointFiles, modelConfig: ModelConfig, agentIds: string[]):
  Promise<{ loop: LoopState; agents: Map<string, AgentState> }> {
  const need = (name: string) => {
    const f = files[name];
    if (!f) throw new Error(`checkpoint is incomplete: "${name}" is missing; start a fresh run or restore the checkpoint folder`);
    return f;
  };
  const loop = JSON.parse(new TextDecoder().decode(need('state.json'))) as LoopState;
  const agents = new Map<string, AgentState>();
  for (const id of agentIds) {
    const prefix = `adapters/${id}/`;
    const adapterFiles: CheckpointFiles = {};
    for (const [name, bytes] of Object.entries(files)) if (name.startsWith(prefix)) adapterFiles[name.slice(prefix.length)] = bytes;
    need(`${prefix}adapter_model.safetensors`);
    const adapter = await importPeft(memorySource(adapterFiles, `checkpoint/${prefix}`), modelConfig, id);
    const { header, tensors } = await decodeSafetensors(need(`optimizer/${id}.safetensors`), `optimizer/${id}.safetensors`);
    const slots = Number(header.metadata.slots);
    const optimizer: AdamWState = {
      step: Number(header.metadata.step),
      m: Array.from({ length: slots }, (_, i) => tensors.get(`m.${i}`)!.data),
      v: Array.from({ length: slots }, (_, i) => tensors.get(`v.${i}`)!.data),
    };
    agents.set(id, { adapter, optimizer });
  }
  return { loop, agents };
}

/**
 * A run's file that cannot be read, in one line: the file, what is wrong with it, and the way out.
 * Example: 'runs/x/checkpoint/state.json is not valid JSON (position 16): delete the checkpoint folder to restart, or restore it'
 */
export class RunFileError extends Error {
  constructor(readonly file: string, readonly problem: string, readonly wayOut: string) {
    super(`${file} ${problem}: ${wayOut}`);
    this.name = 'RunFileError';
  }
}

function jsonProblem(bytes: Uint8Array): string | null {
  try {
    const v = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes)) as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? null : 'is not a JSON object';
  } catch (e) {
    return e instanceof SyntaxError ? `is not valid JSON (${jsonWhere(e)})` : 'is not UTF-8 text';
  }
}

/**
 * Reads every file of a checkpoint far enough to know it is whole: each JSON file parses to an object
 * (state.json with its iteration), each safetensors file has a header and all its tensor data. Throws a
 * RunFileError naming `where`/<file> and `wayOut` at the first that is not.
 * Example: checkCheckpoint({'state.json': bytes('{"iteration": 3,')}, 'runs/x/checkpoint', 'delete the checkpoint folder to restart, or restore it')
 *   -> throws 'runs/x/checkpoint/state.json is not valid JSON (position 16): delete the checkpoint folder to restart, or restore it'
 */
export async function checkCheckpoint(files: CheckpointFiles, where: string, wayOut: string): Promise<void> {
  const fail = (name: string, problem: string) => new RunFileError(`${where}/${name}`, problem, wayOut);
  if (!files['state.json']) throw fail('state.json', 'is missing');
  for (const [name, bytes] of Object.entries(files).sort(([a], [b]) => (a === 'state.json' ? -1 : b === 'state.json' ? 1 : a.localeCompare(b)))) {
    if (name.endsWith('.json')) {
      const problem = jsonProblem(bytes);
      if (problem) throw fail(name, problem);
      if (name === 'state.json') {
        const state = JSON.parse(new TextDecoder().decode(bytes)) as { iteration?: unknown };
        if (!Number.isInteger(state.iteration)) throw fail(name, 'has no whole-number "iteration"');
      }
    } else if (name.endsWith('.safetensors')) {
      try {
        await decodeSafetensors(bytes, name);
      } catch (e) {
        // "<name> is truncated: expected …; the download …" -> "is truncated: expected …"
        const what = (e as Error).message.replace(`${name}: `, '').replace(`${name} `, '').split('; ')[0].replace(/\.$/, '');
        throw fail(name, `cannot be read as safetensors (${what})`);
      }
    }
  }
}

/** What `cutJsonl` kept and dropped. */
export interface CutLines {
  text: string;
  /** Whole records of later iterations. */
  later: number;
  /** Lines that are not JSON (a record torn by a crash or a full disk). */
  torn: number;
}

/** A line of a JSONL log, not the last, that does not parse: damage, not a torn append (only the last line can be torn). */
export class JsonlLineError extends Error {
  constructor(readonly line: number, readonly problem: string) {
    super(`line ${line} ${problem}`);
    this.name = 'JsonlLineError';
  }
}

/**
 * A JSONL log cut back to the records of iterations up to `iteration`; a last line that does not parse
 * (a record torn by a crash or a full disk) is dropped and counted. A line before it that does not parse
 * is damage, not a tear: a JsonlLineError names it (the store adds the file and the way out).
 * Example: cutJsonl('{"iteration":1}\n{"iteration":2}\n{"itera', 1) -> {text: '{"iteration":1}\n', later: 1, torn: 1}
 *          cutJsonl('{"iteration":1}\n{"itera\n{"iteration":2}\n', 2) -> throws JsonlLineError 'line 2 is not valid JSON (position 7)'
 */
export function cutJsonl(text: string, iteration: number): CutLines {
  const out: string[] = [];
  let later = 0;
  let torn = 0;
  const lines = text.split('\n');
  let last = lines.length - 1;
  while (last >= 0 && !lines[last].trim()) last--;
  for (const [i, line] of lines.entries()) {
    if (!line.trim()) continue;
    let record: { iteration?: unknown };
    try {
      record = JSON.parse(line) as { iteration?: unknown };
    } catch (e) {
      if (i < last) throw new JsonlLineError(i + 1, `is not valid JSON (${jsonWhere(e as Error)})`);
      torn++;
      continue;
    }
    if (typeof record?.iteration === 'number' && record.iteration > iteration) later++;
    else out.push(line + '\n');
  }
  return { text: out.join(''), later, torn };
}

/**
 * Every record of a JSONL log, oldest first; a line that does not parse is refused in one line naming
 * `file`, the line and `wayOut`. Example: readJsonl('{"iteration":1}\n', 'runs/x/metrics.jsonl', '…') -> [{iteration: 1}]
 */
export function readJsonl<T>(text: string, file: string, wayOut: string): T[] {
  return text.split('\n').flatMap((line, i) => {
    if (!line.trim()) return [];
    try {
      return [JSON.parse(line) as T];
    } catch (e) {
      throw new RunFileError(`${file} line ${i + 1}`, `is not valid JSON (${jsonWhere(e as Error)})`, wayOut);
    }
  });
}

/** The warning for a cut log, or null when nothing was dropped. */
export function describeCut(name: string, cut: CutLines, iteration: number): string | null {
  const parts = [
    cut.later ? `${cut.later} record${cut.later > 1 ? 's' : ''} after the checkpoint's iteration ${iteration}` : '',
    cut.torn ? `${cut.torn} torn line${cut.torn > 1 ? 's' : ''}` : '',
  ].filter(Boolean);
  return parts.length ? `${name}: dropped ${parts.join(' and ')}` : null;
}
