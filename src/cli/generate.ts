/**
 * `mappa generate --model DIR --prompt TEXT [--chat] [--system TEXT] [--max-tokens N]
 *  [--temperature T] [--top-k K] [--top-p P] [--seed S] [--stop STR] [--backend ...]`
 * streams the completion to stdout as it is sampled. With --chat the prompt is a user message
 * rendered through the model's chat template.
 */
import { generate } from '../core/engine/model/generate.ts';
import { stopTokenIds } from '../core/engine/model/load.ts';
import { createStreamDecoder } from '../core/engine/tokenizer/tokenizer.ts';
import { BACKEND_OPTION, CliError, openAdapter, openModel, parseNumber, parseOptions, startBackend } from './common.ts';

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
  await startBackend(o.backend);
  const loaded = await openModel(o.model, { tokenizer: 'required' });
  const tok = loaded.tokenizer!;
  const adapter = await openAdapter(o.adapter, loaded);
  const messages = [...(o.system ? [{ role: 'system', content: o.system }] : []), { role: 'user', content: o.prompt }];
  const prompt = o.chat ? tok.encodeChat(messages, { addGenerationPrompt: true }) : tok.encode(o.prompt);
  const stream = createStreamDecoder(tok, { skipSpecialTokens: true });
  const g = loaded.generation;
  await generate(loaded.model, [prompt], {
    maxNewTokens: parseNumber(o['max-tokens'], '--max-tokens', g.maxNewTokens ?? 256),
    temperature: parseNumber(o.temperature, '--temperature', g.temperature ?? 1),
    topK: parseNumber(o['top-k'], '--top-k', g.topK ?? 0),
    topP: parseNumber(o['top-p'], '--top-p', g.topP ?? 1),
    seed: parseNumber(o.seed, '--seed', 0),
    adapter,
    eosTokenIds: stopTokenIds(loaded),
    stopStrings: o.stop,
    decode: o.stop ? (ids) => tok.decode(ids, { skipSpecialTokens: true }) : undefined,
    onToken: (_row, token) => process.stdout.write(stream.push(token)),
  });
  process.stdout.write(stream.flush() + '\n');
}
