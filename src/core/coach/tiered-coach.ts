/**
 * A coach made of tiers (MAPPA's "hierarchical reward generators"; FrugalGPT's cascade): tier 1, the
 * team's small judge, scores every action; tier 2, a stronger coach, scores the share of them that
 * escalation.ts picks (those tier 1 is least sure of, at random, or the first wrong step of each failed
 * chain) and its verdict replaces tier 1's. Each verdict says which tier gave it (`tier`).
 *
 * Tier 2 here is the team's rubric, standing in for a large hosted judge (a larger model behind an API
 * that cannot be reached from this machine): it is right where a real one would mostly be right, so a
 * budget measured with it is a lower bound on what a real stronger judge would need.
 *
 * The judge learns during the run: every tier-2 answer is kept as a correction (RatedAction, rated by
 * TIER2_RATER) and a teaching example (its own answer with the score line set to tier 2's, teach.ts
 * teachingAnswer). Every `teachEvery` answers, tier 1 is taught on the ones not yet taught, mixed with
 * its replay data (as `mappa judge teach` does), continuing from its last taught weights; the taught
 * version takes over from the next batch (the next iteration) and is named by its content hash
 * (`taught:<name>-<12 hex>`, correction-book.ts versionSpec) in the batch's record.
 * Where it runs: inside the coach's own call, on the caller's thread, after this iteration's verdicts
 * are settled: in Node, between two iterations (it adds to the coach phase's seconds, which the record
 * keeps); in the page, on the training worker's thread the same way (the lab builds this coach there).
 *
 * Tier 3, a person (person-tier.ts), when `person` > 0: of the actions tier 2 scored, those where tiers 1
 * and 2 disagree most are asked of `options.person` (a file, stdin, the page's cards); the run waits at
 * most `personWait` seconds; an answer replaces tier 2's verdict (tier 3) and its teaching example, a
 * skip or no answer leaves tier 2's.
 *
 * For: buildCoach (coaches.ts) when the config has `coach.tiers`; the tiers benchmark.
 * Not for: which actions to escalate (escalation.ts), the spread (uncertainty.ts), teaching's recipe (teach.ts).
 *
 * Example: const c = new TieredCoach({judge, template}, rubric, {budget: 0.2, pick: 'spread', threshold: 0, teachEvery: 32}, {seed: 0, replay});
 *          const rs = await c.scoreBatch(contexts, places);   // 64 actions: 51 with tier 1, 13 with tier 2
 *          c.tierRecord() -> {scored: [51, 13], judge: 'models/relay-judge-weak', corrections: 13, pending: 13}
 *          ... three iterations later: {..., taught: {judge: 'taught:relay-judge-weak-3f2a…', corrections: 39, seconds: 6.1, loss: [1.2, 0.4]}}
 */
import { loadModel, type LoadedModel } from '../engine/model/load.ts';
import type { ModelSource } from '../engine/model/source.ts';
import { Rng } from '../stats/rng.ts';
import {
  emptyReplyResult, isEmptyReply, MiscalibratedCoach, ModelCoach, type ChainPlace, type Coach, type CoachResult, type Miscalibration, type TierRecord,
} from './coach.ts';
import { coachPrompt, parseCoachAnswer, type ActionContext } from './coach-format.ts';
import { versionSpec } from './correction-book.ts';
import type { RatedAction } from './corrections.ts';
import { pickEscalations, type TierSettings } from './escalation.ts';
import { PERSON_RATER, personQuestion, pickForPerson, type Person } from './person-tier.ts';
import { disposeJudge, teachingAnswer, teachJudge, trainableJudge, type TeachExample, type TeachOptions, type TrainableJudge } from './teach.ts';
import { readJudge } from './uncertainty.ts';

/** Who tier 2 is, in every correction it leaves. */
export const TIER2_RATER = 'rubric (standing in for a large hosted judge)';

/** Tier 1: a judge model (its spread readable, teachable), or any coach (e.g. a biased rubric: neither). */
export type TierOne = { judge: LoadedModel; template: string } | { coach: Coach };

export interface TieredOptions {
  seed: number;
  /** Distorts tier 1's scores (the coach-noise and bias knobs), never tier 2's. */
  miscalibration?: Miscalibration | null;
  /** The judge's earlier training data, mixed into every teaching (teach.ts); none: corrections alone. */
  replay?: TeachExample[];
  teach?: Partial<Omit<TeachOptions, 'seed'>>;
  /** Actions tier 1 reads in one batch (coach.batch; default 16). */
  batch?: number;
  /** Tier 3's answers (needed when settings.person > 0). */
  person?: Person;
}

/** A model source whose weights are `safetensors` and every other file the parent's (a taught version held in memory). */
function withWeights(parent: ModelSource, safetensors: Uint8Array, name: string): ModelSource {
  const own = (file: string) => file === 'model.safetensors';
  const source: ModelSource = {
    name,
    has: async (file) => own(file) || (file !== 'report.json' && parent.has(file)),
    readText: (file) => (own(file) ? Promise.reject(new Error(`${name}: model.safetensors is binary`)) : parent.readText(file)),
    readJson: <T>(file: string) => parent.readJson<T>(file),
    async *stream(file, onProgress) {
      if (!own(file)) {
        yield* parent.stream(file, onProgress);
        return;
      }
      onProgress?.({ file, loaded: safetensors.length, total: safetensors.length });
      yield safetensors;
    },
  };
  return source;
}

export class TieredCoach implements Coach {
  readonly name: string;
  /** Every tier-2 answer, as a correction (formatRatings writes them as the JSONL `mappa judge teach --ratings` reads). */
  readonly corrections: RatedAction[] = [];
  private pending: TeachExample[] = [];
  private judge: LoadedModel | null;
  private judgeName: string;
  private trainable: TrainableJudge | null = null;
  private readonly taughtModels: LoadedModel[] = [];
  private readonly rng: Rng;
  private teachings = 0;
  private last: TierRecord | null = null;
  /** Batches scored (one an iteration; a resumed run's iterations before them, resumeAt), the current one's number (the id of its person questions). */
  private batches = 0;

  constructor(readonly tier1: TierOne, readonly tier2: Coach, readonly settings: TierSettings, readonly options: TieredOptions) {
    this.judge = 'judge' in tier1 ? tier1.judge : null;
    this.judgeName = 'judge' in tier1 ? tier1.judge.source.name : tier1.coach.name;
    if (!this.judge && (settings.pick === 'spread' || settings.teachEvery > 0)) {
      throw new Error(`coach.tiers: pick "spread" and teachEvery > 0 need a judge model as tier 1 (coach.kind "model"); got ${this.judgeName}`);
    }
    this.name = `tiers:${'judge' in tier1 ? `model:${this.judgeName}` : this.judgeName}>${tier2.name}`;
    this.rng = new Rng(`tiers/${options.seed}`);
    if ((settings.person ?? 0) > 0 && !options.person) {
      throw new Error(`coach.tiers.person: ${settings.person} asks a person, but none answers here `
        + '(mappa train: --tier-person FILE or -; the page: its cards)');
    }
  }

  /** The tier-1 judge scoring now: its folder, or the taught version's spec. */
  get currentJudge(): string {
    return this.judgeName;
  }

  /** The tier-1 judge model scoring now (null: tier 1 is not a model). */
  get judgeModel(): LoadedModel | null {
    return this.judge;
  }

  /** The next batch is iteration `iteration + 1`: the person's question ids (`<batch>-<index>`) go on from a resumed run's iterations. */
  resumeAt(iteration: number): void {
    this.batches = iteration;
  }

  tierRecord(): TierRecord {
    if (!this.last) throw new Error('tiered coach: no batch scored yet');
    return this.last;
  }

  async scoreBatch(actions: ActionContext[], places?: readonly ChainPlace[]): Promise<CoachResult[]> {
    const scoredBy = this.judgeName;
    const { results: t1, spreads } = await this.tierOne(actions);
    const picks = pickEscalations({ scores: t1.map((r) => r.score), spreads, places }, this.settings, this.rng);
    const t2 = picks.length ? await this.tier2.scoreBatch(picks.map((i) => actions[i])) : [];
    const results: CoachResult[] = t1.map((r) => ({ ...r, tier: 1 }));
    const batch = ++this.batches;
    const person = await this.askPerson(batch, actions, places, t1, picks, t2);
    picks.forEach((i, j) => {
      const own = person.scores.get(i);
      const verdict: CoachResult = own === undefined ? t2[j] : { ...t2[j], score: own, reason: 'a person', raw: `person: ${own}` };
      results[i] = { ...verdict, tier: own === undefined ? 2 : 3 };
      const prompt = coachPrompt(actions[i], 'judge' in this.tier1 ? this.tier1.template : '');
      this.corrections.push({ prompt, score: verdict.score, correct: verdict.correct, by: own === undefined ? TIER2_RATER : PERSON_RATER, was: t1[i].score });
      this.pending.push({ prompt, answer: teachingAnswer(verdict, t1[i].raw) });
    });
    const taught = this.settings.teachEvery > 0 && this.pending.length >= this.settings.teachEvery ? await this.teach() : undefined;
    this.last = {
      scored: [actions.length - picks.length, picks.length - person.scores.size, ...(person.record ? [person.scores.size] : [])],
      judge: scoredBy, corrections: this.corrections.length, pending: this.pending.length,
      ...(person.record ? { person: person.record } : {}), ...(taught ? { taught } : {}),
    };
    return results;
  }

  /** Tier 3: asks the person about the picks where tiers 1 and 2 disagree most and waits (personWait); the scores given, by action index. */
  private async askPerson(batch: number, actions: ActionContext[], places: readonly ChainPlace[] | undefined, t1: CoachResult[], picks: number[],
    t2: CoachResult[]): Promise<{ scores: Map<number, number>; record?: TierRecord['person'] }> {
    const share = this.settings.person ?? 0;
    if (!(share > 0) || !this.options.person) return { scores: new Map() };
    const tier2 = new Map(picks.map((i, j) => [i, t2[j].score]));
    const asked = pickForPerson(picks, t1.map((r) => r.score), picks.map((i) => tier2.get(i)!), share, actions.length);
    const questions = asked.map((i) => personQuestion(batch, i, actions[i], places?.[i], t1[i].score, tier2.get(i)!));
    const t0 = performance.now();
    const answers = questions.length ? await this.options.person.ask(questions, this.settings.personWait ?? 120) : new Map<string, number | null>();
    const scores = new Map<number, number>();
    questions.forEach((q) => {
      const a = answers.get(q.id);
      if (typeof a === 'number') scores.set(q.index, a);
    });
    const skipped = questions.filter((q) => answers.get(q.id) === null).length;
    return { scores, record: { asked: questions.length, answered: scores.size, skipped, seconds: (performance.now() - t0) / 1000 } };
  }

  /** Tier 1's verdicts, with the spread of each when the escalation reads it (an unreadable answer: NaN). */
  private async tierOne(actions: ActionContext[]): Promise<{ results: CoachResult[]; spreads?: number[] }> {
    if (!this.judge) return { results: await (this.tier1 as { coach: Coach }).coach.scoreBatch(actions) };
    const { template } = this.tier1 as { template: string };
    let results: CoachResult[];
    let spreads: number[] | undefined;
    if (this.settings.pick === 'spread') {
      // An empty reply is not read: it scores 0 as in a one-coach run (askWithRepair), a verdict with no spread to escalate.
      const asked = actions.flatMap((a, i) => (isEmptyReply(a.output) ? [] : [i]));
      const read = await readJudge(this.judge, asked.map((i) => coachPrompt(actions[i], template)), this.options.batch ?? 16);
      const readings = new Map(asked.map((i, j) => [i, read[j]]));
      spreads = actions.map((_, i) => {
        const r = readings.get(i);
        return !r ? 0 : r.dist ? r.spread : NaN;
      });
      const wantCorrect = (i: number) => Boolean(actions[i].final && actions[i].groundTruth !== undefined);
      results = actions.map((_, i) => {
        const r = readings.get(i);
        if (!r) return emptyReplyResult(wantCorrect(i));
        const p = parseCoachAnswer(r.answer, wantCorrect(i));
        return { score: p.score, correct: p.correct, raw: r.answer, ok: p.ok, attempts: 1 };
      });
      // An answer that does not parse is asked again as the one-coach run would (askWithRepair).
      const bad = results.map((r, i) => (r.ok ? -1 : i)).filter((i) => i >= 0);
      if (bad.length) {
        const again = await new ModelCoach(this.judge, template, undefined, this.options.batch ?? 16).scoreBatch(bad.map((i) => actions[i]));
        bad.forEach((i, j) => (results[i] = again[j]));
      }
    } else {
      results = await new ModelCoach(this.judge, template, undefined, this.options.batch ?? 16).scoreBatch(actions);
    }
    const m = this.options.miscalibration;
    if (m) results = await new MiscalibratedCoach({ name: this.judgeName, scoreBatch: async () => results }, m).scoreBatch(actions);
    return { results, spreads };
  }

  /** Teaches tier 1 on the pending answers (and replay); the taught version scores from the next batch. */
  private async teach(): Promise<TierRecord['taught']> {
    const parent = this.judge!;
    this.trainable ??= await trainableJudge(parent.source);
    const examples = this.pending;
    this.pending = [];
    const seed = this.options.seed * 1000 + this.teachings++;
    const r = await teachJudge(this.trainable, examples, this.options.replay ?? [], { ...this.options.teach, seed });
    const spec = versionSpec(this.judgeName, r.hash);
    const root = 'judge' in this.tier1 ? this.tier1.judge.source : parent.source;
    const next = await loadModel(withWeights(root, r.safetensors, spec), { tokenizer: 'required' });
    // The version it replaces is freed (the judge given to the constructor stays the caller's).
    this.taughtModels.pop()?.model.dispose();
    this.taughtModels.push(next);
    this.judge = next;
    this.judgeName = spec;
    return { judge: spec, corrections: examples.length, seconds: r.seconds, loss: [r.firstLoss, r.finalLoss] };
  }

  /** Frees the taught versions and the trainable copy (the tier-1 judge it was given stays the caller's). */
  dispose(): void {
    for (const m of this.taughtModels) m.model.dispose();
    this.taughtModels.length = 0;
    if (this.trainable) disposeJudge(this.trainable);
    this.trainable = null;
  }
}
