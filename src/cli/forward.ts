/**
 * `mappa forward --model DIR --ids 1,2,3` prints {"logits": [[...vocab floats...], ...one row per position]}
 * and nothing else on stdout. Needs no tokenizer (the parity fixtures have none).
 */
import { BACKEND_OPTION, CliError, openAdapter, modelSource, openModel, parseIdList, parseOptions, startBackend } from './common.ts';

const USAGE = `usage: mappa forward --model DIR --ids 1,2,3 [--adapter DIR] [--backend cpu|wasm|webgpu]\n`;

export async function forwardCommand(argv: string[]): Promise<void> {
  const o = parseOptions(argv, { model: { type: 'string' }, ids: { type: 'string' }, adapter: { type: 'string' }, ...BACKEND_OPTION }, USAGE);
  if (!o.ids) throw new CliError(`--ids is required\n\n${USAGE}`);
  const ids = parseIdList(o.ids, '--ids');
  const source = await modelSource(o.model); // a missing model is refused before the backend starts
  await startBackend(o.backend);
  const loaded = await openModel(source, { tokenizer: 'skip' });
  const adapter = await openAdapter(o.adapter, loaded);
  const { logits } = loaded.model.forward([ids], { adapter });
  const rows = ((await logits.array()) as number[][][])[0];
  logits.dispose();
  process.stdout.write(JSON.stringify({ logits: rows }) + '\n');
}
