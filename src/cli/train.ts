/**
 * `mappa train [--config FILE] [--reward process|outcome|mixed|counterfactual|groups] [--seed S] [--out DIR] [--resume]`
 * runs the MAPPA loop (with no config: the embedded default, tiny models, math team), with a
 * progress bar on stderr. The run folder gets metrics.jsonl, trajectories.jsonl, checkpoint/,
 * adapters/<agent>/ (PEFT) and summary.json (with the models used, by sha256: core/loop/models-used.ts);
 * the summary is also printed on stdout. The run itself is core/loop/session.ts's RunSession (the page's
 * worker drives the same); this file parses flags and prints.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { RunSession } from '../core/loop/session.ts';
import { type RunParts } from '../core/loop/train.ts';
import type { EvalResult } from '../core/loop/records.ts';
import type { TrainConfig } from '../core/loop/config.ts';
import { runSize } from '../core/measure/run-size.ts';
import { pct, printer, sampledPct, summaryLines } from './train-output.ts';
import { BACKEND_OPTION, CliError, parseIntFlag, parseOptions, startBackend, threadCount, threadsFlag } from './common.ts';
import { FileStore } from '../platform/node/file-store.ts';
import { acquireRunLock, RunLockedError } from '../platform/node/run-lock.ts';
import { startWorkerLanes } from './train-workers.ts';
import { computeFor } from '../core/compute/lanes.ts';
import { checkResumable, modelsUsed, readConfig, readDataset, setUpRun } from './run-setup.ts';
import { Cleanup } from './cleanup.ts';
import { disposeTools } from '../core/tools/runners.ts';
import { templateName } from '../core/coach/coaches.ts';
import { checkTierPerson, TIER_OPTIONS, TIERS_USAGE, tierPerson, tiersFlags, writeCorrections } from './tier-flags.ts';
import type { RunUsed } from '../core/loop/models-used.ts';
import { teamOf } from '../core/domains/index.ts';

const USAGE = `usage: mappa train [--config FILE] [--reward process|outcome|mixed|counterfactual|groups] [--seed S] [--iterations N]
       [--coach model|rule] [--dataset FILE] [--eval-dataset FILE] [--out DIR] [--resume] [--backend cpu|wasm|webgpu]
       [--threads N] [--yes] [--json] [--accept-changed-models] [--tiers SHARE ...]
With no --config it trains the embedded default (models/agent + models/judge, math chain) on generated
problems; --dataset trains on a JSONL file of {"problem", "answer"} lines (GSM8K/MATH/AIME style).
--threads: threads on the wasm backend (default: every core; 1 = this thread only): the update's
micro-batches are shared, and each evaluation's sampled pass runs on a worker; the results are the
same with any number.
--yes: start a run that is estimated to take very long (it is refused without it).
--accept-changed-models: --resume although a model or the coach template changed since the checkpoint.
${TIERS_USAGE}--json: print the whole summary (every held-out problem's result) as one JSON line on stdout; it is
always written to <out>/summary.json.
One process writes a run folder at a time (<out>/run.lock); Ctrl-C stops after a checkpoint.\n`;

/** Everything the flags and files say, checked before anything is started or written. */
async function readRequest(argv: string[]) {
  const o = parseOptions(argv, {
    config: { type: 'string' }, reward: { type: 'string' }, seed: { type: 'string' }, iterations: { type: 'string' },
    coach: { type: 'string' }, out: { type: 'string' }, resume: { type: 'boolean' }, threads: { type: 'string' },
    dataset: { type: 'string' }, 'eval-dataset': { type: 'string' }, yes: { type: 'boolean' }, json: { type: 'boolean' },
    'accept-changed-models': { type: 'boolean' }, ...TIER_OPTIONS, ...BACKEND_OPTION,
  }, USAGE);
  threadsFlag(o.threads); // a malformed --threads is refused before the backend starts
  const train = await readDataset(o.dataset, '--dataset');
  const heldOut = await readDataset(o['eval-dataset'], '--eval-dataset');
  const config = checkTierPerson(o['tier-person'], await readConfig(o.config, {
    seed: o.seed === undefined ? undefined : parseIntFlag(o.seed, '--seed', 0),
    iterations: o.iterations === undefined ? undefined : parseIntFlag(o.iterations, '--iterations', 1),
    rewards: o.reward ? { mode: o.reward } : undefined,
    coach: o.coach || tiersFlags(o) ? { ...(o.coach ? { kind: o.coach } : {}), ...(tiersFlags(o) ? { tiers: tiersFlags(o) } : {}) } : undefined,
  }));
  const size = runSize(config);
  if (size.large && !o.yes) throw new CliError(`${size.message}: pass --yes to start it`);
  const out = o.out ?? path.join('runs', `${config.workflow.name}-${config.rewards.mode}-seed${config.seed}`);
  const hasCheckpoint = existsSync(path.join(out, 'checkpoint')) || existsSync(path.join(out, 'checkpoint.old'));
  if (o.resume && !hasCheckpoint) throw new CliError(`--resume: ${out} holds no checkpoint; start without --resume`);
  if (!o.resume && hasCheckpoint) throw new CliError(`${out} already holds a run; pass --resume to continue it or --out to start another`);
  const used = await modelsUsed(config); // hashed, and a --resume checked against its checkpoint, before any work
  return { o, train, heldOut, config, out, used: o.resume ? await checkResumable(out, used, Boolean(o['accept-changed-models'])) : used };
}

export async function trainCommand(argv: string[]): Promise<void> {
  const { o, train, heldOut, config, out, used } = await readRequest(argv);
  const cleanup = new Cleanup();
  try {
    // The lock before the first write: a second `mappa train` on this folder is refused here.
    let lock;
    try {
      lock = acquireRunLock(out, { command: `mappa train ${argv.join(' ')}`.trim(), warn: (m) => process.stderr.write(`warning: ${m}\n`) });
    } catch (e) {
      throw e instanceof RunLockedError ? new CliError(e.message) : e;
    }
    cleanup.add(() => lock.release());
    const controller = new AbortController();
    cleanup.onSignals(() => {
      process.stderr.write('\ninterrupted: stopping before this iteration\'s update, or after it if it has begun (a checkpoint is kept); ' +
        'press Ctrl-C again to stop at once\n');
      controller.abort();
    });
    await startBackend(o.backend);
    const parts = await setUpRun(config, { person: tierPerson(o['tier-person'], out, cleanup) });
    cleanup.add(() => disposeTools(parts.tools));
    const threads = threadCount(o.threads);
    const lanes = threads > 1 ? await startWorkerLanes(threads - 1, parts.agentModel.model) : null;
    if (lanes) {
      cleanup.add(() => lanes.close()); // worker threads would keep the process alive after an error
      const workers = `${threads - 1} worker${threads > 2 ? 's' : ''}`;
      process.stderr.write(`${threads} threads (this one + ${workers}): the update's micro-batches shared, evaluations' sampled pass on a worker\n`);
    }
    const compute = computeFor(parts, lanes, (m) => process.stderr.write(`warning: ${m}\n`));
    await trainRun(config, { ...parts, compute, dataset: train ? { train, eval: heldOut } : undefined }, new FileStore(out), controller.signal,
      cleanup, Boolean(o.json), out, { used, acceptChangedModels: Boolean(o['accept-changed-models']) });
  } finally {
    await cleanup.run();
  }
}

async function trainRun(config: TrainConfig, parts: RunParts, store: FileStore, signal: AbortSignal, cleanup: Cleanup, json: boolean,
  out: string, models: { used: RunUsed; acceptChangedModels: boolean }): Promise<void> {
  let baseline: EvalResult | undefined;
  let started = Date.now();
  const session = await RunSession.open(config, parts, {
    store, ...models,
    emit: (e) => {
      if (e.type === 'warning') process.stderr.write(`warning: ${e.message}\n`);
      if (e.type === 'eval' && e.iteration === 0 && e.result.of === undefined) {
        baseline = e.result;
        started = Date.now();
        process.stderr.write(`untrained: held-out accuracy greedy ${pct(e.result.greedy)}${sampledPct(config.evalTemperature, e.result.sampled, ', ')}\n`);
      }
    },
  });
  cleanup.add(() => session.dispose());
  if (session.history.resumed) process.stderr.write(`resumed ${out} at iteration ${session.trainer.iteration}\n`);
  else await store.writeFile('config.json', JSON.stringify(config, null, 2) + '\n');
  baseline ??= session.history.evals.find((e) => e.iteration === 0)?.result;
  if (session.queue.pending.includes(0)) process.stderr.write('evaluating the untrained team on the held-out set...\n');
  session.trainer.on(printer(config, session.trainer.iteration));
  const ended = await session.run({ signal });
  await session.saveIfBehind();
  await writeCorrections(parts.coach, store);
  for (const [id, files] of Object.entries(await session.adapterFiles())) {
    for (const [name, bytes] of Object.entries(files)) await store.writeFile(`adapters/${id}/${name}`, bytes);
  }
  const metrics = session.trainer.metrics;
  const summary = {
    out, iterations: session.trainer.iteration, reward: config.rewards.mode, seed: config.seed, coach: parts.coach.name,
    ...(config.coach.kind === 'model' ? { coachTemplate: templateName(config.coach, teamOf(config.workflow)) } : {}),
    used: models.used, // what took part, by content (config.json keeps what was asked)
    baseline: baseline ?? null, final: metrics.filter((m) => m.eval).at(-1)?.eval ?? null,
    seconds: Math.round((Date.now() - started) / 1000),
    rollouts: metrics.reduce((n, m) => n + m.trajectories, 0),
  };
  await store.writeFile('summary.json', JSON.stringify(summary, null, 2) + '\n');
  if (process.stderr.isTTY) process.stderr.write('\n');
  if (json) process.stdout.write(JSON.stringify(summary) + '\n');
  else process.stdout.write(summaryLines(summary, config, ended === 'paused'));
}

