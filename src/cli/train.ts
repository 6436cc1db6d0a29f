/**
 * `mappa train [--config FILE] [--reward process|outcome|mixed] [--seed S] [--out DIR] [--resume]`
 * runs the MAPPA loop (with no config: the embedded default, tiny models, math team), with a
 * progress bar on stderr. The run folder gets metrics.jsonl, trajectories.jsonl, checkpoint/,
 * adapters/<agent>/ (PEFT) and summary.json; the summary is also printed on stdout.
 */
import { existsSync } from 'node:fs';
import { appendFile, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { exportPeft } from '../core/engine/lora/peft.ts';
import { evaluateTeam, Trainer, type EvalResult, type Phase } from '../core/loop/train.ts';
import { EngineAgents } from '../core/loop/agents.ts';
import { trajectoryLines } from '../core/loop/rollout.ts';
import { BACKEND_OPTION, CliError, parseOptions, startBackend, threadCount } from './common.ts';
import { FileStore } from '../platform/node/file-store.ts';
import { TrainWorkers } from './train-workers.ts';
import { readConfig, readDataset, setUpRun } from './run-setup.ts';

const USAGE = `usage: mappa train [--config FILE] [--reward process|outcome|mixed] [--seed S] [--iterations N]
       [--coach model|rule] [--dataset FILE] [--eval-dataset FILE] [--out DIR] [--resume] [--backend cpu|wasm|webgpu]
       [--threads N]
With no --config it trains the embedded default (models/agent + models/judge, math chain) on generated
problems; --dataset trains on a JSONL file of {"problem", "answer"} lines (GSM8K/MATH/AIME style).
--threads: threads on the wasm backend (default: every core; 1 = this thread only): the update's
micro-batches are shared, and each evaluation's sampled pass runs on a worker; the results are the
same with any number.\n`;


function bar(done: number, total: number, width = 24): string {
  const n = Math.round((width * done) / Math.max(total, 1));
  return '[' + '#'.repeat(n) + '.'.repeat(width - n) + ']';
}

function fmtSeconds(s: number): string {
  return s >= 90 ? `${Math.floor(s / 60)}m${String(Math.round(s % 60)).padStart(2, '0')}s` : `${Math.round(s)}s`;
}

export async function trainCommand(argv: string[]): Promise<void> {
  const o = parseOptions(argv, {
    config: { type: 'string' }, reward: { type: 'string' }, seed: { type: 'string' }, iterations: { type: 'string' },
    coach: { type: 'string' }, out: { type: 'string' }, resume: { type: 'boolean' }, threads: { type: 'string' },
    dataset: { type: 'string' }, 'eval-dataset': { type: 'string' }, ...BACKEND_OPTION,
  }, USAGE);
  const train = await readDataset(o.dataset, '--dataset');
  const heldOut = await readDataset(o['eval-dataset'], '--eval-dataset');
  const config = await readConfig(o.config, {
    seed: o.seed === undefined ? undefined : Number(o.seed),
    iterations: o.iterations === undefined ? undefined : Number(o.iterations),
    rewards: o.reward ? { mode: o.reward } : undefined,
    coach: o.coach ? { kind: o.coach } : undefined,
  });
  const out = o.out ?? path.join('runs', `${config.workflow.name}-${config.rewards.mode}-seed${config.seed}`);
  const store = new FileStore(out);
  const hasCheckpoint = existsSync(path.join(out, 'checkpoint')) || existsSync(path.join(out, 'checkpoint.old'));
  if (o.resume && !hasCheckpoint) throw new CliError(`--resume: ${out} holds no checkpoint; start without --resume`);
  if (!o.resume && hasCheckpoint) throw new CliError(`${out} already holds a run; pass --resume to continue it or --out to start another`);

  await startBackend(o.backend);
  const parts = await setUpRun(config, true);
  const dataset = train ? { train, eval: heldOut } : undefined;
  const threads = threadCount(o.threads);
  const workers = threads > 1 ? await TrainWorkers.start(threads - 1, parts.agentModel.model) : null;
  if (workers) process.stderr.write(`${threads} threads (this one + ${threads - 1} worker${threads > 2 ? 's' : ''}): the update's micro-batches shared, evaluations' sampled pass on a worker\n`);
  try {
    const trainer = await Trainer.create(config, { ...parts, store, dataset, updateLanes: workers, evalOffload: workers?.rollouts }, { resume: o.resume });
    await mkdir(out, { recursive: true });
    if (o.resume) {
      await store.truncateMetrics(trainer.iteration);
      process.stderr.write(`resumed ${out} at iteration ${trainer.iteration}\n`);
    } else {
      await writeFile(path.join(out, 'config.json'), JSON.stringify(config, null, 2) + '\n');
      await writeFile(path.join(out, 'trajectories.jsonl'), '');
    }

    // The untrained team, once per run (base model, no adapters: identical to fresh LoRA).
    let baseline: EvalResult | undefined;
    if (!o.resume) {
      process.stderr.write('evaluating the untrained team on the held-out set...\n');
      const base = new EngineAgents(parts.agentModel, new Map());
      baseline = await evaluateTeam(config, new Map(config.workflow.agents.map((a) => [a.id, base])), parts, {
        heldOut, offloadSampled: workers ? (tasks, t, seed) => workers.rollouts(config, new Map(), tasks, t, seed) : undefined,
        onOffloadError: (e) => process.stderr.write(`warning: the evaluation thread failed (${e.message}); its pass ran on the main thread\n`),
      });
      await store.appendMetrics({ iteration: 0, eval: baseline });
      process.stderr.write(`untrained: held-out accuracy greedy ${(baseline.greedy * 100).toFixed(1)}%, T=${config.evalTemperature} ${(baseline.sampled * 100).toFixed(1)}%\n`);
    }

    const started = Date.now();
    const startIteration = trainer.iteration;
    let phase: Phase = 'rollout';
    trainer.on((e) => {
      if (e.type === 'phase') phase = e.phase;
      // The redrawn bar only on a terminal; logs and CI get one line per iteration.
      if (process.stderr.isTTY && (e.type === 'phase' || e.type === 'iteration')) {
        const done = e.type === 'iteration' ? e.metrics.iteration : e.iteration - 1;
        const elapsed = (Date.now() - started) / 1000;
        const per = done > startIteration ? elapsed / (done - startIteration) : 0;
        const eta = per ? ` eta ${fmtSeconds(per * (config.iterations - done))}` : '';
        process.stderr.write(`\r${bar(done, config.iterations)} ${done}/${config.iterations} ${phase.padEnd(10)}${eta}   `);
      }
      if (e.type === 'iteration') {
        const m = e.metrics;
        const ev = m.eval ? ` | held-out greedy ${(m.eval.greedy * 100).toFixed(1)}% T=${config.evalTemperature} ${(m.eval.sampled * 100).toFixed(1)}%` : '';
        const scores = Object.entries(m.perAgent).map(([id, a]) => `${id} ${a.meanScore.toFixed(1)}`).join(' ');
        process.stderr.write(`${process.stderr.isTTY ? '\r' : ''}iter ${m.iteration}: train acc ${(m.trainAccuracy * 100).toFixed(0)}% reward ${m.meanReward.toFixed(2)} kl ${m.kl.toFixed(4)} scores ${scores} coach-fail ${m.coach.failures} level ${m.filters.level}${ev}\n`);
      }
      if (e.type === 'warning') process.stderr.write(`${process.stderr.isTTY ? '\n' : ''}warning (iteration ${e.iteration}): ${e.message}\n`);
      if (e.type === 'trajectories') {
        void appendFile(path.join(out, 'trajectories.jsonl'), trajectoryLines(e.iteration, e.trajectories));
      }
    });
    process.on('SIGINT', () => {
      process.stderr.write('\ninterrupted: stopping after this iteration (the last checkpoint is kept)\n');
      trainer.stop();
    });

    const metrics = await trainer.run();
    for (const [id, p] of trainer.policies) {
      for (const [name, bytes] of Object.entries(await exportPeft(p.adapter, config.agentModel))) {
        await store.writeFile(`adapters/${id}/${name}`, bytes);
      }
    }
    const evals = metrics.filter((m) => m.eval);
    const last = evals[evals.length - 1]?.eval;
    const summary = {
      out, iterations: trainer.iteration, reward: config.rewards.mode, seed: config.seed,
      baseline: baseline ?? null, final: last ?? null,
      seconds: Math.round((Date.now() - started) / 1000),
      rollouts: metrics.reduce((n, m) => n + m.trajectories, 0),
    };
    await store.writeFile('summary.json', JSON.stringify(summary, null, 2) + '\n');
    if (process.stderr.isTTY) process.stderr.write('\n');
    process.stdout.write(JSON.stringify(summary) + '\n');
    await parts.sandbox?.dispose();
    await parts.sql?.dispose();
    trainer.dispose();
  } finally {
    await workers?.close(); // worker threads would keep the process alive after an error
  }
}
