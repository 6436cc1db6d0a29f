/**
 * The MAPPA training loop, top to bottom:
 *
 *   for each iteration:
 *     pick prompts (curriculum) -> rollouts (P prompts x n samples, temperature 1.0)
 *     -> coach every action -> drop failed-coach trajectories -> rewards -> per-agent samples
 *     -> update each trainable agent's adapter -> metrics event
 *     every k iterations: held-out evaluation (temperature 0.6 and greedy) and a checkpoint
 *
 * Each stage returns what the next one needs. Nothing changes before the update (a pause up to there
 * leaves no trace); the update steps the adapters, and the iteration number and the curriculum are
 * replaced only at the end. The passes of the team and of the update are asked of a `Compute` (below),
 * which the caller passes in; the results are the same whoever runs them.
 *
 * Reading order of one iteration: this file, curriculum.ts (tasks), rollout.ts (trajectories) and
 * agents.ts (generation), rewards.ts (verdicts and samples) with ../coach/coach.ts, ../rl/update.ts and
 * ../rl/ppo.ts (the update).
 *
 * For: `Trainer`, one iteration at a time (`step`); a whole run, with its evaluations, resume and
 * pause, is session.ts's RunSession, which the CLI and the page's lab both drive.
 * Not for: printing or drawing — listeners get events, nothing flows back up.
 * Example: const t = await Trainer.create(config, {agentModel, coach, tools: {python: sandbox}, compute: LocalCompute.forTeam(...)}, {store});
 *          t.on((e) => console.log(e.type)); const metrics = await t.step();
 */
import { AdamW, lrAt } from '../rl/adamw.ts';
import { mean } from '../stats/intervals.ts';
import { policyUpdate } from '../rl/update.ts';
import { RefMemory } from '../rl/update-steps.ts';
import { StateBaselines } from '../rl/advantages.ts';
import { type AgentPolicy, type Gradients, type UpdateMetrics } from '../rl/update-steps.ts';
import { MAX_TRAIN_TOKENS, type TrainSample } from '../rl/batches.ts';
import { LoraAdapter } from '../engine/lora/adapter.ts';
import { adapterValues, type AdapterValues } from '../engine/lora/adapter-values.ts';
import { decodeCheckpoint, encodeCheckpoint, type CheckpointStore } from './checkpoint.ts';
import type { Coach } from '../coach/coach.ts';
import { NEUTRAL_SCORE } from '../coach/coach-format.ts';
import type { TrainConfig } from './config.ts';
import { Curriculum, fixedTasks, type CurriculumState, type FilterCounts, type Picked } from './curriculum.ts';
import {
  actionVerdicts, coachTrajectories, creditedTrajectories, fanOutOf, trainSamples, usesCoach, type CoachedTrajectory, type CoachStats,
} from './rewards.ts';
import type { PlayOptions, TeamParts, TeamPass } from './rollout.ts';
import type { Action, RolloutTask, Trajectory } from './trajectory.ts';
import type { EvalResult, IterationMetrics, Phase, TrainEvent } from './records.ts';
import { meanMetrics, playedTeam } from './team.ts';

/**
 * What the loop needs computed: the update's passes (Gradients, ../rl/update.ts) and passes of the team
 * (`playTeam`: each pass played by rollout.ts's `playPass`, in order, each fixed by its values and seed).
 * compute/ implements it (run in place, or shared out); every implementation gives the same results.
 */
export interface Compute extends Gradients {
  /** The team played on each pass (rollout.ts `playPass`); one list of trajectories per pass, in order. */
  playTeam(passes: TeamPass[], opts?: PlayOptions): Promise<Trajectory[][]>;
}

/** What a run trains with: the team (resolved by the caller), its model and tools, its coach, its Compute, and an imported dataset if any. */
export interface RunParts extends TeamParts {
  coach: Coach;
  compute: Compute;
  /** Train (and optionally evaluate) on an imported dataset instead of the team's own tasks. */
  dataset?: { train: RolloutTask[]; eval?: RolloutTask[] };
}

/** Thrown by step() when its signal aborts it; the iteration left no trace (see step). */
export class StepAborted extends Error {
  constructor() {
    super('the iteration was stopped before its update; it will run again from its start');
    this.name = 'StepAborted';
  }
}

/** An agent's optimizer, at the run's learning rate and weight decay (fresh, resumed or replaced adapter alike). */
function optimizerOf(adapter: LoraAdapter, config: TrainConfig): AdamW {
  return new AdamW(adapter.variables(), { lr: config.lr, weightDecay: config.weightDecay });
}

/** Tasks -> trajectories: what one iteration played. */
interface Batch {
  /** The prompts, what was skipped, and the curriculum after picking (its level: the one the prompts came from). */
  picked: Picked;
  trajs: Trajectory[];
  /** Tokens generated in the rollouts, and the generations (distinct actions: a tree's leaves share their ancestors'). */
  generated: number;
  generations: number;
}

/** What an iteration's stages gave: the trajectories, their verdicts, the samples and the update (none when nothing was trained). */
interface Stages {
  batch: Batch;
  verdicts: { coached: CoachedTrajectory[]; stats: CoachStats };
  chosen: Chosen;
  update: UpdateMetrics | null;
}

/** Verdicts -> samples: what the update trains on, each sample's action and reward, what was filtered, and the curriculum after it. */
interface Chosen {
  samples: TrainSample[];
  rewards: ReturnType<typeof trainSamples>['rewards'];
  groups: ReturnType<typeof trainSamples>['groups'];
  actionOf: Map<TrainSample, Action>;
  filters: FilterCounts;
  curriculum: CurriculumState;
}

/** Times an iteration's phases into `seconds`, announcing each start and end. */
class PhaseClock {
  readonly seconds: Record<Phase, number> = { rollout: 0, coach: 0, update: 0, eval: 0, checkpoint: 0 };
  constructor(private readonly iteration: number, private readonly emit: (e: TrainEvent) => void) {}

  async time<T>(phase: Phase, f: () => Promise<T>): Promise<T> {
    const t0 = performance.now();
    this.emit({ type: 'phase', iteration: this.iteration, phase, status: 'start' });
    try {
      return await f();
    } finally {
      this.seconds[phase] += (performance.now() - t0) / 1000;
      this.emit({ type: 'phase', iteration: this.iteration, phase, status: 'end' });
    }
  }
}

/**
 * Items in `n` contiguous shares as equal as can be (the first ones larger by one), none empty (one empty
 * share when there are no items).
 * Example: sharesOf([a, b, c, d, e], 2) -> [[a, b, c], [d, e]]; sharesOf([a], 2) -> [[a]].
 */
export function sharesOf<T>(items: T[], n: number): T[][] {
  const k = Math.max(1, Math.min(n, items.length));
  const out: T[][] = [];
  let start = 0;
  for (let i = 0; i < k; i++) {
    const size = Math.floor(items.length / k) + (i < items.length % k ? 1 : 0);
    out.push(items.slice(start, start + size));
    start += size;
  }
  return out;
}

function checkAbort(signal?: AbortSignal): void {
  if (signal?.aborted) throw new StepAborted();
}

/** What step() may be told: a signal that stops it before its update, and who evaluates the team when due. */
export interface StepOptions {
  signal?: AbortSignal;
  /** Measures the team as it is after iteration `it` (RunSession's evaluation queue); absent: the caller evaluates later. */
  evaluate?: (it: number) => Promise<EvalResult>;
}

export class Trainer {
  /** The last finished iteration (0 before the first). */
  iteration = 0;
  readonly metrics: IterationMetrics[] = [];
  readonly compute: Compute;
  private listeners = new Set<(e: TrainEvent) => void>();
  /** The reference model's log-probs of samples already scored (it is frozen: rl/update-steps.ts). */
  private readonly refMemory = new RefMemory();
  /** 'state' whitening's baselines: the mean reward of each agent's input so far (rl/advantages.ts). */
  private readonly stateBaselines = new StateBaselines();

  private constructor(
    readonly config: TrainConfig,
    readonly parts: RunParts,
    private readonly store: CheckpointStore | null,
    readonly policies: Map<string, AgentPolicy>,
    readonly curriculum: Curriculum,
    /** The curriculum after the last finished iteration; an iteration replaces it only when it finishes. */
    private curriculumState: CurriculumState,
  ) {
    this.compute = parts.compute;
  }

  /** Fresh adapters per agent, or the store's checkpoint when there is one (`resume`). */
  static async create(config: TrainConfig, parts: RunParts, opts: { store?: CheckpointStore | null; resume?: boolean } = {}): Promise<Trainer> {
    const ids = config.workflow.agents.map((a) => a.id);
    const store = opts.store ?? null;
    const saved = opts.resume && store ? await store.load() : null;
    const resumed = saved ? await decodeCheckpoint(saved, parts.agentModel.config, ids) : null;
    const policies = new Map<string, AgentPolicy>();
    for (const id of ids) {
      const state = resumed?.agents.get(id);
      const adapter = state?.adapter ?? LoraAdapter.create(parts.agentModel.config, config.lora, id, config.seed);
      const optimizer = optimizerOf(adapter, config);
      if (state) optimizer.setState(state.optimizer);
      policies.set(id, { adapter, optimizer, trainable: config.workflow.agents.find((a) => a.id === id)!.trainable });
    }
    const { team } = parts;
    const own = { pool: (level: number) => team.trainPool(config.seed, level, config.curriculum.poolSize), leveled: Boolean(team.leveled) };
    const curriculum = new Curriculum(config.curriculum, config.seed, parts.dataset ? fixedTasks(parts.dataset.train) : own);
    const trainer = new Trainer(config, parts, store, policies, curriculum, resumed?.loop.curriculum ?? curriculum.start());
    if (resumed) {
      trainer.iteration = resumed.loop.iteration;
      trainer.metrics.push(...(resumed.loop.metrics as IterationMetrics[]));
      if (resumed.loop.baselines) trainer.stateBaselines.restore(resumed.loop.baselines);
      queueMicrotask(() => trainer.emit({ type: 'resumed', iteration: trainer.iteration }));
    }
    return trainer;
  }

  on(listener: (e: TrainEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private emit(e: TrainEvent): void {
    for (const l of this.listeners) l(e);
  }

  /** Whether iteration `it` ends with a held-out evaluation. */
  evalDue(it: number): boolean {
    return it % this.config.evalEvery === 0 || it === this.config.iterations;
  }

  /** Every agent's adapter as values (a snapshot: an evaluation's, or the rollouts'). */
  adapterValues(): Map<string, AdapterValues | null> {
    return new Map([...this.policies].map(([id, p]) => [id, adapterValues(p.adapter)]));
  }

  /** Puts `adapter` in place of an agent's own (an uploaded one), with a fresh optimizer; the old adapter is freed. */
  replaceAdapter(agentId: string, adapter: LoraAdapter): void {
    const policy = this.policies.get(agentId);
    if (!policy) throw new Error(`no trainable agent "${agentId}" in this team (${[...this.policies.keys()].join(', ')})`);
    policy.adapter.dispose();
    policy.optimizer.dispose();
    this.policies.set(agentId, {
      adapter,
      optimizer: optimizerOf(adapter, this.config),
      trainable: policy.trainable,
    });
  }

  /**
   * One iteration of the loop; returns its metrics. `signal` stops it early (a pause that should not
   * wait for the whole iteration): up to the start of the update it throws StepAborted, and since an
   * iteration commits nothing before its end, the same iteration runs again, identically, next time.
   * Once the update has begun the iteration completes.
   */
  async step(opts: StepOptions = {}): Promise<IterationMetrics> {
    try {
      return await this.iterate(opts);
    } catch (e) {
      if (opts.signal?.aborted && e === opts.signal.reason) throw new StepAborted(); // stopped between two decoding steps
      throw e;
    }
  }

  /** One iteration as stages over values: tasks -> trajectories -> verdicts -> samples -> update -> record. */
  private async iterate({ signal, evaluate }: StepOptions): Promise<IterationMetrics> {
    const c = this.config;
    const it = this.iteration + 1;
    const clock = new PhaseClock(it, (e) => this.emit(e));
    const batch = await this.rollOut(it, clock, signal);
    checkAbort(signal);
    const verdicts = await clock.time('coach', () => coachTrajectories(c.workflow, batch.trajs, this.parts.coach, c.rewards, this.parts.team.facts));
    checkAbort(signal);
    const chosen = this.samplesOf(batch, verdicts.coached);
    const update = chosen.samples.length ? await clock.time('update', () => this.update(it, chosen.samples)) : null;
    const record = this.recordOf(it, { batch, verdicts, chosen, update }, clock.seconds);
    return this.finish(it, record, chosen.curriculum, clock, evaluate);
  }

  /** Tasks -> trajectories: the curriculum's prompts, each played `samplesPerPrompt` times at the training temperature. */
  private async rollOut(it: number, clock: PhaseClock, signal?: AbortSignal): Promise<Batch> {
    const c = this.config;
    const picked = this.curriculum.pick(this.curriculumState, c.promptsPerIteration);
    checkAbort(signal); // a large batch takes a while to pick: a pause pressed meanwhile holds here
    const adapters = this.adapterValues();
    const seed = c.seed * 100_003 + it;
    // The counterfactual credit method asks for a tree: each agent replies several times to one frozen input.
    const fanOut = fanOutOf(c.rewards, c.workflow.agents.length);
    const passes = sharesOf(picked.tasks, c.rolloutPasses).map((tasks, k) => ({
      ...playedTeam(c), adapters, tasks, samplesPerTask: c.samplesPerPrompt, temperature: c.temperature, seed: seed + k * 1_000_003, fanOut,
    }));
    const played = await clock.time('rollout', () => this.compute.playTeam(passes, {
      signal, onProgress: (agentId, progress) => this.emit({ type: 'generation', iteration: it, agentId, progress }),
    }));
    const trajs = played.flat();
    const actions = new Set(trajs.flatMap((t) => t.actions));
    const generated = [...actions].reduce((n, a) => n + a.tokens.length, 0);
    return { picked, trajs, generated, generations: actions.size };
  }

  /**
   * Verdicts -> samples: the curriculum records the results and keeps the trajectories whose coach
   * answered; each kept action of a trainable agent becomes a sample with its reward; samples longer
   * than the model's context are left out. What was filtered, and why, is counted.
   */
  private samplesOf(batch: Batch, coached: CoachedTrajectory[]): Chosen {
    const c = this.config;
    const curriculum = this.curriculum.record(batch.picked.state, batch.trajs);
    // A coach that failed spoils only the rewards read from it (coach-free credit keeps every trajectory).
    const kept = usesCoach(c.rewards.mode) ? this.curriculum.keep(coached) : coached.map((_, i) => i);
    const { samples: all, rewards, actionOf, groups } = trainSamples(c.workflow, kept.map((i) => batch.trajs[i]), kept.map((i) => coached[i]), c.rewards,
      (id) => this.policies.get(id)?.trainable ?? false);
    const context = Math.min(this.parts.agentModel.config.maxPositionEmbeddings, MAX_TRAIN_TOKENS);
    const samples = all.filter((x) => x.prompt.length + x.action.length <= context);
    const filters: FilterCounts = {
      skippedAlwaysSolved: batch.picked.skippedAlwaysSolved, skippedNeverSolved: batch.picked.skippedNeverSolved,
      droppedCoachFailures: batch.trajs.length - kept.length, droppedOverContext: all.length - samples.length, level: batch.picked.state.level,
    };
    return { samples, rewards, actionOf, groups, filters, curriculum };
  }

  /** Samples -> update: each trainable agent's adapter takes its policy-gradient step, at iteration `it`'s learning rate. */
  private async update(it: number, samples: TrainSample[]): Promise<UpdateMetrics> {
    const lr = lrAt(this.config.lr, this.config.lrFinal, it, this.config.iterations);
    for (const p of this.policies.values()) p.optimizer.settings.lr = lr;
    const memory = this.config.update.rememberReference ? this.refMemory : undefined;
    const state = this.config.update.whitening === 'state';
    const m = await policyUpdate(this.compute, this.policies, state ? this.stateBaselines.attach(samples) : samples, this.config.update, memory);
    if (state) this.stateBaselines.record(samples); // after the update, which used the baselines from before it
    return m;
  }

  /** The record: the trajectories with each action's verdict, reward and the advantage the update trained it on; the iteration's metrics. */
  private recordOf(it: number, { batch, verdicts, chosen, update }: Stages, seconds: Record<Phase, number>):
    { metrics: IterationMetrics; trajs: Trajectory[] } {
    const c = this.config;
    const advantages = new Map<Action, number>();
    update?.sampleAdvantages.forEach((adv, i) => advantages.set(chosen.actionOf.get(chosen.samples[i])!, adv));
    const trajs = creditedTrajectories(batch.trajs, { verdicts: actionVerdicts(batch.trajs, verdicts.coached), rewards: chosen.rewards, advantages });
    const perAgent: IterationMetrics['perAgent'] = {};
    for (const spec of c.workflow.agents) {
      const acts = trajs.flatMap((t) => t.actions.filter((a) => a.agentId === spec.id));
      const u = update?.agents[spec.id];
      perAgent[spec.id] = {
        meanScore: acts.length ? acts.reduce((a, x) => a + (x.coach?.score ?? NEUTRAL_SCORE), 0) / acts.length : 0,
        reward: mean(acts.flatMap((x) => (x.reward === undefined ? [] : [x.reward]))),
        loss: u?.loss ?? 0, kl: u?.kl ?? 0, entropy: u?.entropy ?? 0, clipFraction: u?.clipFraction ?? 0,
        gradNorm: u?.gradNorm ?? 0, samples: u?.samples ?? 0, skippedSteps: u?.skippedSteps ?? 0,
      };
    }
    // Actions without a reward (their trajectory was dropped for a failed coach) are not counted as 0.
    const rewardValues = trajs.flatMap((t) => t.actions.flatMap((a) => (a.reward === undefined ? [] : [a.reward])));
    const metrics: IterationMetrics = {
      iteration: it,
      trainAccuracy: trajs.filter((t) => t.correct).length / Math.max(trajs.length, 1),
      meanReward: mean(rewardValues),
      perAgent,
      kl: update?.kl ?? 0,
      coach: verdicts.stats,
      filters: chosen.filters,
      quality: meanMetrics(trajs, this.parts.team.metricNames),
      trajectories: trajs.length,
      generations: batch.generations,
      ...(chosen.groups ? { groups: chosen.groups } : {}),
      rolloutTokensPerSecond: batch.generated / Math.max(seconds.rollout, 1e-9),
      updateTokensPerSecond: update?.tokensPerSecond ?? 0,
      seconds,
    };
    return { metrics, trajs };
  }

  /** The iteration is done: committed, announced, evaluated when due (by `evaluate`, if given), stored, checkpointed when due. */
  private async finish(it: number, { metrics, trajs }: { metrics: IterationMetrics; trajs: Trajectory[] }, curriculum: CurriculumState,
    clock: PhaseClock, evaluate?: (it: number) => Promise<EvalResult>): Promise<IterationMetrics> {
    const c = this.config;
    this.emit({ type: 'trajectories', iteration: it, trajectories: trajs });
    this.iteration = it;
    this.curriculumState = curriculum;
    if (this.evalDue(it) && evaluate) {
      metrics.eval = await clock.time('eval', () => evaluate(it));
      this.emit({ type: 'eval', iteration: it, result: metrics.eval });
    }
    this.metrics.push(metrics);
    await this.store?.appendMetrics(metrics);
    this.emit({ type: 'iteration', metrics });
    if (this.store && (it % c.checkpointEvery === 0 || it === c.iterations)) {
      await clock.time('checkpoint', () => this.checkpoint());
    }
    return metrics;
  }

  async checkpoint(): Promise<void> {
    if (!this.store) return;
    const agents = new Map(await Promise.all([...this.policies].map(async ([id, p]) =>
      [id, { adapter: p.adapter, optimizer: await p.optimizer.getState() }] as const)));
    await this.store.save(await encodeCheckpoint(
      { iteration: this.iteration, curriculum: this.curriculumState, metrics: this.metrics, config: this.config,
        ...(this.config.update.whitening === 'state' ? { baselines: this.stateBaselines.entries() } : {}) }, agents));
    this.emit({ type: 'checkpoint', iteration: this.iteration });
  }

  dispose(): void {
    for (const p of this.policies.values()) {
      p.adapter.dispose();
      p.optimizer.dispose();
    }
  }
}
