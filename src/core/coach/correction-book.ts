/**
 * A person's corrections of one judge on one team, kept in the browser's storage (or any file store):
 * set, listed, undone, exported and imported as the JSONL that `mappa judge teach --ratings` reads
 * (corrections.ts writes and reads it; a bad import is refused in one line naming its line). Also the
 * record of the judge versions taught from them, and the "first wrong step" mark of a trajectory.
 *
 * For: the page's corrections (src/core/lab/desk/judge-desk.ts in the worker); headless, no DOM.
 * Not for: teaching (teach.ts) or choosing what to ask (uncertainty.ts).
 *
 * One book per team and judge: its file is `corrections-<team>-<first 12 hex of the judge's sha-256>.jsonl`.
 * A judge taught in the page keeps the book of the judge its line began with (JudgeVersion.root): a person's
 * verdict on an action holds whichever version is asked, and the next version learns from them all.
 * An action is known by its coach prompt: a second verdict on the same prompt replaces the first.
 *
 * Example: const book = await CorrectionBook.open(store, { team: 'relay', judgeHash: '9c0a1b…' });
 *          await book.set({ prompt: 'Relay agent 2 replied "7".…', score: 0, by: 'person', group: 'relay-4:agent2', was: 10 });
 *          book.count -> 1; await book.undo() -> 'took back the verdict 0 on relay-4:agent2'; book.count -> 0
 */
import { formatRatings, parseRatings, type RatedAction } from './corrections.ts';

/** The little a book needs of a store (a LabStore's files). */
export interface FileStore {
  readFile(name: string): Promise<Uint8Array | string | null>;
  writeFile(name: string, data: Uint8Array | string): Promise<void>;
}

export interface BookKey {
  /** The team's domain ("relay", "math"). */
  team: string;
  /** sha-256 of the judge's files (models-used.ts modelHash), hex. */
  judgeHash: string;
}

export const bookFile = (k: BookKey): string => `corrections-${k.team}-${k.judgeHash.slice(0, 12)}.jsonl`;

const text = (v: Uint8Array | string | null): string | null => (v === null ? null : typeof v === 'string' ? v : new TextDecoder().decode(v));

/** One change, to be taken back: the prompt and what it held before (null: nothing). */
interface Change {
  prompt: string;
  before: RatedAction | null;
  words: string;
}

export class CorrectionBook {
  private readonly undoStack: Change[][] = [];

  private constructor(private readonly store: FileStore, readonly key: BookKey, private items: RatedAction[]) {}

  /** The book of `key`, as stored (empty when there is none yet). A stored file that does not parse is refused naming its line. */
  static async open(store: FileStore, key: BookKey): Promise<CorrectionBook> {
    const t = text(await store.readFile(bookFile(key)));
    return new CorrectionBook(store, key, t && t.trim() ? parseRatings(t, `stored ${bookFile(key)}`) : []);
  }

  get count(): number {
    return this.items.length;
  }

  list(): readonly RatedAction[] {
    return this.items;
  }

  /** The verdict given on `prompt`, if any. */
  verdictOn(prompt: string): RatedAction | undefined {
    return this.items.find((r) => r.prompt === prompt);
  }

  /** Sets (or replaces) verdicts, as one change that one undo takes back. */
  async set(...rs: RatedAction[]): Promise<void> {
    const change: Change[] = [];
    for (const r of rs) {
      const i = this.items.findIndex((x) => x.prompt === r.prompt);
      change.push({ prompt: r.prompt, before: i >= 0 ? this.items[i] : null, words: `the verdict ${r.score} on ${r.group ?? 'an action'}` });
      if (i >= 0) this.items[i] = r;
      else this.items.push(r);
    }
    this.undoStack.push(change);
    await this.save();
  }

  /** Removes the verdict at `index` of the list (undoable). */
  async remove(index: number): Promise<void> {
    const r = this.items[index];
    if (!r) throw new Error(`no correction ${index + 1} (the list has ${this.items.length})`);
    this.items.splice(index, 1);
    this.undoStack.push([{ prompt: r.prompt, before: r, words: `the removal of the verdict ${r.score} on ${r.group ?? 'an action'}` }]);
    await this.save();
  }

  /** Takes back the last change made since the book was opened; returns what it took back (null: nothing to undo). */
  async undo(): Promise<string | null> {
    const change = this.undoStack.pop();
    if (!change) return null;
    for (const c of [...change].reverse()) {
      const i = this.items.findIndex((x) => x.prompt === c.prompt);
      if (c.before && i >= 0) this.items[i] = c.before;
      else if (c.before) this.items.push(c.before);
      else if (i >= 0) this.items.splice(i, 1);
    }
    await this.save();
    return `took back ${change.map((c) => c.words).join(', ')}`;
  }

  /** The book as JSONL, one rated action a line (what `mappa judge teach --ratings` reads). */
  exportText(): string {
    return formatRatings(this.items);
  }

  /**
   * Adds the rated actions of a JSONL file (same prompt: the file's verdict wins), as one undoable change.
   * A bad file changes nothing and is refused in one line: `<file> line <n>: <what is wrong>`.
   */
  async importText(jsonl: string, file: string): Promise<number> {
    const rs = parseRatings(jsonl, file);
    await this.set(...rs);
    return rs.length;
  }

  /** The person's earlier verdicts on actions of the same group (the same agent of the same team), newest first. */
  similar(group: string | undefined, except: string, k = 3): RatedAction[] {
    return this.items.filter((r) => r.group === group && r.prompt !== except).slice(-k).reverse();
  }

  private async save(): Promise<void> {
    await this.store.writeFile(bookFile(this.key), this.exportText());
  }
}

/** What marking a step of a trajectory as its first wrong one implies, in words the page shows and stores. */
export const FIRST_WRONG_WORDS = 'the steps before it are taken as right (10), this one as wrong (0); the steps after it are left unrated: '
  + 'they worked from a wrong input, so whether each did its own part right is not implied';

/**
 * The verdicts a "first wrong step" mark implies (Potato's first_error mode): every step before `index`
 * scores 10, the step at `index` 0, the steps after it none (FIRST_WRONG_WORDS says why).
 * Example: firstWrongStep([{prompt: 'a', group: 'g1'}, {prompt: 'b', group: 'g2'}, {prompt: 'c', group: 'g3'}], 1)
 *   -> [{prompt: 'a', score: 10, why: 'before the first wrong step you marked', ...}, {prompt: 'b', score: 0, why: 'the first wrong step you marked', ...}]
 */
export function firstWrongStep(steps: readonly { prompt: string; group?: string; was?: number }[], index: number): RatedAction[] {
  if (!(index >= 0 && index < steps.length)) throw new Error(`first wrong step: no step ${index + 1} (the trajectory has ${steps.length})`);
  return steps.slice(0, index + 1).map((s, i) => ({
    prompt: s.prompt, score: i < index ? 10 : 0, by: 'person', ...(s.group === undefined ? {} : { group: s.group }),
    ...(s.was === undefined ? {} : { was: s.was }), why: i < index ? 'before the first wrong step you marked' : 'the first wrong step you marked',
  }));
}

/** A judge taught in the page: a version beside the judge it was taught from, named by the hash of its weights. */
export interface JudgeVersion {
  /** The coach.model that names it: `taught:<parent's name>-<first 12 hex of hash>`. */
  spec: string;
  /** sha-256 of its model.safetensors, hex. */
  hash: string;
  /** The judge it was taught from (a coach.model spec) and the sha-256 of its files. */
  parent: string;
  parentHash: string;
  /** The sha-256 of the first judge of its line (the one never taught here): its corrections' book is the line's. */
  root: string;
  team: string;
  corrections: number;
  replayed: number;
  steps: number;
  /** Seconds from the click to the taught judge (reading its own answers, then teaching on every correction). */
  seconds: number;
  /** Seconds more for the before/after check (two held-out folds, each taught on the other half, and the ranking); absent in older records. */
  checkSeconds?: number;
  createdAt: number;
  /** Before and after, as measured when it was taught (judge-desk.ts). */
  before: Agreement;
  after: Agreement;
}

export interface Agreement {
  /** Held-out corrections (k folds): the share whose verdict side of 5 the judge matched, and the mean absolute error. */
  heldOut: { n: number; agree: number; mae: number } | null;
  /** Ranking against the rater (the team's rubric) on the batch's uncorrected actions, where the actions carry the rater's verdict. */
  ranking: { pairs: number; concordant: number; percent: number; low: number; high: number } | null;
}

const VERSIONS_FILE = 'judge-versions.json';

/** The versions taught in this store (oldest first). */
export async function readVersions(store: FileStore): Promise<JudgeVersion[]> {
  const t = text(await store.readFile(VERSIONS_FILE));
  return t ? (JSON.parse(t) as JudgeVersion[]) : [];
}

/** Adds a version to the record (a version with the same spec is replaced). */
export async function addVersion(store: FileStore, v: JudgeVersion): Promise<void> {
  const all = (await readVersions(store)).filter((x) => x.spec !== v.spec);
  await store.writeFile(VERSIONS_FILE, JSON.stringify([...all, v]));
}

/**
 * The spec of a version taught from `parent` with weights of sha-256 `hash`.
 * Example: versionSpec('./fixtures/relay-judge-weak', 'ab12…') -> 'taught:relay-judge-weak-ab12…'
 */
export function versionSpec(parent: string, hash: string): string {
  const base = parent.replace(/^taught:/, '').replace(/\/+$/, '').split('/').pop()!.replace(/-[0-9a-f]{12}$/, '');
  return `taught:${base}-${hash.slice(0, 12)}`;
}

/** The weights file of a version in the store. */
export const weightsFile = (spec: string): string => `judge-${spec.slice('taught:'.length)}.safetensors`;
