/**
 * One writer per run in the browser: a tab (its training worker) trains a run only while it holds
 * the Web Lock "mappa-run:<runId>". A second tab that opens the same run finds the lock taken and
 * shows the run read-only; its "Take over" asks the holder, over a BroadcastChannel, to pause at a
 * checkpoint and let go, waits for the lock, and steals it only if the holder does not answer (a
 * frozen tab). Stealing alone could let a late write of the old holder land: the store's writer
 * token (store-idb.ts `claim`) fences those off, so nothing can move a checkpoint backwards.
 *
 * For: the training worker's LabPlatform (`claimRun`). Not for: Node (platform/node/run-lock.ts).
 *
 * Example: const w = await claimRun('relay-4-process-seed0-abc', 'if-free');   // null: another tab trains it
 *          w?.onTakeOverRequest(async () => { await pauseAndCheckpoint(); w.release(); });
 *          const mine = await claimRun(id, 'take-over');                        // asks, waits, then steals
 */
import type { RunWriter } from '../../core/lab/shelf.ts';

/** How long a take-over waits for the holder to pause and let go before stealing the lock. */
export const TAKE_OVER_WAIT_MS = 20_000;

const lockName = (runId: string) => `mappa-run:${runId}`;
const channelName = (runId: string) => `mappa-run:${runId}`;

function locks(): LockManager {
  const l = (globalThis.navigator as Navigator | undefined)?.locks;
  if (!l) throw new Error('this browser has no Web Locks API (navigator.locks), which keeps two tabs from training one run');
  return l;
}

/**
 * Holds the run's lock: 'if-free' returns null when another tab holds it; 'take-over' asks the
 * holder to let go, waits up to TAKE_OVER_WAIT_MS, then steals.
 */
export async function claimRun(runId: string, how: 'if-free' | 'take-over'): Promise<RunWriter | null> {
  if (how === 'if-free') return hold(runId, { ifAvailable: true });
  const channel = new BroadcastChannel(channelName(runId));
  channel.postMessage({ type: 'take-over' });
  channel.close();
  const waited = await hold(runId, { signal: AbortSignal.timeout(TAKE_OVER_WAIT_MS) }).catch(() => null);
  return waited ?? hold(runId, { steal: true });
}

/** Requests the lock with `options`; resolves once granted (null when ifAvailable found it taken). */
function hold(runId: string, options: LockOptions): Promise<RunWriter | null> {
  return new Promise<RunWriter | null>((resolve, reject) => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let lost!: (why: string) => void;
    const lostPromise = new Promise<string>((r) => (lost = r));
    const request = locks().request(lockName(runId), options, async (lock) => {
      if (!lock) {
        resolve(null);
        return;
      }
      const channel = new BroadcastChannel(channelName(runId));
      let onRequest: (() => Promise<void>) | null = null;
      channel.onmessage = (e: MessageEvent<{ type?: string }>) => {
        if (e.data?.type === 'take-over' && onRequest) void onRequest();
      };
      resolve({
        release: () => release(),
        lost: lostPromise,
        onTakeOverRequest: (cb) => (onRequest = cb),
      });
      await held;
      channel.close();
    });
    // A stolen lock rejects its request with AbortError: the other tab has the run now.
    request.catch((e: Error) => {
      lost(e?.name === 'AbortError' ? 'another tab took this run over' : `the run's lock failed: ${e?.message}`);
      reject(e);
    });
  });
}
