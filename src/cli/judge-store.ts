/**
 * Judge versions on disk: a taught judge is written as a new folder beside the old one, named by the
 * content hash of its weights, through a temporary folder renamed at the very end, so that a failed or
 * interrupted teaching leaves no half-written judge and never touches the old one.
 *
 * For: `mappa judge teach` and the corrections benchmark. Not for: teaching itself (src/core/coach/teach.ts).
 * Example: await writeJudgeVersion('models/relay-judge', 'models', result, {ratings: 'r.jsonl', corrections: 100})
 *            -> 'models/relay-judge-3fa9c2d41b07' (config, tokenizer, generation settings copied; new weights;
 *               taught.json naming the parent and both hashes; README.md)
 */
import { cp, mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { sha256Hex, type TeachResult } from '../core/coach/teach.ts';

/** Files of the old judge a version keeps as they are (everything but its weights, card and build report). */
const KEEP = (name: string) => !['model.safetensors', 'README.md', 'report.json', 'taught.json'].includes(name) && !name.startsWith('.');

/** Temporary folders being written now, removed on an interruption (see removeUnfinished). */
const unfinished = new Set<string>();

/** The folder a taught judge goes to: `<out>/<old judge's name, without an earlier hash>-<first 12 hex of the hash>`. */
export function versionFolder(judgeDir: string, outDir: string, hash: string): string {
  const base = path.basename(path.resolve(judgeDir)).replace(/-[0-9a-f]{12}$/, '');
  return path.join(outDir, `${base}-${hash.slice(0, 12)}`);
}

/**
 * Writes the taught judge as a new version and returns its folder. An identical version already there
 * (same hash) is kept and returned. `record` goes into taught.json beside the hashes.
 */
export async function writeJudgeVersion(judgeDir: string, outDir: string, r: TeachResult, record: Record<string, unknown>): Promise<string> {
  const final = versionFolder(judgeDir, outDir, r.hash);
  await mkdir(outDir, { recursive: true });
  const tmp = path.join(outDir, `.teaching-${process.pid}-${Date.now()}`);
  unfinished.add(tmp);
  try {
    await mkdir(tmp);
    for (const name of (await readdir(judgeDir)).filter(KEEP)) await cp(path.join(judgeDir, name), path.join(tmp, name), { recursive: true });
    await writeFile(path.join(tmp, 'model.safetensors'), r.safetensors);
    const parentHash = await sha256Hex(new Uint8Array(await readFile(path.join(judgeDir, 'model.safetensors'))));
    const taught = { hash: r.hash, parent: path.resolve(judgeDir), parentHash, ...record, steps: r.steps, seconds: +r.seconds.toFixed(1),
      loss: { first: +r.firstLoss.toFixed(4), final: +r.finalLoss.toFixed(4) } };
    await writeFile(path.join(tmp, 'taught.json'), JSON.stringify(taught, null, 2) + '\n');
    await writeFile(path.join(tmp, 'README.md'), `# ${path.basename(final)}: a taught judge\n\n`
      + `${path.basename(judgeDir)} (weights sha-256 ${parentHash.slice(0, 12)}) `
      + `taught by \`mappa judge teach\` on ${record.corrections ?? '?'} corrections (${record.ratings ?? 'a rating file'}), `
      + `${r.steps} steps in ${r.seconds.toFixed(0)} s. Its weights' sha-256 is ${r.hash}; taught.json has the recipe.\n`);
    if (await exists(final)) await rm(tmp, { recursive: true, force: true });
    else await rename(tmp, final);
    return final;
  } catch (e) {
    await rm(tmp, { recursive: true, force: true });
    throw e;
  } finally {
    unfinished.delete(tmp);
  }
}

async function exists(p: string): Promise<boolean> {
  return stat(p).then(() => true, () => false);
}

/** Removes every temporary folder still being written (call on SIGINT / SIGTERM before exiting). */
export async function removeUnfinished(): Promise<void> {
  await Promise.all([...unfinished].map((d) => rm(d, { recursive: true, force: true })));
}
