/**
 * `mappa export --target marti [DIR] [--config FILE] [--out DIR]` writes the experiment of a run
 * folder (its config.json), of a config file, or (with neither) of the embedded default as a config
 * for the MAPPA authors' reference trainer, with its dataset and a README (interop/marti.ts).
 *
 * For: users who outgrow the browser. Not for: converting trained adapters (MARTI starts from the
 * base model) or running MARTI.
 * Example: mappa export --target marti runs/math-chain-process-seed0
 *          -> runs/math-chain-process-seed0/marti/{mappa_mathchat.yaml, train.jsonl, heldout.jsonl, README.md}
 */
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { exportMarti, MartiExportError } from '../interop/marti.ts';
import { CliError } from './common.ts';
import { readConfig } from './run-setup.ts';

const USAGE = `usage: mappa export --target marti [DIR] [--config FILE] [--out DIR]
  DIR            a run folder written by "mappa train" (its config.json is exported)
  --config FILE  a config file instead (with neither: the embedded default)
  --out DIR      output folder (default: DIR/marti, or marti-export)
Targets: marti (the reference trainer of the MAPPA paper: MARTI on Ray + vLLM + DeepSpeed).\n`;

/** The base model as MARTI should load it: a local folder made absolute, a hub URL as "org/name". */
export function martiPretrain(agentModel: string, cwd = process.cwd()): string {
  const hub = /^https?:\/\/(?:www\.)?huggingface\.co\/([\w.-]+\/[\w.-]+)/.exec(agentModel);
  if (hub) return hub[1];
  const local = path.resolve(cwd, agentModel);
  return existsSync(local) ? local : agentModel;
}

export async function exportCommand(argv: string[]): Promise<void> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(USAGE);
    return;
  }
  let parsed;
  try {
    parsed = parseArgs({
      args: argv, allowPositionals: true, strict: true,
      options: { target: { type: 'string' }, config: { type: 'string' }, out: { type: 'string' } },
    });
  } catch (err) {
    throw new CliError(`${(err as Error).message}\n\n${USAGE}`);
  }
  const o = parsed.values;
  if (o.target !== 'marti') throw new CliError(`--target must be "marti" (the only trainer supported so far), got ${o.target === undefined ? 'nothing' : `"${o.target}"`}\n\n${USAGE}`);
  if (parsed.positionals.length > 1) throw new CliError(`one run folder at most, got ${parsed.positionals.length}: ${parsed.positionals.join(' ')}`);
  const dir = parsed.positionals[0];
  if (dir && o.config) throw new CliError('give a run folder or --config FILE, not both');

  let configFile = o.config;
  if (dir) {
    if (!existsSync(dir)) throw new CliError(`"${dir}" does not exist; pass a run folder written by "mappa train --out DIR"`);
    configFile = path.join(dir, 'config.json');
    if (!existsSync(configFile)) throw new CliError(`"${dir}" has no config.json, so it is not a run folder; pass one written by "mappa train", or --config FILE`);
  }
  const config = await readConfig(configFile, {});
  const out = o.out ?? (dir ? path.join(dir, 'marti') : 'marti-export');
  let files: Record<string, string>;
  try {
    ({ files } = exportMarti(config, { source: dir ?? configFile ?? 'the embedded default config', pretrain: martiPretrain(config.agentModel) }));
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
