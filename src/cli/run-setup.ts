/**
 * What `train` and `eval` share: the config from a file plus flags, the agent model, the coach and
 * the tools, each with a clear error when something is missing; and what `train --resume` checks
 * before any work (the checkpoint readable, made with the same models).
 */
import { readFile } from 'node:fs/promises';
import { type TrainConfig } from '../core/loop/config.ts';
import { buildCoach } from '../core/coach/coaches.ts';
import type { Person } from '../core/coach/person-tier.ts';
import { toolsFor } from '../core/tools/runners.ts';
import type { TeamParts } from '../core/loop/rollout.ts';
import { createSandbox } from '../core/tools/code-sandbox.ts';
import { createSqlTool } from '../core/tools/sql.ts';
import { teamOf, resolveTrainConfig } from '../core/domains/index.ts';
import { formatDatasetErrors, loadJsonlDatasetFile } from '../core/tasks/dataset.ts';
import type { RolloutTask } from '../core/loop/trajectory.ts';
import type { RunParts } from '../core/loop/train.ts';
import { LocalCompute } from '../core/compute/local.ts';
import { CliError, openModel, sourceFor } from './common.ts';
import { judgeSpec } from '../core/coach/coaches.ts';
import { parseUsed, usedBy, usedChange, type RunUsed } from '../core/loop/models-used.ts';
import { RunFileError } from '../core/loop/checkpoint.ts';
import { FileStore } from '../platform/node/file-store.ts';
import path from 'node:path';

/** A JSONL dataset (problem/answer) for training or evaluation; malformed lines reported, never silent. */
export async function readDataset(file: string | undefined, flag: string): Promise<RolloutTask[] | undefined> {
  if (!file) return undefined;
  let parsed;
  try {
    parsed = await loadJsonlDatasetFile(file);
  } catch (e) {
    const message = (e as Error).message;
    throw new CliError(message.includes('is not a text file') ? `${flag}: ${message}` : `${flag}: cannot read "${file}" (${message})`);
  }
  if (parsed.errors.length) process.stderr.write(formatDatasetErrors(parsed.errors, file) + '\n');
  if (parsed.tasks.length === 0) throw new CliError(`${flag}: "${file}" holds no usable problem/answer lines`);
  process.stderr.write(`${flag}: ${parsed.tasks.length} problems from ${file}${parsed.errors.length ? ` (${parsed.errors.length} lines skipped)` : ''}\n`);
  return parsed.tasks;
}

export async function readConfig(file: string | undefined, overrides: Record<string, unknown>): Promise<TrainConfig> {
  let raw: Record<string, unknown> = {};
  if (file) {
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch {
      throw new CliError(`--config: cannot read "${file}"; pass a JSON file such as configs/data-tiny.json`);
    }
    try {
      raw = JSON.parse(text);
    } catch (e) {
      throw new CliError(`--config: "${file}" is not valid JSON (${(e as Error).message})`);
    }
  }
  // Flags override the file, key by key.
  const merged: Record<string, unknown> = { ...raw };
  for (const [k, v] of Object.entries(overrides)) {
    if (v === undefined) continue;
    if (v && typeof v === 'object' && !Array.isArray(v)) merged[k] = { ...((raw[k] as object) ?? {}), ...(v as object) };
    else merged[k] = v;
  }
  try {
    return resolveTrainConfig(merged);
  } catch (e) {
    throw new CliError(`${file ?? 'config'}: ${(e as Error).message}`);
  }
}

/** The team's model and tools, loaded: what playing it needs (`mappa eval`, a worker thread's passes). */
export async function setUpTeam(config: Pick<TrainConfig, 'agentModel' | 'workflow'>): Promise<TeamParts> {
  const agentModel = await openModel(config.agentModel, { tokenizer: 'required' });
  const team = teamOf(config.workflow);
  return { team, agentModel, tools: toolsFor(config.workflow, { code: () => createSandbox(), sql: () => createSqlTool({ functions: team.sqlFunctions }) }) };
}

/** The run's models, coach and tools, loaded, on this thread alone: what a RunSession opens with (RunParts; the caller may share its compute out). */
export async function setUpRun(config: TrainConfig, o: { person?: Person } = {}): Promise<RunParts> {
  const coach = await buildCoach(config.coach, (spec) => openModel(spec, { tokenizer: 'required' }), teamOf(config.workflow), { seed: config.seed, ...o });
  const team = await setUpTeam(config);
  return { ...team, coach, compute: LocalCompute.forTeam(team) };
}

/** The models the run uses (the agents', the judge's) and the judge's template, hashed: before the backend starts. */
export async function modelsUsed(config: TrainConfig): Promise<RunUsed> {
  const team = teamOf(config.workflow);
  const judge = config.coach.kind === 'model' ? await sourceFor(judgeSpec(config.coach, team)) : null;
  return usedBy(config, team, await sourceFor(config.agentModel), () => judge);
}

/** A checkpoint that cannot be read, or was made with other models, is refused in one line before any work. */
export async function checkResumable(out: string, used: RunUsed, accept: boolean): Promise<RunUsed> {
  const store = new FileStore(out);
  let saved;
  try {
    await store.check();
    saved = await store.load();
  } catch (e) {
    throw e instanceof RunFileError ? new CliError(e.message) : e;
  }
  const change = saved && !accept ? usedChange(parseUsed(saved['used.json'], path.join(out, 'checkpoint', 'used.json')), used) : null;
  if (change) {
    throw new CliError(`--resume: ${change} since ${out}'s checkpoint; put it back, or pass --accept-changed-models to go on with it`);
  }
  return used;
}
