/**
 * Runs in the browser's IndexedDB: the `RunStore` of one run (checkpoint files, metrics
 * records, exports) plus a small index of all runs so the page can overlay and resume them.
 *
 * For: the training worker (and any browser code) — it touches the `indexedDB` global only when a
 * method is called, never at import, so it is safe to import from the headless core.
 * Not for: Node (platform/node/file-store.ts keeps runs in folders).
 *
 * Database "mappa-sandbox", object stores:
 *   runs         runId -> RunRecord {runId, label, config, iteration, updatedAt}
 *   checkpoints  runId -> {files: Record<path, Uint8Array>, savedAt}   (one put = atomic replace)
 *   metrics      [runId, seq] -> record                               (appendMetrics)
 *   files        [runId, name] -> Uint8Array | string                  (writeFile: exports)
 *
 * One writer: the tab that trains a run `claim`s it, which bumps the run's writer token; every
 * write of a claimed store checks the token in the same transaction, so a tab that lost the run
 * (taken over) fails its next write with RunTakenOverError instead of interleaving records or moving
 * the checkpoint back.
 *
 * A stored checkpoint or log that cannot be read is refused with a RunFileError in one line: the run,
 * the file, what is wrong, and the way out (Reset).
 *
 * A full disk is reported, not swallowed: every write that hits the quota rejects with a
 * `StorageQuotaError` that says how much is used and what to do.
 *
 * Example:
 *   const store = new IdbStore('math-chain-process-seed0');
 *   await store.save({'state.json': bytes}); (await store.load())?.['state.json'];
 *   await store.appendMetrics({iteration: 1}); await store.metrics(); // [{iteration: 1}]
 */
import {
  checkCheckpoint, cutJsonl, describeCut, JsonlLineError, RunFileError, TRAJECTORIES, type CheckpointFiles, type RunStore,
} from '../../core/loop/checkpoint.ts';

/** The way out of a stored run that cannot be read: Reset opens it fresh (store.clear() before anything is read). */
export const STORED_RUN_WAY_OUT = 'press Reset to start this run again from iteration 0 (its stored records go)';
import type { RunRecord } from '../../core/lab/protocol.ts';

export type { RunRecord };

export const IDB_NAME = 'mappa-sandbox';
const VERSION = 1;

export class StorageQuotaError extends Error {
  constructor(what: string, detail: string) {
    super(`browser storage is full while saving ${what} (${detail}); delete old runs (Reset) or free site storage, then continue`);
    this.name = 'StorageQuotaError';
  }
}

export class RunTakenOverError extends Error {
  constructor(runId: string) {
    super(`run ${runId} was taken over by another tab; this tab shows it read-only (reload, or Take over, to train it here)`);
    this.name = 'RunTakenOverError';
  }
}

let opened: Promise<IDBDatabase> | null = null;

function openDb(): Promise<IDBDatabase> {
  opened ??= new Promise<IDBDatabase>((resolve, reject) => {
    if (typeof indexedDB === 'undefined') {
      reject(new Error('IndexedDB is not available here (private window or a non-browser runtime); runs cannot be saved'));
      return;
    }
    const req = indexedDB.open(IDB_NAME, VERSION);
    req.onupgradeneeded = () => {
      const db = req.result;
      if (!db.objectStoreNames.contains('runs')) db.createObjectStore('runs', { keyPath: 'runId' });
      if (!db.objectStoreNames.contains('checkpoints')) db.createObjectStore('checkpoints');
      if (!db.objectStoreNames.contains('metrics')) db.createObjectStore('metrics');
      if (!db.objectStoreNames.contains('files')) db.createObjectStore('files');
    };
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(new Error(`IndexedDB "${IDB_NAME}" could not be opened: ${req.error?.message}`));
    req.onblocked = () => reject(new Error(`IndexedDB "${IDB_NAME}" is blocked by another tab with an older version; close it`));
  }).catch((e) => {
    opened = null;
    throw e;
  });
  return opened;
}

async function quotaDetail(): Promise<string> {
  try {
    const est = await navigator.storage?.estimate?.();
    if (est?.usage !== undefined) return `${(est.usage / 2 ** 20).toFixed(1)} MiB used of ${((est.quota ?? 0) / 2 ** 20).toFixed(0)} MiB`;
  } catch { /* estimate is optional */ }
  return 'quota exceeded';
}

/** One transaction over `stores`; resolves with `body`'s value once the transaction commits. */
async function tx<T>(stores: string[], mode: IDBTransactionMode, what: string, body: (t: IDBTransaction) => T | Promise<T>): Promise<T> {
  const db = await openDb();
  const t = db.transaction(stores, mode);
  const done = new Promise<void>((resolve, reject) => {
    t.oncomplete = () => resolve();
    const fail = () => {
      const err = t.error;
      if (err?.name === 'QuotaExceededError') void quotaDetail().then((d) => reject(new StorageQuotaError(what, d)));
      else reject(new Error(`IndexedDB: ${what} failed: ${err?.message ?? 'transaction aborted'}`));
    };
    t.onerror = fail;
    t.onabort = fail;
  });
  let value: T;
  try {
    value = await body(t);
  } catch (e) {
    try {
      t.abort();
    } catch { /* already finished */ }
    await done.catch(() => undefined);
    throw e;
  }
  await done;
  return value;
}

function req<T>(r: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error);
  });
}

/** All runs saved in this browser, newest first. */
export async function listRuns(): Promise<RunRecord[]> {
  const all = await tx(['runs'], 'readonly', 'listing runs', (t) => req(t.objectStore('runs').getAll() as IDBRequest<RunRecord[]>));
  return all.sort((a, b) => b.updatedAt - a.updatedAt);
}

export class IdbStore implements RunStore {
  /** The writer token this store claimed (null: not claimed, writes unchecked). */
  private fence: number | null = null;

  constructor(readonly runId: string) {}

  private range(): IDBKeyRange {
    return IDBKeyRange.bound([this.runId], [this.runId, []]);
  }

  /** Makes this store the run's writer: stores that claimed it before fail their next write. */
  async claim(): Promise<void> {
    await tx(['runs'], 'readwrite', `claiming ${this.runId}`, async (t) => {
      const runs = t.objectStore('runs');
      const rec = (await req(runs.get(this.runId))) as RunRecord | undefined;
      const writer = (rec?.writer ?? 0) + 1;
      runs.put({ ...(rec ?? { runId: this.runId, label: '', config: null, iteration: 0, updatedAt: Date.now() }), writer } satisfies RunRecord);
      this.fence = writer;
    });
  }

  /** A read-write transaction that first checks this store still holds the run (claim). */
  private write<T>(stores: string[], what: string, body: (t: IDBTransaction, rec: RunRecord | undefined) => T | Promise<T>): Promise<T> {
    return tx([...new Set([...stores, 'runs'])], 'readwrite', what, async (t) => {
      const rec = (await req(t.objectStore('runs').get(this.runId))) as RunRecord | undefined;
      if (this.fence !== null && (rec?.writer ?? 0) !== this.fence) throw new RunTakenOverError(this.runId);
      return body(t, rec);
    });
  }

  /** Create or update this run's entry in the run index. */
  async describe(label: string, config: unknown, iteration = 0): Promise<void> {
    await this.write(['runs'], `run ${this.runId}`, (t, rec) => {
      t.objectStore('runs').put({ runId: this.runId, label, config, iteration, updatedAt: Date.now(), writer: rec?.writer } satisfies RunRecord);
    });
  }

  async record(): Promise<RunRecord | null> {
    return (await tx(['runs'], 'readonly', 'reading run', (t) => req(t.objectStore('runs').get(this.runId)))) ?? null;
  }

  async save(files: CheckpointFiles): Promise<void> {
    const iteration = readIteration(files);
    await this.write(['checkpoints'], `the checkpoint of ${this.runId}`, (t, rec) => {
      t.objectStore('checkpoints').put({ files, savedAt: Date.now() }, this.runId);
      if (rec) t.objectStore('runs').put({ ...rec, iteration: iteration ?? rec.iteration, updatedAt: Date.now() });
    });
  }

  async load(): Promise<CheckpointFiles | null> {
    const row = await tx(['checkpoints'], 'readonly', 'reading checkpoint', (t) => req(t.objectStore('checkpoints').get(this.runId)));
    const files = (row as { files: CheckpointFiles } | undefined)?.files ?? null;
    if (files) await checkCheckpoint(files, `the stored run "${this.runId}": checkpoint`, STORED_RUN_WAY_OUT);
    return files;
  }

  async appendMetrics(record: unknown): Promise<void> {
    await this.write(['metrics'], `metrics of ${this.runId}`, async (t) => {
      const store = t.objectStore('metrics');
      const keys = (await req(store.getAllKeys(this.range()))) as [string, number][];
      const seq = keys.length ? keys[keys.length - 1][1] + 1 : 0;
      store.put(record, [this.runId, seq]);
    });
  }

  /** Metrics records in the order they were appended. */
  async metrics<T = unknown>(): Promise<T[]> {
    return tx(['metrics'], 'readonly', 'reading metrics', (t) => req(t.objectStore('metrics').getAll(this.range()) as IDBRequest<T[]>));
  }

  /** Keep only records with `iteration <= n` (work after the last checkpoint was lost), in metrics and trajectories.jsonl. */
  async cutBack(n: number): Promise<string[]> {
    let later = 0;
    await this.write(['metrics'], 'cutting metrics back to the checkpoint', async (t) => {
      const store = t.objectStore('metrics');
      const keys = (await req(store.getAllKeys(this.range()))) as IDBValidKey[];
      const values = (await req(store.getAll(this.range()))) as { iteration?: number }[];
      values.forEach((v, i) => {
        if ((v?.iteration ?? 0) > n) {
          store.delete(keys[i]);
          later++;
        }
      });
    });
    const warnings = [describeCut('metrics', { text: '', later, torn: 0 }, n)];
    const log = await this.readFile(TRAJECTORIES);
    if (typeof log === 'string') {
      let cut;
      try {
        cut = cutJsonl(log, n);
      } catch (e) {
        if (e instanceof JsonlLineError) {
          throw new RunFileError(`the stored run "${this.runId}": ${TRAJECTORIES} line ${e.line}`, e.problem, STORED_RUN_WAY_OUT);
        }
        throw e;
      }
      if (cut.later || cut.torn) await this.writeFile(TRAJECTORIES, cut.text);
      warnings.push(describeCut(TRAJECTORIES, cut, n));
    }
    return warnings.filter((w): w is string => w !== null);
  }

  async writeFile(name: string, data: Uint8Array | string): Promise<void> {
    await this.write(['files'], `${name} of ${this.runId}`, (t) => void t.objectStore('files').put(data, [this.runId, name]));
  }

  async readFile(name: string): Promise<Uint8Array | string | null> {
    return (await tx(['files'], 'readonly', `reading ${name}`, (t) => req(t.objectStore('files').get([this.runId, name])))) ?? null;
  }

  /** Append text to a file (trajectories.jsonl); creates it when missing. */
  async appendText(name: string, text: string): Promise<void> {
    await this.write(['files'], `${name} of ${this.runId}`, async (t) => {
      const store = t.objectStore('files');
      const old = await req(store.get([this.runId, name]));
      store.put((typeof old === 'string' ? old : '') + text, [this.runId, name]);
    });
  }

  /** Delete everything of this run (checkpoint, metrics, files, index entry). */
  async clear(): Promise<void> {
    await this.write(['checkpoints', 'metrics', 'files'], `deleting ${this.runId}`, (t, rec) => {
      // The writer token outlives the run's data: a tab that lost the run stays fenced off.
      if (rec?.writer) t.objectStore('runs').put({
        runId: this.runId, label: '', config: null, iteration: 0, updatedAt: Date.now(), writer: rec.writer,
      } satisfies RunRecord);
      else t.objectStore('runs').delete(this.runId);
      t.objectStore('checkpoints').delete(this.runId);
      t.objectStore('metrics').delete(this.range());
      t.objectStore('files').delete(this.range());
    });
  }
}

function readIteration(files: CheckpointFiles): number | null {
  try {
    return (JSON.parse(new TextDecoder().decode(files['state.json'])) as { iteration: number }).iteration;
  } catch {
    return null;
  }
}
