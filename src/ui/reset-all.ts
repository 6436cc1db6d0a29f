/**
 * "Reset all stored results", for the next class: every run, checkpoint, lesson, comparison, correction and
 * taught judge this browser holds for the page (the IndexedDB database the training worker writes,
 * platform/browser/store-idb.ts) and the page's own notes and choices in localStorage ("mappa-" keys) are
 * deleted; the downloaded models (the Cache Storage) are kept, so the page opens again without fetching them.
 * The caller stops its training worker first (it holds the database open) and reloads after.
 *
 * For: App.svelte's button (after a confirmation). Not for: deleting one run (Reset does that).
 * Example: await resetAllStored(() => client.terminate(), (m) => (waiting = m)); location.reload();
 */
import { IDB_NAME } from '../platform/browser/store-idb.ts';

/** What the confirmation says is deleted, and what is kept. */
export const RESET_ALL_WORDS = 'Delete every result this browser holds for this page: all runs and checkpoints, the lesson, the comparisons, '
  + 'Scale the team, your corrections and taught judges, and your lab notes? The downloaded models are kept. This cannot be undone.';

/** Deletes the page's stored results; `waiting` hears why it waits (another tab holds them open) until it can. */
export async function resetAllStored(stopWorker: () => void, waiting: (why: string) => void): Promise<void> {
  stopWorker();
  await new Promise<void>((resolve, reject) => {
    const req = indexedDB.deleteDatabase(IDB_NAME);
    req.onsuccess = () => resolve();
    req.onerror = () => reject(new Error(`the stored results could not be deleted: ${req.error?.message ?? 'IndexedDB refused'}`));
    req.onblocked = () => waiting('another tab of this page holds the stored results open: close it, and the reset finishes');
  });
  for (const key of Object.keys(localStorage)) if (key.startsWith('mappa-')) localStorage.removeItem(key);
}
