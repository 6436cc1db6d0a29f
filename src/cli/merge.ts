/**
 * `mappa merge --model DIR --adapter DIR --out DIR` folds a PEFT LoRA adapter into the base weights
 * (W + B A * alpha / r) and writes a complete Hugging Face folder: config.json, model.safetensors and
 * the tokenizer/generation files the base had.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { exportWeights, mergeAdapter } from '../core/engine/lora/peft.ts';
import { BACKEND_OPTION, CliError, openAdapter, modelSource, openModel, parseOptions, startBackend } from './common.ts';

const USAGE = 'usage: mappa merge --model DIR --adapter DIR --out DIR [--backend cpu|wasm|webgpu]\n';
const CARRIED = ['tokenizer.json', 'tokenizer_config.json', 'generation_config.json', 'special_tokens_map.json', 'chat_template.jinja'];

export async function mergeCommand(argv: string[]): Promise<void> {
  const o = parseOptions(argv, { model: { type: 'string' }, adapter: { type: 'string' }, out: { type: 'string' }, ...BACKEND_OPTION }, USAGE);
  if (!o.adapter || !o.out) throw new CliError(`--adapter and --out are required\n\n${USAGE}`);
  const source = await modelSource(o.model); // a missing model is refused before the backend starts
  await startBackend(o.backend);
  const loaded = await openModel(source, { tokenizer: 'skip' });
  const adapter = (await openAdapter(o.adapter, loaded))!;
  const merged = mergeAdapter(loaded.model, adapter);
  await mkdir(o.out, { recursive: true });
  await writeFile(path.join(o.out, 'model.safetensors'), await exportWeights(loaded.config, merged));
  await writeFile(path.join(o.out, 'config.json'), await loaded.source.readText('config.json'));
  for (const f of CARRIED) if (await loaded.source.has(f)) await writeFile(path.join(o.out, f), await loaded.source.readText(f));
  for (const t of merged.values()) t.dispose();
  process.stderr.write(`merged ${o.adapter} into ${o.model}: ${o.out}\n`);
}
