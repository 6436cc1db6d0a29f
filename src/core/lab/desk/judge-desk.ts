/**
 * The judge desk, in the worker: a person corrects the open run's judge on the actions the inspector
 * shows, is asked about the actions the judge is least sure of, and teaches the judge from the
 * corrections. Headless; the page only draws what it returns (src/ui/components/Corrections.svelte).
 *
 * For: lab.ts's `desk` request (its requests and views: desk-requests.ts; taught judges as models: taught-judges.ts). Not for: the file format (coach/corrections.ts), the book
 * (coach/correction-book.ts), teaching's maths (coach/teach.ts) or the spread (coach/uncertainty.ts).
 *
 * What teaching does here (the page's recipe; `mappa judge teach` is the same teachJudge):
 *  - the judge's earlier training data is not in the page, so what it replays "so that it does not
 *    forget" is its own answers on this batch's uncorrected actions, one for each correction (mix 1);
 *  - before/after agreement on held-out corrections: k folds (2, or 5 from 20 corrections), each taught
 *    on the other folds and read on its own; then the judge is taught on all of them;
 *  - where the actions carry the rater's verdict (a judge coached them), its ranking against the rater
 *    on the batch's uncorrected actions, before and after;
 *  - the new weights are stored beside the old judge as `taught:<name>-<12 hex of their sha-256>`, the
 *    spec coach.model takes; `withTaughtJudges` lets the lab load it like any judge folder.
 *
 * Example: const desk = new JudgeDesk(platform.store('judge-desk'), (s) => platform.modelSource(s, base), (s) => shelf.model(s));
 *          await desk.handle(config, { op: 'correct', trajectories, trajectory: 0, action: 1, score: 0 }) -> { count: 1, ... }
 */
import { coachPrompt, type ActionContext } from '../../coach/coach-format.ts';
import { coachTemplateOf, judgeSpec } from '../../coach/coaches.ts';
import {
  addVersion, CorrectionBook, FIRST_WRONG_WORDS, firstWrongStep, readVersions, versionSpec, weightsFile, type Agreement, type FileStore,
  type JudgeVersion,
} from '../../coach/correction-book.ts';
import { folds, rankAgainst } from '../../coach/corrections.ts';
import { disposeJudge, teachingAnswer, teachJudge, trainableJudge, type TeachExample } from '../../coach/teach.ts';
import { pickUncertain, readJudge } from '../../coach/uncertainty.ts';
import { teamOf } from '../../domains/index.ts';
import { loadModel, type LoadedModel } from '../../engine/model/load.ts';
import { readAllBytes, type ModelSource } from '../../engine/model/source.ts';
import { memorySource } from '../../engine/model/sources.ts';
import type { TrainConfig } from '../../loop/config.ts';
import { modelHash } from '../../loop/models-used.ts';
import { agentContext } from '../../loop/rewards.ts';
import type { Trajectory } from '../../loop/trajectory.ts';
import { Rng } from '../../stats/rng.ts';
import type { TrajectoryView } from '../views.ts';
import { actionWords, type AskCard, type DeskRequest, type DeskView, type TeachProgress } from './desk-requests.ts';


/** A trajectory as shown, rebuilt as its coach read it (what `mappa judge ask` does with trajectories.jsonl). */
function asTrajectory(v: TrajectoryView): Trajectory {
  const actions = v.actions.map((a) => ({ agentId: a.agentId, turn: a.turn, messages: a.messages, text: a.text, observation: a.observation }));
  return { task: v.task, actions, sample: v.sample, finalAnswer: v.finalAnswer, correct: v.correct } as unknown as Trajectory;
}

export class JudgeDesk {
  private hashes = new Map<string, Promise<string>>();
  private books = new Map<string, Promise<CorrectionBook>>();

  constructor(private readonly store: FileStore, private readonly source: (spec: string) => ModelSource,
    private readonly loadJudge: (spec: string) => Promise<LoadedModel>) {}

  /** The judge of a run's team (its coach.model, or the team's own), its content hash, and the hash its book is kept under. */
  private async judgeOf(c: TrainConfig): Promise<{ spec: string; hash: string; book: string }> {
    let spec: string;
    try {
      spec = judgeSpec(c.coach, teamOf(c.workflow));
    } catch {
      throw new Error(`the ${c.workflow.domain} team has no judge model to correct; choose a judge as its coach (Settings → coach)`);
    }
    let h = this.hashes.get(spec);
    if (!h) this.hashes.set(spec, (h = modelHash(this.source(spec))));
    h.catch(() => this.hashes.delete(spec));
    const hash = await h;
    const taught = spec.startsWith('taught:') ? (await readVersions(this.store)).find((v) => v.spec === spec) : undefined;
    return { spec, hash, book: taught?.root ?? hash };
  }

  private async bookOf(c: TrainConfig): Promise<CorrectionBook> {
    const { book: hash } = await this.judgeOf(c);
    const key = `${c.workflow.domain}|${hash}`;
    let b = this.books.get(key);
    if (!b) this.books.set(key, (b = CorrectionBook.open(this.store, { team: c.workflow.domain, judgeHash: hash })));
    b.catch(() => this.books.delete(key));
    return b;
  }

  /** Each action's coach context (its agent's, as the coach scored it) and prompt in the judge's template. */
  private contexts(c: TrainConfig, views: TrajectoryView[]): ({ ctx: ActionContext; prompt: string; group: string } | null)[][] {
    const domain = teamOf(c.workflow);
    const template = coachTemplateOf(c.coach, domain);
    return views.map((v) => {
      const t = asTrajectory(v);
      return v.actions.map((a) => {
        const ctx = agentContext(c.workflow, t, a.agentId, domain.facts?.(t, a.agentId));
        return ctx ? { ctx, prompt: coachPrompt(ctx, template), group: `${c.workflow.name}:${a.agentId}` } : null;
      });
    });
  }

  /** Answers one request of the page (see DeskRequest); `teach` takes `signal` and reports its progress. */
  async handle(c: TrainConfig, r: DeskRequest, signal?: AbortSignal, progress?: (p: TeachProgress) => void): Promise<DeskView> {
    const views = r.trajectories ?? [];
    const ctx = this.contexts(c, views);
    const book = await this.bookOf(c);
    const at = (ti: number, ai: number) => {
      const x = ctx[ti]?.[ai];
      if (!x) throw new Error(`no coached action ${ai + 1} in trajectory ${ti + 1} of the batch shown`);
      return x;
    };
    const was = (ti: number, ai: number) => views[ti].actions[ai].coach?.score;
    let message: string | undefined;
    let extra: Partial<DeskView> = {};
    switch (r.op) {
      case 'view':
        break;
      case 'correct': {
        if (!(Number.isInteger(r.score) && r.score >= 0 && r.score <= 10)) throw new Error(`a score is a whole number from 0 to 10, got ${r.score}`);
        const x = at(r.trajectory, r.action);
        const w = was(r.trajectory, r.action);
        await book.set({ prompt: x.prompt, score: r.score, by: 'person', group: x.group, ...(w === undefined ? {} : { was: w }) });
        message = `set ${views[r.trajectory].actions[r.action].role}'s score to ${r.score}${w === undefined ? '' : ` (the judge gave ${w})`}`;
        break;
      }
      case 'firstWrong': {
        const steps = views[r.trajectory].actions.map((_, ai) => ({ ...at(r.trajectory, ai), was: was(r.trajectory, ai) }));
        await book.set(...firstWrongStep(steps, r.action));
        message = `marked ${views[r.trajectory].actions[r.action].role} as the first wrong step: ${FIRST_WRONG_WORDS}`;
        break;
      }
      case 'remove':
        await book.remove(r.index);
        message = `removed correction ${r.index + 1}`;
        break;
      case 'undo':
        message = (await book.undo()) ?? 'nothing to undo since this page opened';
        break;
      case 'import':
        message = `imported ${await book.importText(r.text, r.name)} rated actions from ${r.name}`;
        break;
      case 'export':
        extra = { exported: { name: `corrections-${c.workflow.domain}-${book.key.judgeHash.slice(0, 12)}.jsonl`, text: book.exportText() } };
        break;
      case 'ask':
        extra = { cards: await this.ask(c, views, ctx, book, r.k) };
        break;
      case 'teach': {
        const taught = await this.teach(c, views, ctx, book, signal, progress);
        extra = { taught };
        message = `taught ${taught.spec} on ${taught.corrections} corrections in ${taught.seconds.toFixed(1)} s`
          + ` (its before/after check ${(taught.checkSeconds ?? 0).toFixed(1)} s more)`;
        break;
      }
    }
    const { spec, hash } = await this.judgeOf(c);
    const judge = { spec, hash };
    return {
      team: c.workflow.domain, judge, count: book.count,
      corrections: book.list().map(({ answer: _, correct: __, ...rest }) => ({ ...rest, words: actionWords(rest.prompt) })),
      versions: (await readVersions(this.store)).filter((v) => v.team === c.workflow.domain),
      prompts: ctx.map((row) => row.map((x) => x?.prompt ?? null)), message, ...extra,
    };
  }

  /** The k uncorrected actions of the batch the judge is least sure of (uncertainty.ts), each with why and earlier verdicts. */
  private async ask(c: TrainConfig, views: TrajectoryView[], ctx: ReturnType<JudgeDesk['contexts']>, book: CorrectionBook, k: number): Promise<AskCard[]> {
    const seen = new Set<string>();
    const pool: { ti: number; ai: number; prompt: string; group: string }[] = [];
    ctx.forEach((row, ti) => row.forEach((x, ai) => {
      if (!x || seen.has(x.prompt) || book.verdictOn(x.prompt)) return;
      seen.add(x.prompt);
      pool.push({ ti, ai, prompt: x.prompt, group: x.group });
    }));
    if (!pool.length) return [];
    const judge = await this.loadJudge((await this.judgeOf(c)).spec);
    const readings = await readJudge(judge, pool.map((p) => p.prompt));
    return pickUncertain(readings, k).map((p) => {
      const { ti, ai, prompt, group } = pool[p.index];
      const a = views[ti].actions[ai];
      return {
        trajectory: ti, action: ai, role: a.role, input: a.messages[a.messages.length - 1]?.content ?? '', reply: a.text, judge: readings[p.index].score,
        why: `Picked because the judge is unsure of it: ${p.why} `
          + `(of the ${pool.length} uncorrected actions shown, the largest spread of its score distribution)`,
        earlier: book.similar(group, prompt).map((r) => ({ score: r.score, words: actionWords(r.prompt) })),
      };
    });
  }

  private async teach(c: TrainConfig, views: TrajectoryView[], ctx: ReturnType<JudgeDesk['contexts']>, book: CorrectionBook,
    signal?: AbortSignal, progress?: (p: TeachProgress) => void): Promise<JudgeVersion> {
    const corrections = [...book.list()];
    if (corrections.length < 2) throw new Error(`teaching needs at least 2 corrections (${corrections.length} so far): set some scores in the inspector first`);
    const started = performance.now();
    const say = (phase: string, done: number, total: number) => progress?.({ phase, done, total, seconds: (performance.now() - started) / 1000 });
    const { spec, hash, book: root } = await this.judgeOf(c);
    const source = this.source(spec);
    const judge = await this.loadJudge(spec);
    // The batch's uncorrected actions: replay (the judge's own answers) and, with the rater's verdicts, the ranking.
    const corrected = new Set(corrections.map((r) => r.prompt));
    const others: { prompt: string; group: string; rater?: number }[] = [];
    const seen = new Set<string>();
    ctx.forEach((row, ti) => row.forEach((x, ai) => {
      if (!x || corrected.has(x.prompt) || seen.has(x.prompt)) return;
      seen.add(x.prompt);
      others.push({ prompt: x.prompt, group: x.group, rater: views[ti].actions[ai].rater?.score });
    }));
    say('reading the judge\'s own answers', 0, 1);
    const before = await readJudge(judge, [...corrections.map((r) => r.prompt), ...others.map((o) => o.prompt)]);
    const own = before.slice(0, corrections.length);
    const replayAll: TeachExample[] = others.map((o, i) => ({ prompt: o.prompt, answer: before[corrections.length + i].answer }))
      .filter((e) => /PROCESS_SCORE\s*:\s*\d/.test(e.answer));
    const examples = corrections.map((r, i): TeachExample => ({ prompt: r.prompt, answer: teachingAnswer(r, own[i].answer) }));
    // The judge's other files, read once: each fold's taught weights are read back through them.
    const files: Record<string, Uint8Array> = {};
    for (const f of ['config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json', 'special_tokens_map.json']) {
      if (await source.has(f)) files[f] = await readAllBytes(source, f);
    }
    // Two folds whatever the count: each fold is taught on half the corrections, so the check costs about one more
    // teaching (five folds cost four: 144 s in all for 100 corrections, docs/judges.md). The judge itself is taught first.
    const order = new Rng(`desk/${hash}`).shuffle(corrections.map((_, i) => i));
    const held = corrections.length >= 4 ? folds(corrections.length, 2, order) : [];
    const rounds = held.length + 1;
    const teachOn = async (idx: number[], round: number) => {
      const trainable = await trainableJudge(source);
      try {
        return await teachJudge(trainable, idx.map((i) => examples[i]), replayAll, {
          signal, seed: round,
          onProgress: ({ step, steps }) => say(
            round > 0 ? `fold ${round} of ${held.length} (held-out agreement)` : 'teaching on every correction',
            round * 100 + (100 * step) / steps, rounds * 100),
        });
      } finally {
        disposeJudge(trainable);
      }
    };
    const readWith = async (weights: Uint8Array, prompts: string[]) => {
      const m = await loadModel(memorySource({ ...files, 'model.safetensors': weights }, spec), { tokenizer: 'required' });
      try {
        return await readJudge(m, prompts);
      } finally {
        m.model.dispose();
      }
    };
    // Held-out agreement: each fold taught on the others, read on itself.
    const heldBefore = { n: 0, agree: 0, err: 0 };
    const heldAfter = { n: 0, agree: 0, err: 0 };
    const tally = (t: typeof heldBefore, score: number | null, verdict: number) => {
      const s = score ?? 5;
      t.n++;
      t.agree += Number(s >= 5 === verdict >= 5);
      t.err += Math.abs(s - verdict);
    };
    const result = await teachOn(corrections.map((_, i) => i), 0);
    const taughtSeconds = (performance.now() - started) / 1000;
    for (let f = 0; f < held.length; f++) {
      const rest = corrections.map((_, i) => i).filter((i) => !held[f].includes(i));
      const r = await teachOn(rest, f + 1);
      const after = await readWith(r.safetensors, held[f].map((i) => corrections[i].prompt));
      held[f].forEach((i, j) => {
        tally(heldBefore, own[i].score, corrections[i].score);
        tally(heldAfter, after[j].score, corrections[i].score);
      });
    }
    say('reading the taught judge on the batch', rounds * 100, rounds * 100);
    const rated = others.filter((o) => o.rater !== undefined);
    const afterOthers = rated.length ? await readWith(result.safetensors, rated.map((o) => o.prompt)) : [];
    const beforeRated = others.map((o, i) => ({ o, r: before[corrections.length + i] })).filter((x) => x.o.rater !== undefined);
    const ranking = (scores: (number | null)[]): Agreement['ranking'] => {
      if (!rated.length) return null;
      const r = rankAgainst(rated.map((o) => o.rater!), scores.map((s) => s ?? 5), rated.map((o) => o.group));
      return r.pairs ? { pairs: r.pairs, concordant: r.concordant, percent: 100 * r.interval.p, low: 100 * r.interval.low, high: 100 * r.interval.high } : null;
    };
    const agreement = (t: typeof heldBefore) => (t.n ? { n: t.n, agree: t.agree / t.n, mae: t.err / t.n } : null);
    const version: JudgeVersion = {
      spec: versionSpec(spec, result.hash), hash: result.hash, parent: spec, parentHash: hash, root, team: c.workflow.domain,
      corrections: corrections.length, replayed: replayAll.length, steps: result.steps,
      seconds: taughtSeconds, checkSeconds: (performance.now() - started) / 1000 - taughtSeconds, createdAt: Date.now(),
      before: { heldOut: agreement(heldBefore), ranking: ranking(beforeRated.map((x) => x.r.score)) },
      after: { heldOut: agreement(heldAfter), ranking: ranking(afterOthers.map((x) => x.score)) },
    };
    if (signal?.aborted) throw new Error('teaching stopped before the end; the old judge is unchanged');
    await this.store.writeFile(weightsFile(version.spec), result.safetensors);
    await addVersion(this.store, version);
    return version;
  }
}
