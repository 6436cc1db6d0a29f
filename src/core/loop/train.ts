/**
 * The MAPPA training loop, top to bottom:
 *
 *   for each iteration:
 *     pick prompts (curriculum) -> rollouts (P prompts x n samples, temperature 1.0)
 *     -> coach every action -> drop failed-coach trajectories -> rewards -> per-agent samples
 *     -> update each trainable agent's adapter -> metrics event
 *     every k iterations: held-out evaluation (temperature 0.6 and greedy) and a checkpoint
 *
 * For: `Trainer`, one iteration at a time (`step`); a whole run, with its evaluations, resume and
 * pause, is session.ts's RunSession, which the CLI and the page's lab both drive.
 * Not for: printing or drawing — listeners get events, nothing flows back up.
 * Example: const t = await Trainer.create(config, {agentModel, coach, tools: {python: sandbox, javascript: sandbox}, store});
 *          t.on((e) => console.log(e.type)); const metrics = await t.step();
 */
import { AdamW } from '../rl/adamw.ts';
import { MAX_TRAIN_TOKENS, policyUpdate, type AgentPolicy, type UpdateMetrics } from '../rl/update.ts';
import { flattenAdapter, type AdapterSpec, type UpdateLanes } from '../rl/lanes.ts';
import { LoraAdapter } from '../engine/lora/adapter.ts';
import type { LoadedModel } from '../engine/model/load.ts';
import type { ToolRunners } from '../tools/runners.ts';
import { EngineAgents, type AgentBackend } from './agents.ts';
import { decodeCheckpoint, encodeCheckpoint, type CheckpointStore } from './checkpoint.ts';
import type { Coach } from '../coach/coach.ts';
import { NEUTRAL_SCORE } from '../coach/coach-format.ts';
import type { TrainConfig } from './config.ts';
import { Curriculum, type FilterCounts } from './curriculum.ts';
import { domainOf, heldOutTasks, meanMetrics } from '../domains/index.ts';
import { actionVerdicts, coachTrajectories, recordCredit, trainSamples } from './rewards.ts';
import { runRollouts, type Action, type RolloutTask, type Trajectory } from './rollout.ts';
import type { EvalResult, IterationMetrics, Phase, TrainEvent } from './records.ts';

export interface TrainerDeps {
  agentModel: LoadedModel;
  coach: Coach;
  /** What the agents' code blocks run on, by language (the SQL tool for workflows that use it: data team). */
  tools: ToolRunners;
  store?: CheckpointStore | null;
  /** Frozen agents on another engine (e.g. WebLLM), by agent id. */
  external?: Map<string, AgentBackend>;
  /** Train (and optionally evaluate) on an imported dataset instead of generated math problems. */
  dataset?: { train: RolloutTask[]; eval?: RolloutTask[] };
  /** Extra threads for the update (Node CLI: one worker per extra core); same results as without. */
  updateLanes?: UpdateLanes | null;
  /** Runs an evaluation's sampled pass on another thread (Node CLI: a worker of --threads); same results. */
  evalOffload?: EvalOffload | null;
  /**
   * Leave the held-out evaluations to the caller (the page queues them in an EvalQueue and runs them
   * alongside training); step() then only reports, through `evalDue`, which iterations need one.
   */
  deferEvaluations?: boolean;
}

/** Thrown by step() when its signal aborts it; the iteration left no trace (see step). */
export class StepAborted extends Error {
  constructor() {
    super('the iteration was stopped before its update; it will run again from its start');
    this.name = 'StepAborted';
  }
}

/** A sampled evaluation pass on another thread, for adapters given as values (null: the base model). */
export type EvalOffload = (config: TrainConfig, adapters: Map<string, AdapterSpec | null>, tasks: RolloutTask[],
  temperature: number, seed: number) => Promise<Trajectory[]>;

export interface EvalOptions {
  /** Progress: rows of each generation stage. */
  onStage?: (rows: number) => void;
  /** Held-out tasks instead of the domain's generated set (first `config.evalTasks`). */
  heldOut?: RolloutTask[];
  onTrajectories?: (mode: 'greedy' | 'sampled', trajs: Trajectory[]) => void;
  /**
   * Runs the sampled pass elsewhere (another thread) while this one runs the greedy pass; it gets the
   * same tasks, temperature and seed, so the same trajectories. If it fails, the pass runs here.
   */
  offloadSampled?: (tasks: RolloutTask[], temperature: number, seed: number) => Promise<Trajectory[]>;
  onOffloadError?: (e: Error) => void;
}

/** Mean of `xs`, 0 for none. */
function mean(xs: number[]): number {
  return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0;
}

/** The evaluation's fixed sampling seed: every evaluation of a run draws the same way. */
export const EVAL_SEED = 1_000_003;

/** Held-out team accuracy for any set of agent backends (trained adapters, base model, or mixed). */
export async function evaluateTeam(config: TrainConfig, backends: Map<string, AgentBackend>, tools: ToolRunners,
  opts: EvalOptions = {}): Promise<EvalResult> {
  const domain = domainOf(config.workflow);
  const tasks = heldOutTasks(config, opts.heldOut);
  const run = async (temperature: number) => runRollouts(config.workflow, tasks, {
    agents: backends, tools, outcome: domain.outcome, samplesPerTask: 1, temperature,
    seed: EVAL_SEED, toolTimeoutMs: config.toolTimeoutMs, onStage: (s) => opts.onStage?.(s.rows),
  });
  const elsewhere = opts.offloadSampled?.(tasks, config.evalTemperature, EVAL_SEED).catch((e: Error) => {
    opts.onOffloadError?.(e);
    return null;
  });
  const greedy = await run(0);
  opts.onTrajectories?.('greedy', greedy);
  const sampled = (await elsewhere) ?? (await run(config.evalTemperature));
  opts.onTrajectories?.('sampled', sampled);
  return evalResultOf(config, greedy, sampled);
}

/**
 * An evaluation's result from its greedy and sampled trajectories (the same tasks, in order): the
 * accuracies, the domain's mean quality metrics of each pass, and each task's result. `of`: the tasks
 * a running evaluation will have in all (the page's running estimate).
 */
export function evalResultOf(config: TrainConfig, greedy: Trajectory[], sampled: Trajectory[], of?: number): EvalResult {
  const names = domainOf(config.workflow).metricNames;
  const accuracy = (trajs: Trajectory[]) => trajs.filter((t) => t.correct).length / Math.max(trajs.length, 1);
  const metrics = meanMetrics(greedy, names);
  const sampledMetrics = meanMetrics(sampled, names);
  return {
    greedy: accuracy(greedy), sampled: accuracy(sampled), tasks: greedy.length,
    ...(of === undefined ? {} : { of }),
    ...(Object.keys(metrics).length ? { metrics } : {}),
    ...(Object.keys(sampledMetrics).length ? { sampledMetrics } : {}),
    perTask: { ids: greedy.map((t) => t.task.id), greedy: greedy.map((t) => t.correct), sampled: sampled.map((t) => t.correct) },
  };
}

export class Trainer {
  iteration = 0;
  readonly metrics: IterationMetrics[] = [];
  private listeners = new Set<(e: TrainEvent) => void>();
  /** Cleared when an update lane fails: the rest of the run updates on this thread alone. */
  private lanesUsable = true;
  /** Cleared when the evaluation thread fails: later evaluations run here alone. */
  private offloadUsable = true;

  private constructor(
    readonly config: TrainConfig,
    readonly deps: TrainerDeps,
    readonly policies: Map<string, AgentPolicy>,
    readonly curriculum: Curriculum,
  ) {}

  /** Fresh adapters per agent, or the store's checkpoint when there is one (resume). */
  static async create(config: TrainConfig, deps: TrainerDeps, opts: { resume?: boolean } = {}): Promise<Trainer> {
    const ids = config.workflow.agents.filter((a) => !deps.external?.has(a.id)).map((a) => a.id);
    const saved = opts.resume && deps.store ? await deps.store.load() : null;
    const policies = new Map<string, AgentPolicy>();
    let trainer: Trainer;
    if (saved) {
      const { loop, agents } = await decodeCheckpoint(saved, deps.agentModel.config, ids);
      for (const [id, a] of agents) {
        const optimizer = new AdamW(a.adapter.variables(), { lr: config.lr, weightDecay: config.weightDecay });
        optimizer.setState(a.optimizer);
        policies.set(id, { adapter: a.adapter, optimizer, trainable: config.workflow.agents.find((x) => x.id === id)!.trainable });
      }
      trainer = new Trainer(config, deps, policies, new Curriculum(config.curriculum, config.seed, loop.curriculum, deps.dataset?.train ?? domainOf(config.workflow).trainPool(config.seed)));
      trainer.iteration = loop.iteration;
      trainer.metrics.push(...(loop.metrics as IterationMetrics[]));
    } else {
      for (const id of ids) {
        const spec = config.workflow.agents.find((a) => a.id === id)!;
        const adapter = LoraAdapter.create(deps.agentModel.config, config.lora, id, config.seed);
        policies.set(id, { adapter, optimizer: new AdamW(adapter.variables(), { lr: config.lr, weightDecay: config.weightDecay }), trainable: spec.trainable });
      }
      trainer = new Trainer(config, deps, policies, new Curriculum(config.curriculum, config.seed, undefined, deps.dataset?.train ?? domainOf(config.workflow).trainPool(config.seed)));
    }
    if (saved) queueMicrotask(() => trainer.emit({ type: 'resumed', iteration: trainer.iteration }));
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

  /** Every trainable agent's adapter as values (an evaluation's snapshot). */
  adapterValues(): Map<string, AdapterSpec | null> {
    return new Map([...this.policies].map(([id, p]) => [id, flattenAdapter(p.adapter)]));
  }

  private backends(signal?: AbortSignal): Map<string, AgentBackend> {
    const engine = new EngineAgents(this.deps.agentModel, new Map([...this.policies].map(([id, p]) => [id, p.adapter])));
    engine.onProgress = (agentId, progress) => {
      if (signal?.aborted) throw new StepAborted(); // between two decoding steps
      this.emit({ type: 'generation', iteration: this.iteration, agentId, progress });
    };
    return new Map(this.config.workflow.agents.map((a) => [a.id, this.deps.external?.get(a.id) ?? engine]));
  }

  /** Team accuracy on the held-out subset, greedy and at the evaluation temperature (fixed seeds). */
  async evaluate(): Promise<EvalResult> {
    const offload = this.deps.evalOffload;
    const engineOnly = !this.config.workflow.agents.some((a) => this.deps.external?.has(a.id));
    return evaluateTeam(this.config, this.backends(), this.deps.tools, {
      onStage: () => this.emit({ type: 'phase', iteration: this.iteration, phase: 'eval', status: 'start' }),
      heldOut: this.deps.dataset?.eval,
      offloadSampled: offload && this.offloadUsable && engineOnly
        ? (tasks, temperature, seed) => offload(this.config, this.adapterValues(), tasks, temperature, seed)
        : undefined,
      onOffloadError: (e) => {
        this.offloadUsable = false;
        this.emit({ type: 'warning', iteration: this.iteration, message: `the evaluation thread failed (${e.message}); its pass ran on the main thread, and the rest of the run evaluates there alone` });
      },
    });
  }

  /**
   * One iteration of the loop; returns its metrics. `signal` stops it early (a pause that should not
   * wait for the whole iteration): up to the start of the update it throws StepAborted and puts the
   * curriculum back, so nothing changed and the same iteration runs again, identically, next time.
   * Once the update has begun the iteration completes.
   */
  async step(opts: { signal?: AbortSignal } = {}): Promise<IterationMetrics> {
    const curriculumBefore = JSON.stringify(this.curriculum.state);
    try {
      return await this.iterate(opts.signal);
    } catch (e) {
      if (e instanceof StepAborted) this.curriculum.state = JSON.parse(curriculumBefore);
      throw e;
    }
  }

  private async iterate(signal?: AbortSignal): Promise<IterationMetrics> {
    const c = this.config;
    const checkAbort = () => {
      if (signal?.aborted) throw new StepAborted();
    };
    const it = this.iteration + 1;
    const seconds: Record<Phase, number> = { rollout: 0, coach: 0, update: 0, eval: 0, checkpoint: 0 };
    const timed = async <T>(phase: Phase, f: () => Promise<T>): Promise<T> => {
      const t0 = performance.now();
      this.emit({ type: 'phase', iteration: it, phase, status: 'start' });
      try {
        return await f();
      } finally {
        seconds[phase] += (performance.now() - t0) / 1000;
        this.emit({ type: 'phase', iteration: it, phase, status: 'end' });
      }
    };

    const domain = domainOf(c.workflow);
    // trajectories -> scores -> {rewards, samples} -> update -> summary; each stage returns values.
    const level = this.curriculum.state.level; // the level these prompts come from (record() may change it)
    const picked = this.curriculum.pick(c.promptsPerIteration);
    checkAbort(); // a large batch takes a while to pick: a pause pressed meanwhile holds here
    const trajs = await timed('rollout', () => runRollouts(c.workflow, picked.tasks, {
      agents: this.backends(signal), tools: this.deps.tools, outcome: domain.outcome,
      samplesPerTask: c.samplesPerPrompt, temperature: c.temperature, seed: c.seed * 100_003 + it, toolTimeoutMs: c.toolTimeoutMs,
    }));
    const generated = trajs.reduce((n, t) => n + t.actions.reduce((m, a) => m + a.tokens.length, 0), 0);
    checkAbort();
    const { coached, stats } = await timed('coach', () => coachTrajectories(c.workflow, trajs, this.deps.coach, c.rewards, domain.facts));
    checkAbort();
    this.curriculum.record(trajs);
    const kept = this.curriculum.keep(coached);
    const { samples: all, rewards, actionOf } = trainSamples(c.workflow, kept.map((i) => trajs[i]), kept.map((i) => coached[i]), c.rewards,
      (id) => this.policies.get(id)?.trainable ?? false);
    const context = Math.min(this.deps.agentModel.config.maxPositionEmbeddings, MAX_TRAIN_TOKENS);
    const samples = all.filter((x) => x.prompt.length + x.action.length <= context);
    const filters: FilterCounts = {
      skippedAlwaysSolved: picked.skippedAlwaysSolved, skippedNeverSolved: picked.skippedNeverSolved,
      droppedCoachFailures: trajs.length - kept.length, droppedOverContext: all.length - samples.length, level,
    };
    let update: UpdateMetrics | null = null;
    if (samples.length) {
      update = await timed('update', () => policyUpdate(this.deps.agentModel.model, this.policies, samples, c.update, {
        lanes: this.lanesUsable ? this.deps.updateLanes : null,
        onLaneError: (e) => {
          this.lanesUsable = false;
          this.emit({ type: 'warning', iteration: it, message: `an update thread failed (${e.message}); its share was computed on the main thread, and the rest of the run uses that thread alone` });
        },
      }));
    }

    // The record: each action keeps its verdict, reward and the advantage the update trained it on.
    const advantages = new Map<Action, number>();
    update?.sampleAdvantages.forEach((adv, i) => advantages.set(actionOf.get(samples[i])!, adv));
    recordCredit({ verdicts: actionVerdicts(trajs, coached), rewards, advantages });
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
      coach: stats,
      filters,
      quality: meanMetrics(trajs, domain.metricNames),
      trajectories: trajs.length,
      rolloutTokensPerSecond: generated / Math.max(seconds.rollout, 1e-9),
      updateTokensPerSecond: update?.tokensPerSecond ?? 0,
      seconds,
    };
    this.emit({ type: 'trajectories', iteration: it, trajectories: trajs });
    this.iteration = it;
    if (this.evalDue(it) && !this.deps.deferEvaluations) {
      metrics.eval = await timed('eval', () => this.evaluate());
      this.emit({ type: 'eval', iteration: it, result: metrics.eval });
    }
    this.metrics.push(metrics);
    await this.deps.store?.appendMetrics(metrics);
    this.emit({ type: 'iteration', metrics });
    if (this.deps.store && (it % c.checkpointEvery === 0 || it === c.iterations)) {
      await timed('checkpoint', () => this.checkpoint());
    }
    return metrics;
  }

  async checkpoint(): Promise<void> {
    if (!this.deps.store) return;
    const agents = new Map(await Promise.all([...this.policies].map(async ([id, p]) => [id, { adapter: p.adapter, optimizer: await p.optimizer.getState() }] as const)));
    await this.deps.store.save(await encodeCheckpoint({ iteration: this.iteration, curriculum: this.curriculum.state, metrics: this.metrics, config: this.config }, agents));
    this.emit({ type: 'checkpoint', iteration: this.iteration });
  }

  dispose(): void {
    for (const p of this.policies.values()) {
      p.adapter.dispose();
      p.optimizer.dispose();
    }
  }
}
