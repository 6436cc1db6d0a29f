/**
 * `mappa eval [--config FILE] [--adapters DIR] [--tasks N] [--trajectories FILE]` prints the team's
 * held-out accuracy as JSON (greedy and at the evaluation temperature). DIR holds one PEFT folder per
 * agent (DIR/<agent>/adapter_config.json ...), as `mappa train` writes under <out>/adapters.
 * --trajectories writes what the team did on every held-out task, in trajectories.jsonl's format
 * plus "eval": "greedy" or "sampled", to read why a task failed.
 * Each accuracy comes with its 95 % Wilson interval (core/stats/intervals.ts): in the JSON as
 * "greedyInterval" / "sampledInterval" ([low, high]), and on stderr as
 * "greedy 25.0 % [19.5, 31.4] on 200 problems".
 */
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { LoraAdapter } from '../core/engine/lora/adapter.ts';
import { importPeft } from '../core/engine/lora/peft.ts';
import { trajectoryLines } from '../core/loop/rollout.ts';
import { evaluateTeam } from '../core/loop/eval-queue.ts';
import { computeFor } from '../core/compute/lanes.ts';
import { folderSource } from '../core/engine/model/sources.ts';
import { accuracyInterval, formatPercent } from '../core/stats/intervals.ts';
import { adapterValues } from '../core/engine/lora/adapter-values.ts';
import { BACKEND_OPTION, CliError, parseIntFlag, parseOptions, startBackend, threadCount, threadsFlag } from './common.ts';
import { startWorkerLanes } from './train-workers.ts';
import { readConfig, readDataset, setUpTeam } from './run-setup.ts';
import { disposeTools } from '../core/tools/runners.ts';

const USAGE = 'usage: mappa eval [--config FILE] [--adapters DIR] [--tasks N] [--dataset FILE] [--trajectories FILE] [--backend cpu|wasm|webgpu]\n' +
  '       [--threads N]   (2 or more on wasm, the default on a multi-core machine: the sampled pass runs on a worker; same result)\n';

export async function evalCommand(argv: string[]): Promise<void> {
  const o = parseOptions(argv, {
    config: { type: 'string' }, adapters: { type: 'string' }, tasks: { type: 'string' },
    dataset: { type: 'string' }, trajectories: { type: 'string' }, threads: { type: 'string' }, ...BACKEND_OPTION,
  }, USAGE);
  threadsFlag(o.threads); // a malformed --threads is refused before the backend starts
  const heldOut = await readDataset(o.dataset, '--dataset');
  const config = await readConfig(o.config, { evalTasks: o.tasks === undefined ? undefined : parseIntFlag(o.tasks, '--tasks', 1, 200) });
  const found = o.adapters ? adapterFolders(o.adapters, config.workflow.agents.map((a) => a.id)) : new Map<string, string | null>();
  await startBackend(o.backend);
  const parts = await setUpTeam(config);
  const adapters = new Map<string, LoraAdapter | null>();
  for (const [id, dir] of found) adapters.set(id, dir ? await importPeft(folderSource(dir), parts.agentModel.config, id) : null);
  const worker = threadCount(o.threads) > 1 ? await startWorkerLanes(1, parts.agentModel.model) : null;
  let chunk;
  try {
    const compute = computeFor(parts, worker, (m) => process.stderr.write(`warning: ${m}\n`));
    chunk = await evaluateTeam(config, parts.team, compute, { heldOut, adapters: new Map([...adapters].map(([id, a]) => [id, a ? adapterValues(a) : null])) });
  } finally {
    await worker?.close();
  }
  const { result } = chunk;
  if (o.trajectories) {
    await writeFile(o.trajectories, trajectoryLines(0, chunk.greedy, { eval: 'greedy' }) + trajectoryLines(0, chunk.sampled, { eval: 'sampled' }));
  }
  const greedy = accuracyInterval(result.greedy, result.tasks, result.perTask?.greedy);
  const sampled = accuracyInterval(result.sampled, result.tasks, result.perTask?.sampled);
  process.stderr.write(`greedy ${formatPercent(greedy)} on ${result.tasks} problems\n` +
    `sampled (T=${config.evalTemperature}) ${formatPercent(sampled)} on ${result.tasks} problems\n`);
  process.stdout.write(JSON.stringify({
    ...result, greedyInterval: [greedy.low, greedy.high], sampledInterval: [sampled.low, sampled.high], temperature: config.evalTemperature,
    adapters: Object.fromEntries(config.workflow.agents.map((a) => [a.id, adapters.get(a.id) ? path.join(o.adapters!, a.id) : null])),
  }) + '\n');
  await disposeTools(parts.tools);
}

/**
 * Each agent's PEFT folder under DIR (DIR/<agent>/adapter_config.json), or null where it has none;
 * a DIR that holds none at all is refused, since evaluating the base model under an adapters flag
 * would answer a question nobody asked.
 */
function adapterFolders(dir: string, agents: string[]): Map<string, string | null> {
  if (!existsSync(dir)) throw new CliError(`--adapters: "${dir}" does not exist`);
  const found = new Map(agents.map((id) => [id, existsSync(path.join(dir, id, 'adapter_config.json')) ? path.join(dir, id) : null]));
  const missing = agents.filter((id) => !found.get(id));
  if (missing.length === agents.length) {
    const hint = existsSync(path.join(dir, 'adapters'))
      ? `; did you mean ${path.join(dir, 'adapters')}?` : ' (mappa train writes them under <out>/adapters)';
    throw new CliError(`--adapters: "${dir}" holds no adapter for any agent of this team ` +
      `(expected ${agents.map((id) => `${id}/adapter_config.json`).join(', ')})${hint}`);
  }
  if (missing.length) {
    process.stderr.write(`--adapters: no adapter for ${missing.join(', ')} in "${dir}"; ${missing.length > 1 ? 'they use' : 'it uses'} the base model\n`);
  }
  return found;
}
