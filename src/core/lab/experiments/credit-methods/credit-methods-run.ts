/**
 * "Compare credit methods", the runner: at the lesson's 4 agents, seed and budget of generations, the
 * counterfactual and state-group runs beside the lesson's own process and outcome runs. The lesson's two
 * runs are read back from the store when they are finished (never trained again), else trained as the
 * lesson trains them (so the lesson finds them done); the two new runs are trained in turn and kept, so
 * a reload reads the whole comparison back (`readBack`, no model loaded). The maths and the words are
 * credit-methods-maths.ts; the page only draws the view it is sent.
 *
 * For: experiments.ts (the lab's `experiment` request). Not for: drawing, or any training maths (core/loop, core/rl).
 *
 * Example: const c = new CreditComparison(host);
 *          await c.run(signal);     // posts a CreditMethodsView after every iteration; its rows: process, outcome, counterfactual, groups
 */
import { resolveTrainConfig } from '../../../domains/index.ts';
import type { CoachQuality } from '../../coach-quality.ts';
import {
  COMPARE_AGENTS, comparePatch, CREDIT_METHODS, generationBudget, LESSON_METHODS, methodsView, type CreditMethod, type CreditMethodsView, type MethodRecord,
  type MethodRunData,
} from './credit-methods-maths.ts';
import { LESSON_PLAN, type LessonPlan } from '../lesson/lesson-maths.ts';
import { clearStoredRun, inTurn, storedTime, trainStoredRun, type ExperimentHost } from '../stored-runs.ts';
import { EXPERIMENT_WORDS } from '../experiment-names.ts';

/** What the comparison needs of the lab (stored-runs.ts), posting its own view. */
export type ComparisonHost = ExperimentHost<CreditMethodsView>;

export class CreditComparison {
  private readonly runs = new Map<CreditMethod, MethodRunData>();
  private readonly started = performance.now();
  private current: CreditMethodsView['current'] = null;
  private coach: CoachQuality | null = null;
  /** Generations trained in this page and the seconds they took, from the first iteration on: the pace of the time left. */
  private pace: { since: number | null; generations: number } = { since: null, generations: 0 };

  constructor(private readonly host: ComparisonHost, private readonly n = COMPARE_AGENTS, private readonly plan: LessonPlan = LESSON_PLAN) {}

  private configOf(method: CreditMethod) {
    return resolveTrainConfig(comparePatch(method, this.n, this.plan));
  }

  /** Reads one method's run from its store: records, whether it is finished, its stored training time. */
  private async read(method: CreditMethod): Promise<MethodRunData> {
    const c = this.configOf(method);
    const runId = this.host.runId(c);
    const store = this.host.store(runId);
    const records = await store.metrics<MethodRecord>();
    const last = records.filter((r) => r.perAgent).at(-1)?.iteration ?? 0;
    const done = last >= c.iterations && records.some((r) => r.iteration === c.iterations && r.eval && r.eval.of === undefined);
    const data: MethodRunData = { method, runId, iterations: c.iterations, agents: c.workflow.agents.length, records, done, ...(await storedTime(store)) };
    this.runs.set(method, data);
    return data;
  }

  private async coachOf(coachName?: string): Promise<void> {
    if (!this.host.coachQuality || (this.coach && !coachName)) return;
    this.coach = await this.host.coachQuality(this.configOf('process'), coachName).catch(() => this.coach);
  }

  private view(status: CreditMethodsView['status'], message?: string): CreditMethodsView {
    const left = CREDIT_METHODS.filter((m) => !this.runs.get(m)?.done).reduce((g, m) => {
      const r = this.runs.get(m);
      const done = r?.records.filter((x) => x.perAgent && x.iteration > 0).reduce((k, x) => k + (x.generations ?? 0), 0) ?? 0;
      return g + Math.max(0, generationBudget(this.n, this.plan).total - done);
    }, 0);
    const rate = this.pace.since !== null && this.pace.generations > 0 ? (performance.now() - this.pace.since) / 1000 / this.pace.generations : null;
    return methodsView([...this.runs.values()], {
      status, current: this.current, elapsed: (performance.now() - this.started) / 1000,
      remaining: status === 'running' ? (rate === null ? null : rate * left) : 0, coach: this.coach, ...(message ? { message } : {}),
    }, this.n, this.plan);
  }

  private show(status: CreditMethodsView['status'], message?: string): void {
    this.host.post(this.view(status, message));
  }

  /** What the store holds of the comparison, with no model loaded: 'done' when all four runs are finished, 'paused' when some of it is stored. */
  async readBack(): Promise<CreditMethodsView> {
    for (const m of CREDIT_METHODS) await this.read(m);
    await this.coachOf();
    const mine = CREDIT_METHODS.filter((m) => !LESSON_METHODS.includes(m)).map((m) => this.runs.get(m)!);
    const all = [...this.runs.values()];
    const status = all.every((r) => r.done) ? 'done' : mine.some((r) => r.records.length) ? 'paused' : 'idle';
    return { ...this.view(status, status === 'paused' ? `stopped part-way: press "${EXPERIMENT_WORDS.creditMethods.goOn}" to train the rest` : undefined), readBack: true };
  }

  /**
   * Trains what is missing, in turn: the lesson's 4-agent runs if they are not finished, then
   * counterfactual, then groups. `fresh`: the comparison's own two runs are deleted and trained again (the
   * lesson's are the lesson's). 'paused' when `signal` aborts.
   */
  async run(signal: AbortSignal, opts: { fresh?: boolean } = {}): Promise<'done' | 'paused'> {
    const prepare = async () => {
      if (opts.fresh) await this.clearOwn();
      await this.readBack();
      this.show('running');
      return 'done' as const;
    };
    const runs = CREDIT_METHODS.map((method) => async () => (this.runs.get(method)!.done ? 'done' as const : this.train(method, signal)));
    return inTurn([prepare, ...runs], signal, EXPERIMENT_WORDS.creditMethods.goOn, (status, message) => {
      this.current = null;
      this.show(status, message);
    });
  }

  private async clearOwn(): Promise<void> {
    for (const m of CREDIT_METHODS.filter((x) => !LESSON_METHODS.includes(x))) {
      await clearStoredRun(this.host, this.host.runId(this.configOf(m)), `the ${m} run`);
    }
  }

  /** One method's run, trained to its end here (the lesson's are labelled and evaluated as the lesson's own). */
  private async train(method: CreditMethod, signal: AbortSignal): Promise<'done' | 'paused'> {
    const patch = comparePatch(method, this.n, this.plan);
    const c = resolveTrainConfig(patch);
    const data = this.runs.get(method)!;
    const lessons = LESSON_METHODS.includes(method);
    const label = lessons ? `lesson: relay of ${this.n}, ${method}, seed ${c.seed}` : `credit methods: relay of ${this.n}, ${method}, seed ${c.seed}`;
    this.current = { method, iteration: 0, iterations: c.iterations };
    const ran = await trainStoredRun(this.host, patch, label, signal, {
      opened: (session) => {
        this.current = { method, iteration: session.trainer.iteration, iterations: c.iterations };
        this.show('running');
      },
      evaluated: (iteration, result) => {
        data.records = [...data.records.filter((r) => !(r.iteration === iteration && r.eval && !r.perAgent)), { iteration, eval: result }];
        this.show('running');
      },
      iterated: (m) => {
        data.records = [...data.records, m];
        this.current = { method, iteration: m.iteration, iterations: c.iterations };
        if (this.pace.since === null) this.pace.since = performance.now();
        else this.pace.generations += m.generations ?? 0;
        this.show('running');
      },
    }, { baseline: lessons });
    if (method === 'process') await this.coachOf(ran.coach);
    await this.read(method); // its whole record, as the store keeps it
    return ran.how;
  }
}
