/**
 * `mappa export --target marti [DIR] [--config FILE] [--bench DIR] [--out DIR]` writes the experiment
 * of a run folder (its config.json), of a config file, or (with neither) of the embedded default as a
 * config for the MAPPA authors' reference trainer, with its datasets and a README (interop/marti.ts).
 *
 * For: users who outgrow the browser. Not for: running MARTI, or merging adapters (the README gives
 * the `mappa merge` line for each agent whose adapter the run folder has).
 * From the files here it also takes what the export's README and models need: the base model's positions
 * and stop settings (config.json, generation_config.json, its tokenizer), and the run's tokens per action
 * (trajectories.jsonl; without a run folder, the shipped default's measured figures when the team is it).
 * Example: mappa export --target marti runs/math-chain-process-seed0 --bench ../shared/datasets
 *          -> runs/math-chain-process-seed0/marti/{mappa_mathchat.yaml, mappa_workflow.py, mappa_train.py,
 *             generation_config.json, train.jsonl, heldout.jsonl, aime24.jsonl, amc23.jsonl, code_interpreter.json, README.md}
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { type TrainConfig } from '../core/loop/config.ts';
import { resolveTrainConfig } from '../core/domains/index.ts';
import { folderSource } from '../core/engine/model/sources.ts';
import { TextTokenizer } from '../core/engine/tokenizer/tokenizer.ts';
import { loadJsonlDatasetFile } from '../core/tasks/dataset.ts';
import { exportMarti, MartiExportError, type MartiBench, type MartiStops } from '../interop/marti.ts';
import { measureTrajectories, SHIPPED_DEFAULT_MEASURE, type TokenMeasure } from '../interop/marti-measure.ts';
import { CliError } from './common.ts';
import { readConfig } from './run-setup.ts';

const USAGE = `usage: mappa export --target marti [DIR] [--config FILE] [--bench DIR] [--gpus-per-agent N] [--out DIR]
  DIR            a run folder written by "mappa train" (its config.json is exported, its adapters/ named)
  --config FILE  a config file instead (with neither: the embedded default)
  --bench DIR    a folder with aime24.jsonl / amc23.jsonl (e.g. ../shared/datasets): extra evaluation sets
  --gpus-per-agent N  GPUs each agent's actor, reference and vLLM engines share (default 1; a power of two;
                 refused where their sample filter would drop samples)
  --out DIR      output folder (default: DIR/marti, or marti-export)
Targets: marti (the reference trainer of the MAPPA paper: MARTI on Ray + vLLM + DeepSpeed).\n`;

/** The evaluation sets --bench looks for, by file name without .jsonl. */
export const BENCH_SETS = ['aime24', 'amc23'];

/** A path as the export shows it: relative to `cwd`, never absolute. Example: ('/w/runs/a', '/w') -> 'runs/a'. */
export function shownPath(p: string, cwd = process.cwd()): string {
  return path.relative(cwd, path.resolve(cwd, p)) || '.';
}

/** Ids of the agents whose trained adapter (PEFT) the run folder has. */
export function runAdapters(dir: string, config: TrainConfig): string[] {
  return config.workflow.agents.map((a) => a.id).filter((id) => existsSync(path.join(dir, 'adapters', id, 'adapter_config.json')));
}

/** The local base model's positions (config.json max_position_embeddings), or undefined. */
export function baseContextLength(agentModel: string): number | undefined {
  const file = path.join(agentModel, 'config.json');
  if (!existsSync(file)) return undefined;
  try {
    const n = (JSON.parse(readFileSync(file, 'utf8')) as { max_position_embeddings?: unknown }).max_position_embeddings;
    return typeof n === 'number' && n > 0 ? n : undefined;
  } catch {
    return undefined; // not our business here: the trainer reads it and says what is wrong
  }
}

/**
 * The local base model's stop settings: its generation_config.json and its tokenizer's eos token (the
 * one id their truncation mask keeps), or undefined when the model is not a folder here.
 */
export async function baseStops(agentModel: string): Promise<MartiStops | undefined> {
  if (!existsSync(path.join(agentModel, 'tokenizer.json'))) return undefined;
  const tok = await TextTokenizer.fromSource(folderSource(agentModel));
  const eosToken = tok.specialTokens.eos_token;
  const eosTokenId = eosToken == null ? null : tok.tokenToId(eosToken);
  if (eosToken == null || eosTokenId == null) {
    throw new CliError(`${agentModel}: its tokenizer names no eos_token; their trainer needs one to end replies and to mask truncated ones`);
  }
  const file = path.join(agentModel, 'generation_config.json');
  const generationConfig = existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>) : {};
  return { generationConfig, eosToken, eosTokenId };
}

/**
 * Tokens per action for the README's cost: the run folder's trajectories.jsonl (prompt tokens counted
 * with the base model's chat template when it is here), else the shipped default's figures when the
 * config's team and model are the default's, else undefined (the README then uses the token budgets).
 */
export async function runMeasure(dir: string | undefined, config: TrainConfig): Promise<TokenMeasure | undefined> {
  const file = dir ? path.join(dir, 'trajectories.jsonl') : '';
  if (file && existsSync(file)) {
    const tok = existsSync(path.join(config.agentModel, 'tokenizer.json')) ? await TextTokenizer.fromSource(folderSource(config.agentModel)) : null;
    try {
      return measureTrajectories(readFileSync(file, 'utf8'), shownPath(file), tok ? (m) => tok.encodeChat(m, { addGenerationPrompt: true }).length : undefined);
    } catch (e) {
      throw new CliError(`${(e as Error).message}; remove or fix it to export without a measurement`);
    }
  }
  const shipped = resolveTrainConfig({});
  const same = JSON.stringify(config.workflow) === JSON.stringify(shipped.workflow) && config.agentModel === shipped.agentModel;
  return same ? SHIPPED_DEFAULT_MEASURE : undefined;
}

/** The sets of BENCH_SETS found in `dir`, as MARTI records (AMC's number answers become text). */
export async function readBench(dir: string): Promise<MartiBench[]> {
  const out: MartiBench[] = [];
  for (const name of BENCH_SETS) {
    const file = path.join(dir, `${name}.jsonl`);
    if (!existsSync(file)) continue;
    const { tasks, errors } = await loadJsonlDatasetFile(file, { source: name });
    if (errors.length) throw new CliError(`--bench: ${file}:${errors[0].line}: ${errors[0].message}`);
    out.push({ name, records: tasks.map((t) => ({ prompt: t.problem, answer: t.answer, metadata: { id: t.id } })) });
  }
  if (!out.length) throw new CliError(`--bench: "${dir}" has none of ${BENCH_SETS.map((n) => `${n}.jsonl`).join(', ')}`);
  return out;
}

function parse(argv: string[]) {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv, allowPositionals: true, strict: true,
      options: {
        target: { type: 'string' }, config: { type: 'string' }, out: { type: 'string' }, bench: { type: 'string' }, 'gpus-per-agent': { type: 'string' },
      },
    });
  } catch (err) {
    throw new CliError(`${(err as Error).message}\n\n${USAGE}`);
  }
  const o = parsed.values;
  if (o.target !== 'marti') {
    throw new CliError(`--target must be "marti" (the only trainer supported so far), got ${o.target === undefined ? 'nothing' : `"${o.target}"`}\n\n${USAGE}`);
  }
  if (parsed.positionals.length > 1) throw new CliError(`one run folder at most, got ${parsed.positionals.length}: ${parsed.positionals.join(' ')}`);
  const dir = parsed.positionals[0];
  if (dir && o.config) throw new CliError('give a run folder or --config FILE, not both');
  if (dir && !existsSync(dir)) throw new CliError(`"${dir}" does not exist; pass a run folder written by "mappa train --out DIR"`);
  if (dir && !existsSync(path.join(dir, 'config.json'))) {
    throw new CliError(`"${dir}" has no config.json, so it is not a run folder; pass one written by "mappa train", or --config FILE`);
  }
  const g = o['gpus-per-agent'];
  if (g !== undefined && !/^[1-9]\d*$/.test(g)) throw new CliError(`--gpus-per-agent must be a whole number of GPUs (1, 2, 4, ...), got "${g}"`);
  return {
    dir, configFile: dir ? path.join(dir, 'config.json') : o.config, out: o.out ?? (dir ? path.join(dir, 'marti') : 'marti-export'), bench: o.bench,
    gpusPerAgent: g === undefined ? undefined : Number(g),
  };
}

export async function exportCommand(argv: string[]): Promise<void> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(USAGE);
    return;
  }
  const { dir, configFile, out, bench, gpusPerAgent } = parse(argv);
  const config = await readConfig(configFile, {});
  let files: Record<string, string>;
  try {
    ({ files } = exportMarti(config, {
      source: dir ? shownPath(dir) : configFile ? shownPath(configFile) : 'the embedded default config',
      adapters: dir ? runAdapters(dir, config) : [],
      bench: bench ? await readBench(bench) : [],
      contextLength: baseContextLength(config.agentModel),
      measure: await runMeasure(dir, config),
      stops: await baseStops(config.agentModel),
      gpusPerAgent,
    }));
  } catch (e) {
    if (e instanceof MartiExportError) throw new CliError(`${configFile ?? 'config'}: ${e.message}`);
    throw e;
  }
  await mkdir(out, { recursive: true });
  for (const [name, text] of Object.entries(files)) {
    await writeFile(path.join(out, name), text);
    process.stderr.write(`wrote ${path.join(out, name)}\n`);
  }
  process.stdout.write(`${out}\n`);
}
