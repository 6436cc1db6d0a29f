/**
 * Checkpoints and metrics of a run in a folder (Node). A checkpoint is written into a temporary
 * folder and swapped in with renames, so a kill at any moment leaves a whole checkpoint behind:
 *   <out>/checkpoint/…        the current checkpoint (see core/loop/checkpoint.ts)
 *   <out>/metrics.jsonl       one JSON record per iteration (and one per evaluation measured apart)
 *   <out>/<name>              the run's other files (trajectories.jsonl, adapters/…, summary.json)
 * Example: const store = new FileStore('runs/a'); await store.save(files); await store.load();
 */
import { appendFile, mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { CheckpointFiles, RunStore } from '../../core/loop/checkpoint.ts';

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
    await mkdir(this.dir, { recursive: true });
    const tmp = path.join(this.dir, `checkpoint.tmp-${process.pid}`);
    await rm(tmp, { recursive: true, force: true });
    for (const [name, bytes] of Object.entries(files)) {
      const file = path.join(tmp, name);
      await mkdir(path.dirname(file), { recursive: true });
      await writeFile(file, bytes);
    }
    // Swap: current -> old, tmp -> current, drop old. A crash in between leaves old or current whole.
    await rm(this.previous, { recursive: true, force: true });
    if (existsSync(this.current)) await rename(this.current, this.previous);
    await rename(tmp, this.current);
    await rm(this.previous, { recursive: true, force: true });
  }

  async load(): Promise<CheckpointFiles | null> {
    const dir = existsSync(this.current) ? this.current : existsSync(this.previous) ? this.previous : null;
    if (!dir) return null;
    const files: CheckpointFiles = {};
    for (const rel of await listFiles(dir)) files[rel] = new Uint8Array(await readFile(path.join(dir, rel)));
    return files;
  }

  async appendMetrics(record: unknown): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    await appendFile(path.join(this.dir, 'metrics.jsonl'), JSON.stringify(record) + '\n');
  }

  async writeFile(name: string, data: Uint8Array | string): Promise<void> {
    const file = path.join(this.dir, name);
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, data);
  }

  async readFile(name: string): Promise<string | null> {
    const file = path.join(this.dir, name);
    return existsSync(file) ? readFile(file, 'utf8') : null;
  }

  async appendText(name: string, text: string): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    await appendFile(path.join(this.dir, name), text);
  }

  /** The metrics records, oldest first. */
  async metrics<T>(): Promise<T[]> {
    const text = await this.readFile('metrics.jsonl');
    return (text ?? '').split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l) as T);
  }

  async clear(): Promise<void> {
    await rm(this.dir, { recursive: true, force: true });
  }

  /** Keep only the metrics of iterations up to `iteration` (after a resume, later lines were lost work). */
  async truncateMetrics(iteration: number): Promise<void> {
    const file = path.join(this.dir, 'metrics.jsonl');
    if (!existsSync(file)) return;
    const lines = (await readFile(file, 'utf8')).split('\n').filter((l) => l.trim() && (JSON.parse(l) as { iteration: number }).iteration <= iteration);
    await writeFile(file, lines.map((l) => l + '\n').join(''));
  }
}
