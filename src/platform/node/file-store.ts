/**
 * Checkpoints and metrics of a run in a folder (Node). A checkpoint is written into a temporary
 * folder and swapped in with renames, so a kill at any moment leaves a whole checkpoint behind:
 *   <out>/checkpoint/…        the current checkpoint (see core/loop/checkpoint.ts)
 *   <out>/metrics.jsonl       one JSON record per iteration (and one per evaluation measured apart)
 *   <out>/<name>              the run's other files (trajectories.jsonl, adapters/…, summary.json)
 * A write that fails (a full disk, no permission) rejects with a StoreWriteError naming the file and
 * what to do; a failed checkpoint write removes its temporary folder, and `cutBack` (on opening a
 * run) removes any that a killed process left.
 * Example: const store = new FileStore('runs/a'); await store.save(files); await store.load();
 */
import { appendFile, mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import path from 'node:path';
import {
  checkCheckpoint, cutJsonl, describeCut, JsonlLineError, readJsonl, RunFileError, TRAJECTORIES, type CheckpointFiles, type RunStore,
} from '../../core/loop/checkpoint.ts';

/** The way out of an unreadable checkpoint file, and of a damaged line in a log (run-file errors end in these). */
export const CHECKPOINT_WAY_OUT = 'delete the checkpoint folder to restart, or restore it';
export const LOG_WAY_OUT = 'delete or mend that line, or restore the file, then continue with --resume';

export class StoreWriteError extends Error {
  constructor(readonly file: string, readonly code: string | undefined, detail: string) {
    const advice = code === 'ENOSPC' || code === 'EDQUOT'
      ? `no space left on the disk while writing ${file}; free some space, then continue the run with --resume (its last checkpoint is whole)`
      : `cannot write ${file} (${detail}); fix that, then continue the run with --resume (its last checkpoint is whole)`;
    super(advice);
    this.name = 'StoreWriteError';
  }
}

/** Runs a write; a failure becomes a StoreWriteError that names `file`. */
async function writing<T>(file: string, body: () => Promise<T>): Promise<T> {
  try {
    return await body();
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    throw new StoreWriteError(file, err.code, err.message);
  }
}

async function listFiles(dir: string, prefix = ''): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const rel = prefix ? `${prefix}/${e.name}` : e.name;
    if (e.isDirectory()) out.push(...(await listFiles(path.join(dir, e.name), rel)));
    else out.push(rel);
  }
  return out;
}

export class FileStore implements RunStore {
  constructor(readonly dir: string) {}

  private get current() { return path.join(this.dir, 'checkpoint'); }
  private get previous() { return path.join(this.dir, 'checkpoint.old'); }

  async save(files: CheckpointFiles): Promise<void> {
    const tmp = path.join(this.dir, `checkpoint.tmp-${process.pid}`);
    try {
      await writing(tmp, async () => {
        await mkdir(this.dir, { recursive: true });
        await rm(tmp, { recursive: true, force: true });
        for (const [name, bytes] of Object.entries(files)) {
          const file = path.join(tmp, name);
          await mkdir(path.dirname(file), { recursive: true });
          await writeFile(file, bytes);
        }
      });
    } catch (e) {
      await rm(tmp, { recursive: true, force: true }).catch(() => undefined);
      throw e;
    }
    // Swap: current -> old, tmp -> current, drop old. A crash in between leaves old or current whole.
    await writing(this.current, async () => {
      await rm(this.previous, { recursive: true, force: true });
      if (existsSync(this.current)) await rename(this.current, this.previous);
      await rename(tmp, this.current);
      await rm(this.previous, { recursive: true, force: true });
    });
  }

  async load(): Promise<CheckpointFiles | null> {
    const dir = existsSync(this.current) ? this.current : existsSync(this.previous) ? this.previous : null;
    if (!dir) return null;
    const files: CheckpointFiles = {};
    for (const rel of await listFiles(dir)) files[rel] = new Uint8Array(await readFile(path.join(dir, rel)));
    await checkCheckpoint(files, dir, CHECKPOINT_WAY_OUT);
    return files;
  }

  async appendMetrics(record: unknown): Promise<void> {
    await this.appendText('metrics.jsonl', JSON.stringify(record) + '\n');
  }

  async writeFile(name: string, data: Uint8Array | string): Promise<void> {
    const file = path.join(this.dir, name);
    await writing(file, async () => {
      await mkdir(path.dirname(file), { recursive: true });
      await writeFile(file, data);
    });
  }

  async readFile(name: string): Promise<string | null> {
    const file = path.join(this.dir, name);
    return existsSync(file) ? readFile(file, 'utf8') : null;
  }

  async appendText(name: string, text: string): Promise<void> {
    const file = path.join(this.dir, name);
    await writing(file, async () => {
      await mkdir(this.dir, { recursive: true });
      await appendFile(file, text);
    });
  }

  /** The metrics records, oldest first. */
  async metrics<T>(): Promise<T[]> {
    const text = await this.readFile('metrics.jsonl');
    return readJsonl<T>(text ?? '', path.join(this.dir, 'metrics.jsonl'), LOG_WAY_OUT);
  }

  async clear(): Promise<void> {
    await rm(this.dir, { recursive: true, force: true });
  }

  /** cutJsonl, with a damaged line refused as a RunFileError naming this run's file. */
  private cut(name: string, text: string, iteration: number) {
    try {
      return cutJsonl(text, iteration);
    } catch (e) {
      if (e instanceof JsonlLineError) throw new RunFileError(`${path.join(this.dir, name)} line ${e.line}`, e.problem, LOG_WAY_OUT);
      throw e;
    }
  }

  /** Reads the checkpoint and the logs far enough to know they can be resumed; throws a RunFileError at the first damaged file. */
  async check(): Promise<void> {
    await this.load();
    for (const name of ['metrics.jsonl', TRAJECTORIES]) {
      const text = await this.readFile(name);
      if (text !== null) this.cut(name, text, Infinity);
    }
  }

  /** Cuts metrics.jsonl and trajectories.jsonl back to `iteration` (dropping torn lines) and removes leftover temporary checkpoints. */
  async cutBack(iteration: number): Promise<string[]> {
    const warnings: string[] = [];
    if (existsSync(this.dir)) {
      for (const e of await readdir(this.dir)) {
        if (!e.startsWith('checkpoint.tmp-')) continue;
        await rm(path.join(this.dir, e), { recursive: true, force: true });
        warnings.push(`removed ${e}, left by a checkpoint write that did not finish`);
      }
    }
    for (const name of ['metrics.jsonl', TRAJECTORIES]) {
      const text = await this.readFile(name);
      if (text === null) continue;
      const cut = this.cut(name, text, iteration);
      if (!cut.later && !cut.torn) continue;
      await this.writeFile(name, cut.text);
      warnings.push(describeCut(name, cut, iteration)!);
    }
    return warnings;
  }
}
