/**
 * The page's run (RunSession + EvalQueue) on a tiny random team: training starts at once, the
 * evaluations arrive as running estimates and end as stored records, a lane does the evaluation
 * work alongside (through the real LanePool plumbing over a MessageChannel), and a pause in the
 * middle of an iteration leaves no trace: the resumed run equals an uninterrupted one.
 */
import { MessageChannel } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../../src/core/engine/backend.ts';
import type { LoadedModel } from '../../../src/core/engine/model/load.ts';
import { RunSession, type SessionEvent } from '../../../src/core/loop/session.ts';
import { TRAJECTORIES } from '../../../src/core/loop/checkpoint.ts';
import { EVAL_SEED, evalResultOf } from '../../../src/core/loop/evaluate.ts';
import type { IterationMetrics } from '../../../src/core/loop/records.ts';
import { EngineAgents } from '../../../src/core/loop/agents.ts';
import { runRollouts } from '../../../src/core/loop/rollout.ts';
import { teamOf, heldOutTasks, resolveTrainConfig } from '../../../src/core/domains/index.ts';
import type { Compute } from '../../../src/core/loop/train.ts';
import { alongside } from '../../../src/core/compute/alongside.ts';
import { LanePool, serveLaneJobs } from '../../../src/core/compute/lane-pool.ts';
import { LaneCompute } from '../../../src/core/compute/lanes.ts';
import { LocalCompute } from '../../../src/core/compute/local.ts';
import { LaneServer, type LaneJob, type LaneResult } from '../../../src/core/compute/lane-server.ts';
import { disposeTools, type ToolRunners } from '../../../src/core/tools/runners.ts';
import { createSandbox } from '../../../src/core/tools/code-sandbox.ts';
import { tinyTeamModel } from '../../helpers/tiny-team.ts';
import { MemoryStore, stable, testCoach } from '../../helpers/loop.ts';

describe('RunSession: learning first, measuring alongside', () => {
  let model: LoadedModel;
  let tools: ToolRunners;
  const config = resolveTrainConfig({
    iterations: 2, promptsPerIteration: 2, samplesPerPrompt: 2, evalEvery: 2, evalTasks: 10, checkpointEvery: 1,
    lora: { rank: 2, targetModules: ['q_proj', 'v_proj'] }, update: { microBatchSize: 2 }, curriculum: { startLevel: 1 },
    coach: { kind: 'rule' },
    workflow: {
      name: 'math-chain-short', domain: 'math',
      agents: [
        { id: 'solver', role: 'Problem Solver', system: 'Solver', user: 'Problem: {{problem}}', maxTokens: 5, turns: 1, tools: [], trainable: true },
        { id: 'executor', role: 'Code Executor', system: 'Executor', user: '{{problem}}\n{{output:solver}}', maxTokens: 5, turns: 1, tools: ['python'], trainable: true },
        { id: 'verifier', role: 'Verifier', system: 'Verifier', user: '{{output:executor}}', maxTokens: 5, turns: 1, tools: [], trainable: false, final: true },
      ],
    },
  });
  const parts = () => ({ team: teamOf(config.workflow), agentModel: model, tools });
  const session = async (store: MemoryStore, given?: Compute, opts: { baseline?: boolean; evaluations?: 'inline' | 'alongside' } = {}) => {
    const events: SessionEvent[] = [];
    const compute = given ?? LocalCompute.forTeam(parts());
    const hook = (opts.evaluations ?? 'alongside') === 'alongside' ? alongside(compute) : undefined;
    const s = await RunSession.open(config, { ...parts(), coach: testCoach(), tools, compute }, {
      store, hook, baseline: opts.baseline, emit: (e) => events.push(e),
    });
    return { s, trainer: s.trainer, events };
  };

  beforeAll(async () => {
    await initBackend({ force: 'wasm' });
    model = await tinyTeamModel(2);
    const sandbox = createSandbox();
    tools = { python: sandbox, javascript: sandbox };
  });
  afterAll(async () => {
    model.model.dispose();
    await disposeTools(tools);
  });

  it('trains before the baseline is measured; evaluations arrive as running estimates, then as records', async () => {
    const store = new MemoryStore();
    const { s, trainer, events } = await session(store);
    expect(s.queue.pending).toEqual([0]);
    expect(await s.run({ single: true })).toBe('stepped');
    expect(trainer.iteration).toBe(1);
    // After one iteration: a first chunk of the baseline, a running estimate over part of the 10 problems.
    const first = events.find((e) => e.type === 'eval');
    expect(first).toMatchObject({ type: 'eval', iteration: 0, result: { of: 10 } });
    expect(first!.type === 'eval' && first!.result.tasks).toBeLessThan(10);
    expect(await s.run()).toBe('done');
    const evals = store.records.filter((r) => !(r as { perAgent?: unknown }).perAgent) as { iteration: number; eval: { tasks: number; of?: number; perTask: { ids: string[] } } }[];
    expect(evals.map((r) => r.iteration)).toEqual([0, 2]);
    for (const r of evals) {
      expect(r.eval.tasks).toBe(10);
      expect(r.eval.of).toBeUndefined();
      expect(r.eval.perTask.ids).toEqual(s.queue.tasks.map((t) => t.id));
    }
    expect(events[events.length - 1]).toEqual({ type: 'done', iteration: 2 });
  });

  it('a lane (over a message channel, as the page\'s Web Workers) gives the same run and the same evaluations', async () => {
    const here = new MemoryStore();
    const alone = await session(here);
    await alone.s.run();

    const { port1, port2 } = new MessageChannel();
    const server = new LaneServer(model.model, async () => parts());
    serveLaneJobs<LaneJob, LaneResult>({ postMessage: (m) => port2.postMessage(m), onMessage: (h) => port2.on('message', h) }, (job) => server.handle(job));
    const pool = new LanePool<LaneJob, LaneResult>([{
      postMessage: (m) => port1.postMessage(m), listen: (onReply) => port1.on('message', onReply), terminate: () => { port1.close(); port2.close(); },
    }]);
    const warnings: string[] = [];
    const compute = new LaneCompute(LocalCompute.forTeam(parts()), pool, (m) => warnings.push(m));
    expect(compute.background()).not.toBeNull();
    const there = new MemoryStore();
    const withLane = await session(there, compute);
    await withLane.s.run();
    await pool.close();
    expect(warnings).toEqual([]);
    server.dispose();
    const strip = (rs: unknown[]) => rs.map((r) => ((r as { perAgent?: unknown }).perAgent ? stable(r as IterationMetrics) : r));
    expect(strip(there.records)).toEqual(strip(here.records));
  });

  it('a run stopped with an evaluation half measured (a take-over, a closed tab) says that the evaluation starts again', async () => {
    const store = new MemoryStore();
    const first = await session(store);
    expect(await first.s.run({ single: true })).toBe('stepped'); // the untrained team's evaluation: a first chunk of its 10 problems
    expect(first.events.some((e) => e.type === 'eval' && e.iteration === 0 && e.result.of === 10)).toBe(true);
    await first.s.saveIfBehind(); // where another tab takes the run over
    const again = await session(store);
    expect(again.events.filter((e) => e.type === 'warning')).toEqual([{
      type: 'warning', message: 'the held-out evaluation of the untrained team starts again from its first problem (a stopped run keeps finished evaluations only)',
    }]);
    expect(await again.s.run()).toBe('done');
    const base = store.records.find((r) => (r as { iteration: number; eval?: unknown }).iteration === 0 && (r as { eval?: unknown }).eval);
    expect(base).toMatchObject({ eval: { tasks: 10 } }); // measured whole, once
  });

  it('a pause reaches the lane: its evaluation chunk stops at its next decoding step, not at the chunk\'s end; resuming measures it whole', async () => {
    const { port1, port2 } = new MessageChannel();
    const server = new LaneServer(model.model, async () => parts());
    const pause = new AbortController();
    const plays: string[] = [];
    // The lane's side, in the order things happen there: a play job starts (Pause is pressed at that moment),
    // then it either finishes its whole chunk or stops.
    serveLaneJobs<LaneJob, LaneResult>({ postMessage: (m) => port2.postMessage(m), onMessage: (h) => port2.on('message', h) }, (job, signal) => {
      if (job.kind !== 'play') return server.handle(job, signal);
      plays.push('start');
      if (plays.length === 1) pause.abort();
      return server.handle(job, signal).then((r) => (plays.push('finished'), r), (e) => (plays.push('stopped'), Promise.reject(e)));
    });
    const pool = new LanePool<LaneJob, LaneResult>([{
      postMessage: (m) => port1.postMessage(m), listen: (onReply) => port1.on('message', onReply), terminate: () => { port1.close(); port2.close(); },
    }]);
    const warnings: string[] = [];
    const compute = new LaneCompute(LocalCompute.forTeam(parts()), pool, (m) => warnings.push(m));
    const store = new MemoryStore();
    const first = await session(store, compute);
    expect(await first.s.run({ signal: pause.signal })).toBe('paused');
    expect(plays.slice(0, 2)).toEqual(['start', 'stopped']); // stopped mid-chunk: a pause is not a lane failure
    expect(warnings).toEqual([]);
    expect(store.records.filter((r) => (r as { eval?: unknown }).eval)).toEqual([]); // nothing of the stopped chunk kept
    const again = await session(store, compute);
    expect(await again.s.run()).toBe('done');
    await pool.close();
    server.dispose();
    const evals = store.records.filter((r) => !(r as { perAgent?: unknown }).perAgent) as { iteration: number; eval: { tasks: number; of?: number } }[];
    expect(evals.map((r) => [r.iteration, r.eval.tasks, r.eval.of])).toEqual([[0, 10, undefined], [2, 10, undefined]]);
  });

  it('a pause in the middle of an iteration leaves no trace: the run goes on exactly as an uninterrupted one', async () => {
    const reference = new MemoryStore();
    const a = await session(reference, undefined, { baseline: false }); // no evaluations: the iterations alone
    await a.s.run();

    const store = new MemoryStore();
    const b = await session(store, undefined, { baseline: false });
    const controller = new AbortController();
    let steps = 0;
    b.trainer.on((e) => {
      // Generation events carry the iteration being played (1); the abort is seen before the next decoding step.
      if (e.type === 'generation' && e.iteration === 1 && ++steps === 3) controller.abort(); // mid-decoding
    });
    expect(await b.s.run({ signal: controller.signal })).toBe('paused');
    expect(b.trainer.iteration).toBe(0);
    expect(store.records).toEqual([]);
    expect(await b.s.run()).toBe('done');
    const iterations = (st: MemoryStore) => (st.records.filter((r) => (r as { perAgent?: unknown }).perAgent) as IterationMetrics[]).map(stable);
    expect(iterations(store)).toEqual(iterations(reference));
  });

  it('inline (the CLI): the untrained team whole before training, as the plain rollouts measure it; later evaluations inside their iteration; trajectories kept', async () => {
    const store = new MemoryStore();
    const { s } = await session(store, undefined, { evaluations: 'inline' });
    expect(await s.run()).toBe('done');
    // The reference: the base model's team played directly on the held-out tasks, greedy and sampled, with the evaluation seed.
    const play = (temperature: number) => runRollouts(config.workflow, heldOutTasks(config), {
      agents: new EngineAgents(model, new Map()), tools, outcome: teamOf(config.workflow).outcome, samplesPerTask: 1, temperature, seed: EVAL_SEED, toolTimeoutMs: config.toolTimeoutMs,
    });
    const reference = evalResultOf(teamOf(config.workflow), config.workflow, await play(0), await play(config.evalTemperature));
    const records = store.records as { iteration: number; eval?: unknown; perAgent?: unknown }[];
    expect(records.map((r) => [r.iteration, Boolean(r.perAgent), Boolean(r.eval)])).toEqual([[0, false, true], [1, true, false], [2, true, true]]);
    expect(records[0].eval).toEqual(reference);
    const lines = String(await store.readFile(TRAJECTORIES)).trim().split('\n');
    expect(lines).toHaveLength(2 * config.promptsPerIteration * config.samplesPerPrompt);
    expect(JSON.parse(lines[0]).iteration).toBe(1);

    // Opened again on the same store: resumed at the end, nothing left to measure or train.
    const again = await session(store, undefined, { evaluations: 'inline' });
    expect(again.s.history).toMatchObject({ resumed: true, evals: [{ iteration: 0 }] });
    expect(again.s.history.metrics.map((m) => m.iteration)).toEqual([1, 2]);
    expect(again.s.queue.pending).toEqual([]);
    expect(Object.keys(await again.s.adapterFiles())).toEqual(['solver', 'executor', 'verifier'].filter((id) => config.workflow.agents.find((a) => a.id === id)));
  });
});
