// The page's corrections, headless: one book per team and judge in a file store (the browser's IndexedDB files in the
// page; a Map here), set / replace / remove / undo, JSONL export that `mappa judge teach --ratings` reads (parseRatings),
// an import refused in one line naming its line with nothing changed, and the "first wrong step" mark's verdicts.
import { describe, expect, it } from 'vitest';
import {
  addVersion, bookFile, CorrectionBook, firstWrongStep, readVersions, versionSpec, weightsFile, type FileStore, type JudgeVersion,
} from '../../../src/core/coach/correction-book.ts';
import { parseRatings } from '../../../src/core/coach/corrections.ts';

function memoryStore(): FileStore & { files: Map<string, Uint8Array | string> } {
  const files = new Map<string, Uint8Array | string>();
  return { files, readFile: async (n) => files.get(n) ?? null, writeFile: async (n, d) => void files.set(n, d) };
}
const key = { team: 'relay', judgeHash: '0123456789abcdef'.repeat(4) };
const p = (i: number) => `Relay agent ${i} replied "${i}".\n${i} + 1`;

describe('CorrectionBook', () => {
  it('keeps verdicts per team and judge, replaces a second verdict on the same action, and undoes each change', async () => {
    const store = memoryStore();
    const book = await CorrectionBook.open(store, key);
    expect(book.count).toBe(0);
    await book.set({ prompt: p(1), score: 0, by: 'person', group: 'relay-4:agent1', was: 10 });
    await book.set({ prompt: p(2), score: 10, by: 'person', group: 'relay-4:agent2', was: 3 });
    await book.set({ prompt: p(1), score: 2, by: 'person', group: 'relay-4:agent1', was: 10 });
    expect(book.list().map((r) => r.score)).toEqual([2, 10]);
    expect(bookFile(key)).toBe('corrections-relay-0123456789ab.jsonl');
    // Stored as the JSONL `mappa judge teach --ratings` reads; a reopened book reads it back.
    const stored = String(store.files.get(bookFile(key)));
    expect(parseRatings(stored, 'x').map((r) => [r.score, r.group, r.was])).toEqual([[2, 'relay-4:agent1', 10], [10, 'relay-4:agent2', 3]]);
    expect((await CorrectionBook.open(store, key)).count).toBe(2);
    // Another judge (another hash) has its own book.
    expect((await CorrectionBook.open(store, { team: 'relay', judgeHash: 'f'.repeat(64) })).count).toBe(0);
    expect(await book.undo()).toBe('took back the verdict 2 on relay-4:agent1');
    expect(book.list().map((r) => r.score)).toEqual([0, 10]);
    await book.remove(1);
    expect(book.count).toBe(1);
    expect(await book.undo()).toMatch(/removal of the verdict 10/);
    expect(book.count).toBe(2);
    await book.undo();
    await book.undo();
    expect(book.count).toBe(0);
    expect(await book.undo()).toBeNull();
    expect(String(store.files.get(bookFile(key)))).toBe('');
  });

  it('exports JSONL and imports it; a bad file is refused in one line naming its line, and changes nothing', async () => {
    const book = await CorrectionBook.open(memoryStore(), key);
    await book.set({ prompt: p(1), score: 7, by: 'person', group: 'g' });
    const text = book.exportText();
    const other = await CorrectionBook.open(memoryStore(), key);
    expect(await other.importText(text + `{"prompt":${JSON.stringify(p(3))},"score":4}\n`, 'mine.jsonl')).toBe(2);
    expect(other.list().map((r) => r.score)).toEqual([7, 4]);
    await expect(other.importText(`{"prompt":"a","score":1}\n{"prompt":"b","score":"ten"}\n`, 'bad.jsonl'))
      .rejects.toThrow('bad.jsonl line 2: "score" must be a number from 0 to 10, got "ten"');
    expect(other.count).toBe(2);
    expect(await other.undo()).toMatch(/^took back/); // the import was one change
    expect(other.count).toBe(0);
  });

  it('shows earlier verdicts on the same agent, newest first', async () => {
    const book = await CorrectionBook.open(memoryStore(), key);
    for (let i = 0; i < 5; i++) await book.set({ prompt: p(i), score: i, by: 'person', group: i % 2 ? 'odd' : 'even' });
    expect(book.similar('even', p(4)).map((r) => r.score)).toEqual([2, 0]);
    expect(book.similar('odd', 'none', 1).map((r) => r.score)).toEqual([3]);
  });
});

describe('firstWrongStep', () => {
  it('takes the steps before as right, the marked one as wrong, and leaves the steps after it unrated', () => {
    const steps = [{ prompt: 'a', group: 'g1', was: 3 }, { prompt: 'b', group: 'g2' }, { prompt: 'c', group: 'g3' }];
    expect(firstWrongStep(steps, 1).map((r) => [r.prompt, r.score, r.why])).toEqual([
      ['a', 10, 'before the first wrong step you marked'], ['b', 0, 'the first wrong step you marked']]);
    expect(firstWrongStep(steps, 0).map((r) => [r.score, r.was])).toEqual([[0, 3]]);
    expect(() => firstWrongStep(steps, 3)).toThrow('first wrong step: no step 4 (the trajectory has 3)');
  });
});

describe('judge versions', () => {
  it('are named by the hash of their weights beside the judge they came from, and recorded once each', async () => {
    const hash = 'ab'.repeat(32);
    expect(versionSpec('./fixtures/relay-judge-weak', hash)).toBe('taught:relay-judge-weak-abababababab');
    expect(versionSpec('taught:relay-judge-weak-0123456789ab', hash)).toBe('taught:relay-judge-weak-abababababab');
    expect(weightsFile('taught:relay-judge-weak-abababababab')).toBe('judge-relay-judge-weak-abababababab.safetensors');
    const store = memoryStore();
    const v = { spec: 'taught:x-abababababab', hash, team: 'relay' } as JudgeVersion;
    await addVersion(store, v);
    await addVersion(store, { ...v, corrections: 3 });
    expect((await readVersions(store)).map((x) => x.corrections)).toEqual([3]);
  });
});
