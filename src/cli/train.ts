/**
 * `mappa train [--config FILE] [--reward process|outcome|mixed] [--seed S] [--out DIR] [--resume]`
 * runs the MAPPA loop (with no config: the embedded default, tiny models, math team), with a
 * progress bar on stderr. The run folder gets metrics.jsonl, trajectories.jsonl, checkpoint/,
 * adapters/<agent>/ (PEFT) and summary.json; the summary is also printed on stdout. The run itself is
 * core/loop/session.ts's RunSession (the page's worker drives the same); this file parses flags and prints.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { RunSession } from '../core/loop/session.ts';
import type { EvalResult, Phase, TrainEvent } from '../core/loop/train.ts';
import type { TrainConfig } from '../core/loop/config.ts';
import { BACKEND_OPTION, CliError, parseOptions, startBackend, threadCount } from './common.ts';
import { FileStore } from '../platform/node/file-store.ts';
import { TrainWorkers } from './train-workers.ts';
import { readConfig, readDataset, setUpRun } from './run-setup.ts';
import { disposeTools } from '../core/tools/runners.ts';

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
  const threads = threadCount(o.threads);
  const workers = threads > 1 ? await TrainWorkers.start(threads - 1, parts.agentModel.model) : null;
  if (workers) process.stderr.write(`${threads} threads (this one + ${threads - 1} worker${threads > 2 ? 's' : ''}): the update's micro-batches shared, evaluations' sampled pass on a worker\n`);
  try {
    let baseline: EvalResult | undefined;
    let started = Date.now();
    const session = await RunSession.open(config, { ...parts, dataset: train ? { train, eval: heldOut } : undefined }, {
      store, lanes: workers, evaluations: 'inline',
      emit: (e) => {
        if (e.type === 'warning') process.stderr.write(`warning: ${e.message}\n`);
        if (e.type === 'eval' && e.iteration === 0 && e.result.of === undefined) {
          baseline = e.result;
          started = Date.now();
          process.stderr.write(`untrained: held-out accuracy greedy ${pct(e.result.greedy)}, T=${config.evalTemperature} ${pct(e.result.sampled)}\n`);
        }
      },
    });
    if (session.history.resumed) process.stderr.write(`resumed ${out} at iteration ${session.trainer.iteration}\n`);
    else await store.writeFile('config.json', JSON.stringify(config, null, 2) + '\n');
    if (session.queue.pending.includes(0)) process.stderr.write('evaluating the untrained team on the held-out set...\n');
    session.trainer.on(printer(config, session.trainer.iteration));
    const controller = new AbortController();
    process.on('SIGINT', () => {
      process.stderr.write('\ninterrupted: stopping before this iteration\'s update, or after it if it has begun (a checkpoint is kept)\n');
      controller.abort();
    });

    await session.run({ signal: controller.signal });
    await session.saveIfBehind();
    for (const [id, files] of Object.entries(await session.adapterFiles())) {
      for (const [name, bytes] of Object.entries(files)) await store.writeFile(`adapters/${id}/${name}`, bytes);
    }
    const metrics = session.trainer.metrics;
    const summary = {
      out, iterations: session.trainer.iteration, reward: config.rewards.mode, seed: config.seed,
      baseline: baseline ?? null, final: metrics.filter((m) => m.eval).at(-1)?.eval ?? null,
      seconds: Math.round((Date.now() - started) / 1000),
      rollouts: metrics.reduce((n, m) => n + m.trajectories, 0),
    };
    await store.writeFile('summary.json', JSON.stringify(summary, null, 2) + '\n');
    if (process.stderr.isTTY) process.stderr.write('\n');
    process.stdout.write(JSON.stringify(summary) + '\n');
    await disposeTools(parts.tools);
    session.dispose();
  } finally {
    await workers?.close(); // worker threads would keep the process alive after an error
  }
}

const pct = (x: number) => `${(x * 100).toFixed(1)}%`;

/** Progress on stderr: a redrawn bar on a terminal, one line per iteration for logs and CI. */
function printer(config: TrainConfig, startIteration: number): (e: TrainEvent) => void {
  const started = Date.now();
  let phase: Phase = 'rollout';
  const tty = process.stderr.isTTY;
  return (e) => {
    if (e.type === 'phase') phase = e.phase;
    if (tty && (e.type === 'phase' || e.type === 'iteration')) {
      const done = e.type === 'iteration' ? e.metrics.iteration : e.iteration - 1;
      const per = done > startIteration ? (Date.now() - started) / 1000 / (done - startIteration) : 0;
      const eta = per ? ` eta ${fmtSeconds(per * (config.iterations - done))}` : '';
      process.stderr.write(`\r${bar(done, config.iterations)} ${done}/${config.iterations} ${phase.padEnd(10)}${eta}   `);
    }
    if (e.type === 'iteration') {
      const m = e.metrics;
      const ev = m.eval ? ` | held-out greedy ${pct(m.eval.greedy)} T=${config.evalTemperature} ${pct(m.eval.sampled)}` : '';
      const scores = Object.entries(m.perAgent).map(([id, a]) => `${id} ${a.meanScore.toFixed(1)}`).join(' ');
      process.stderr.write(`${tty ? '\r' : ''}iter ${m.iteration}: train acc ${(m.trainAccuracy * 100).toFixed(0)}% reward ${m.meanReward.toFixed(2)} kl ${m.kl.toFixed(4)} scores ${scores} coach-fail ${m.coach.failures} level ${m.filters.level}${ev}\n`);
    }
    if (e.type === 'warning') process.stderr.write(`${tty ? '\n' : ''}warning (iteration ${e.iteration}): ${e.message}\n`);
  };
}
