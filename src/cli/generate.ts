/**
 * `mappa generate --model DIR --prompt TEXT [--chat] [--system TEXT] [--max-tokens N]
 *  [--temperature T] [--top-k K] [--top-p P] [--seed S] [--stop STR] [--backend ...]`
 * streams the completion to stdout as it is sampled. With --chat the prompt is a user message
 * rendered through the model's chat template.
 */
import { generate } from '../core/engine/model/generate.ts';
import { stopTokenIds } from '../core/engine/model/load.ts';
import { createStreamDecoder } from '../core/engine/tokenizer/tokenizer.ts';
import { BACKEND_OPTION, CliError, openAdapter, modelSource, openModel, parseIntFlag, parseNumber, parseOptions, startBackend } from './common.ts';

const USAGE = `usage: mappa generate --model DIR --prompt TEXT [--chat] [--system TEXT] [--max-tokens N]
       [--temperature T] [--top-k K] [--top-p P] [--seed S] [--stop STR]... [--adapter DIR]
       [--backend cpu|wasm|webgpu]
Temperature 0 is greedy. Defaults come from the model's generation_config.json, else temperature 1.\n`;

export async function generateCommand(argv: string[]): Promise<void> {
  const o = parseOptions(argv, {
    model: { type: 'string' }, prompt: { type: 'string' }, chat: { type: 'boolean' }, system: { type: 'string' },
    'max-tokens': { type: 'string' }, temperature: { type: 'string' }, 'top-k': { type: 'string' },
    'top-p': { type: 'string' }, seed: { type: 'string' }, stop: { type: 'string', multiple: true },
    adapter: { type: 'string' }, ...BACKEND_OPTION,
  }, USAGE);
  if (o.prompt === undefined) throw new CliError(`--prompt is required\n\n${USAGE}`);
  // Every flag is checked before the backend starts or the model loads; unset ones fall back to the model's generation_config.json.
  const flags = {
    maxNewTokens: o['max-tokens'] === undefined ? undefined : parseIntFlag(o['max-tokens'], '--max-tokens', 1, 1 << 20),
    temperature: o.temperature === undefined ? undefined : parseNumber(o.temperature, '--temperature', 1, { min: 0 }),
    topK: o['top-k'] === undefined ? undefined : parseIntFlag(o['top-k'], '--top-k', 0),
    topP: o['top-p'] === undefined ? undefined : parseNumber(o['top-p'], '--top-p', 1, { min: Number.MIN_VALUE, max: 1 }),
    seed: o.seed === undefined ? 0 : parseIntFlag(o.seed, '--seed', 0),
  };
  const source = await modelSource(o.model); // a missing model is refused before the backend starts
  await startBackend(o.backend);
  const loaded = await openModel(source, { tokenizer: 'required' });
  const tok = loaded.tokenizer!;
  const adapter = await openAdapter(o.adapter, loaded);
  const messages = [...(o.system ? [{ role: 'system', content: o.system }] : []), { role: 'user', content: o.prompt }];
  const prompt = o.chat ? tok.encodeChat(messages, { addGenerationPrompt: true }) : tok.encode(o.prompt);
  const stream = createStreamDecoder(tok, { skipSpecialTokens: true });
  const g = loaded.generation;
  await generate(loaded.model, [prompt], {
    maxNewTokens: flags.maxNewTokens ?? g.maxNewTokens ?? 256,
    temperature: flags.temperature ?? g.temperature ?? 1,
    topK: flags.topK ?? g.topK ?? 0,
    topP: flags.topP ?? g.topP ?? 1,
    seed: flags.seed,
    adapter,
    eosTokenIds: stopTokenIds(loaded),
    stopStrings: o.stop,
    decode: o.stop ? (ids) => tok.decode(ids, { skipSpecialTokens: true }) : undefined,
    onToken: (_row, token) => process.stdout.write(stream.push(token)),
  });
  process.stdout.write(stream.flush() + '\n');
}
