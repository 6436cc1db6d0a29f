/**
 * TextTokenizer against real published files (/work/shared/hf, skipped when absent) and against
 * tiny hand-made tokenizers whose ids can be worked out by hand.
 *
 * Reference values: Qwen2.5's ids are the published ones (special tokens from its tokenizer.json,
 * "Hello world" -> [9707, 1879], ChatML headers <|im_start|>system/user/assistant\n ->
 * [151644, 8948|872|77091, 198]); chat prompts are the exact strings the templates produce in HF,
 * worked out by reading each template.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import type { ModelSource } from '../../../src/core/engine/model/source.ts';
import { ModelSourceError } from '../../../src/core/engine/model/source.ts';
import { TextTokenizer, TokenizerLoadError, createStreamDecoder } from '../../../src/core/engine/tokenizer/tokenizer.ts';
import { ChatTemplateError } from '../../../src/core/engine/tokenizer/chat.ts';
import { renderChatTemplate } from '../../../src/core/engine/tokenizer/chat.ts';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const qwenDir = path.resolve(repoRoot, '../shared/hf/Qwen--Qwen2.5-0.5B-Instruct');
const llamaDir = path.resolve(repoRoot, '../shared/hf/meta-llama--Llama-3.2-1B-Instruct');
const haveQwen = fs.existsSync(path.join(qwenDir, 'tokenizer.json'));
const haveLlama = fs.existsSync(path.join(llamaDir, 'tokenizer_config.json'));
if (!haveQwen) console.warn(`[tokenizer.test] skipping Qwen2.5 tests: ${qwenDir}/tokenizer.json not found (../shared absent)`);
if (!haveLlama) console.warn(`[tokenizer.test] skipping Llama 3.2 template tests: ${llamaDir}/tokenizer_config.json not found`);

/** A ModelSource over in-memory files (text). */
function memorySource(name: string, files: Record<string, string>): ModelSource {
  const read = async (file: string) => {
    if (!(file in files)) throw new ModelSourceError(`${name}: no ${file}`, 'missing');
    return files[file]!;
  };
  return {
    name,
    has: async (file) => file in files,
    readText: read,
    readJson: async <T>(file: string) => JSON.parse(await read(file)) as T,
    async *stream(file) {
      yield new TextEncoder().encode(await read(file));
    },
  };
}

/** A ModelSource over a real folder, plus extra in-memory files. */
function dirSource(dir: string, extra: Record<string, string> = {}): ModelSource {
  const files = Object.fromEntries(fs.readdirSync(dir).map((f) => [f, fs.readFileSync(path.join(dir, f), 'utf8')]));
  return memorySource(dir, { ...files, ...extra });
}

/**
 * A byte-level BPE small enough to work by hand. "é" is UTF-8 C3 A9, which GPT-2's byte->char map
 * writes as "Ã" "©"; with no merge between them "é" encodes to two ids, 3 and 4.
 *   "hi é" -> pre-tokens "hi", "Ġé"="ĠÃ©" -> ids [5 (merge h+i), 2, 3, 4]
 */
function tinyByteLevel(opts: { bosPostProcessor?: boolean } = {}) {
  return {
    version: '1.0',
    added_tokens: [
      { id: 6, content: '<|begin_of_text|>', special: true, normalized: false, lstrip: false, rstrip: false, single_word: false },
      { id: 7, content: '<|eot_id|>', special: true, normalized: false, lstrip: false, rstrip: false, single_word: false },
    ],
    normalizer: null,
    pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
    post_processor: opts.bosPostProcessor
      ? {
          type: 'TemplateProcessing',
          single: [{ SpecialToken: { id: '<|begin_of_text|>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
          pair: [],
          special_tokens: { '<|begin_of_text|>': { id: '<|begin_of_text|>', ids: [6], tokens: ['<|begin_of_text|>'] } },
        }
      : null,
    decoder: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
    model: {
      type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: '', end_of_word_suffix: '',
      fuse_unk: false, byte_fallback: false,
      vocab: { h: 0, i: 1, 'Ġ': 2, 'Ã': 3, '©': 4, hi: 5 },
      merges: ['h i'],
    },
  };
}

/**
 * A sentencepiece-style BPE with byte fallback (the Llama 2 / Mistral layout): "▁" marks spaces,
 * a character missing from the vocab becomes its UTF-8 bytes <0xC3><0xA9>, and the decoder strips
 * the leading space it adds to the first token.   " hi hié" -> [▁hi ▁hi <0xC3> <0xA9>] = [5, 5, 3, 4]
 */
function tinyByteFallback() {
  return {
    added_tokens: [{ id: 0, content: '<unk>', special: true, normalized: false }],
    normalizer: { type: 'Sequence', normalizers: [{ type: 'Prepend', prepend: '▁' }, { type: 'Replace', pattern: { String: ' ' }, content: '▁' }] },
    pre_tokenizer: null,
    post_processor: null,
    decoder: {
      type: 'Sequence',
      decoders: [
        { type: 'Replace', pattern: { String: '▁' }, content: ' ' },
        { type: 'ByteFallback' },
        { type: 'Fuse' },
        { type: 'Strip', content: ' ', start: 1, stop: 0 },
      ],
    },
    model: {
      type: 'BPE', unk_token: '<unk>', fuse_unk: true, byte_fallback: true,
      vocab: { '<unk>': 0, '▁': 1, h: 2, '<0xC3>': 3, '<0xA9>': 4, '▁hi': 5, i: 6, '▁h': 7 },
      merges: ['▁ h', '▁h i'],
    },
  };
}

describe.skipIf(!haveQwen)('Qwen2.5-0.5B-Instruct (real tokenizer.json)', () => {
  let tok: TextTokenizer;
  beforeAll(async () => {
    // shared/ lacks Qwen2.5's generation_config.json; these are its published values.
    const generationConfig = { bos_token_id: 151643, eos_token_id: [151645, 151643], pad_token_id: 151643 };
    tok = await TextTokenizer.fromSource(dirSource(qwenDir, { 'generation_config.json': JSON.stringify(generationConfig) }));
  });

  it('has the published special-token ids', () => {
    expect(tok.tokenToId('<|endoftext|>')).toBe(151643);
    expect(tok.tokenToId('<|im_start|>')).toBe(151644);
    expect(tok.tokenToId('<|im_end|>')).toBe(151645);
    expect(tok.idToToken(151645)).toBe('<|im_end|>');
    expect(tok.vocabSize).toBe(151665); // 151643 BPE tokens + 22 added tokens
    // "bos_token": null in tokenizer_config.json wins over generation_config's bos_token_id.
    expect(tok.bosTokenId).toBeNull();
    expect(tok.padTokenId).toBe(151643);
    // eos_token <|im_end|> from tokenizer_config, united with generation_config's eos_token_id.
    expect(tok.eosTokenIds).toEqual([151645, 151643]);
    expect(tok.isSpecial(151644)).toBe(true);
    expect(tok.isSpecial(9707)).toBe(false);
    // <tool_call> is an added token but not a special one.
    const toolCall = tok.tokenToId('<tool_call>');
    expect(toolCall).not.toBeNull();
    expect(tok.isSpecial(toolCall!)).toBe(false);
  });

  it('encodes known strings to the published ids', () => {
    expect(tok.encode('Hello world')).toEqual([9707, 1879]);
    expect(tok.encode('<|im_start|>system\n')).toEqual([151644, 8948, 198]);
    expect(tok.encode('<|im_start|>user\n')).toEqual([151644, 872, 198]);
    expect(tok.encode('<|im_start|>assistant\n')).toEqual([151644, 77091, 198]);
    expect(tok.encode('')).toEqual([]);
    expect(tok.decode([])).toBe('');
  });

  it.each([
    ['unicode', 'Größe, naïve café — 日本語のテキスト, русский, العربية, हिन्दी'],
    ['emoji', 'ok 🤖👍🏽 👨‍👩‍👧‍👦 🇯🇵 ✨'],
    ['code', 'def f(x: int) -> int:\n\treturn x ** 2  # square\n\nconsole.log(`${a}`);\n'],
    ['math', '∀ε>0 ∃δ: |x−a|<δ ⇒ |f(x)−f(a)|<ε;  x² + y² = z², ∑ᵢ aᵢ ≈ π'],
    ['whitespace', '  leading\n\n\ntrailing   \r\n'],
  ])('decode(encode(x)) == x for %s text', (_name, text) => {
    expect(tok.decode(tok.encode(text))).toBe(text);
  });

  it('decode can skip special tokens', () => {
    const ids = tok.encode('<|im_start|>user\nHi<|im_end|>');
    expect(tok.decode(ids)).toBe('<|im_start|>user\nHi<|im_end|>');
    expect(tok.decode(ids, { skipSpecialTokens: true })).toBe('user\nHi');
  });

  it('renders the ChatML prompt HF produces, default system message', () => {
    expect(tok.applyChatTemplate([{ role: 'user', content: 'Hi' }], { addGenerationPrompt: true })).toBe(
      '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n' +
        '<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n',
    );
  });

  it('uses a given system message and renders earlier turns', () => {
    const text = tok.applyChatTemplate(
      [
        { role: 'system', content: 'Be terse.' },
        { role: 'user', content: '2+2?' },
        { role: 'assistant', content: '4' },
        { role: 'user', content: 'And 3+3?' },
      ],
      { addGenerationPrompt: false },
    );
    expect(text).toBe(
      '<|im_start|>system\nBe terse.<|im_end|>\n<|im_start|>user\n2+2?<|im_end|>\n' +
        '<|im_start|>assistant\n4<|im_end|>\n<|im_start|>user\nAnd 3+3?<|im_end|>\n',
    );
  });

  it('encodeChat gives the ChatML ids (no bos for Qwen)', () => {
    const ids = tok.encodeChat([{ role: 'user', content: 'Hi' }]);
    expect(ids.slice(0, 3)).toEqual([151644, 8948, 198]);
    expect(ids.slice(-3)).toEqual([151644, 77091, 198]);
    expect(ids.filter((id) => id === 151645)).toHaveLength(2); // two <|im_end|>: system, user
  });

  it('encodeChat remembers a conversation it has encoded: the same ids, a copy the caller may change', () => {
    const chat = [{ role: 'user', content: 'Again?' }];
    const first = tok.encodeChat(chat);
    first.push(-1);
    const again = tok.encodeChat(chat);
    expect(again).toEqual(first.slice(0, -1));
    expect(again).toEqual(tok.encode(tok.applyChatTemplate(chat, {}), { addSpecialTokens: true })); // what a fresh encoding gives
    expect(tok.encodeChat(chat, { addGenerationPrompt: false })).not.toEqual(again); // the options are part of the key
  });

  it('streams text with no broken characters (" 🤖" spans several byte-level tokens)', () => {
    const robot = tok.encode(' 🤖');
    expect(robot.length).toBeGreaterThan(1);
    const s = createStreamDecoder(tok);
    const out = robot.map((id) => s.push(id));
    expect(out.at(-1)).toBe(' 🤖');
    expect(out.slice(0, -1).every((c) => c === '')).toBe(true);
    expect(s.flush()).toBe('');

    const text = 'Größe 🤖 日本語 x² — done.<|im_end|>';
    const chunks = tok.encode(text).map((id) => s.push(id));
    chunks.push(s.flush());
    for (const c of chunks) expect(c).not.toContain('\uFFFD');
    expect(chunks.join('')).toBe('Größe 🤖 日本語 x² — done.'); // <|im_end|> skipped by default
  });
});

describe.skipIf(!haveLlama)('Llama-3.2-1B-Instruct chat template (real tokenizer_config.json)', () => {
  const config = haveLlama ? JSON.parse(fs.readFileSync(path.join(llamaDir, 'tokenizer_config.json'), 'utf8')) : {};
  const header = (role: string) => `<|start_header_id|>${role}<|end_header_id|>\n\n`;
  const systemBlock = (date: string, system: string) =>
    `<|begin_of_text|>${header('system')}Cutting Knowledge Date: December 2023\nToday Date: ${date}\n\n${system}<|eot_id|>`;

  it('renders the system header with a fixed date, then the turns', () => {
    // The tokenizer.json of Llama 3.2 is not in shared/, so the tiny one stands in: the template
    // only needs the config's special-token strings.
    const tok = TextTokenizer.fromJson(tinyByteLevel(), config, { sourceName: 'llama-3.2' });
    const text = tok.applyChatTemplate(
      [{ role: 'system', content: '  You are terse. ' }, { role: 'user', content: 'Hi\n' }],
      { addGenerationPrompt: true, extra: { date_string: '26 Jul 2024' } },
    );
    // System and message contents are `|trim`med by the template.
    expect(text).toBe(`${systemBlock('26 Jul 2024', 'You are terse.')}${header('user')}Hi<|eot_id|>${header('assistant')}`);
  });

  it('without a system message the system block is empty; multi-turn', () => {
    const text = renderChatTemplate(
      config.chat_template,
      [{ role: 'user', content: 'Hi' }, { role: 'assistant', content: 'Hello!' }, { role: 'user', content: 'Bye' }],
      { bos_token: '<|begin_of_text|>', eos_token: '<|eot_id|>' },
      { addGenerationPrompt: false, extra: { date_string: '26 Jul 2024' } },
    );
    expect(text).toBe(
      `${systemBlock('26 Jul 2024', '')}${header('user')}Hi<|eot_id|>${header('assistant')}Hello!<|eot_id|>${header('user')}Bye<|eot_id|>`,
    );
  });

  it("without date_string it writes today's date via strftime_now", () => {
    const text = renderChatTemplate(config.chat_template, [{ role: 'user', content: 'Hi' }], { bos_token: '<|begin_of_text|>', eos_token: '<|eot_id|>' });
    expect(text).toMatch(/Today Date: \d{2} [A-Z][a-z]{2} \d{4}\n\n<\|eot_id\|>/);
  });

  it('encodeChat does not double bos when the template writes it', () => {
    const tok = TextTokenizer.fromJson(tinyByteLevel({ bosPostProcessor: true }), {
      bos_token: '<|begin_of_text|>', eos_token: '<|eot_id|>',
      chat_template: '{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}',
    });
    expect(tok.encode('hi')).toEqual([6, 5]); // the post-processor adds bos to plain text
    expect(tok.encodeChat([{ role: 'user', content: 'hi' }])).toEqual([6, 5]); // one bos, not two
  });
});

describe('tiny hand-made tokenizers', () => {
  it('encodes and decodes by hand-worked ids; "é" is two byte tokens', () => {
    const tok = TextTokenizer.fromJson(tinyByteLevel(), { eos_token: '<|eot_id|>' });
    expect(tok.encode('hi é')).toEqual([5, 2, 3, 4]);
    expect(tok.decode([5, 2, 3, 4])).toBe('hi é');
    expect(tok.decode([3])).toBe('\uFFFD'); // a lone lead byte is not text
    expect(tok.eosTokenIds).toEqual([7]);
    expect(tok.bosTokenId).toBeNull();
    expect(tok.vocabSize).toBe(8);
    expect(tok.isSpecial(6)).toBe(true); // special added token, though no config names it
  });

  it('stream decoder holds a split multi-byte char until it is complete (byte-level)', () => {
    const tok = TextTokenizer.fromJson(tinyByteLevel(), { eos_token: '<|eot_id|>' });
    const s = createStreamDecoder(tok);
    expect([5, 2, 3, 4, 7].map((id) => s.push(id))).toEqual(['hi', ' ', '', 'é', '']);
    expect(s.flush()).toBe('');
    // A stream cut inside a character: flush hands back the replacement char.
    expect(s.push(3)).toBe('');
    expect(s.flush()).toBe('\uFFFD');
    const keep = createStreamDecoder(tok, { skipSpecialTokens: false });
    expect([5, 7].map((id) => keep.push(id))).toEqual(['hi', '<|eot_id|>']);
  });

  it('stream decoder with sentencepiece byte-fallback tokens and a stripped leading space', () => {
    const tok = TextTokenizer.fromJson(tinyByteFallback(), {});
    expect(tok.encode('hi hié')).toEqual([5, 5, 3, 4]);
    expect(tok.decode([5, 5, 3, 4])).toBe('hi hié');
    const s = createStreamDecoder(tok);
    expect([5, 5, 3, 4].map((id) => s.push(id))).toEqual(['hi', ' hi', '', 'é']);
  });

  it('missing tokenizer.json: the error names the source and the file it needs', async () => {
    const src = memorySource('models/my-model', { 'config.json': '{}', 'tokenizer.model': 'x' });
    const err = await TextTokenizer.fromSource(src).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TokenizerLoadError);
    expect((err as Error).message).toMatch(/models\/my-model has no tokenizer\.json/);
    expect((err as Error).message).toMatch(/sentencepiece tokenizer\.model alone is not supported/);
  });

  it('fromSource reads the optional files when present', async () => {
    const src = memorySource('mem', {
      'tokenizer.json': JSON.stringify(tinyByteLevel()),
      'tokenizer_config.json': JSON.stringify({ bos_token: { content: '<|begin_of_text|>', __type: 'AddedToken' }, eos_token: null }),
      'generation_config.json': JSON.stringify({ eos_token_id: [7] }),
      'chat_template.jinja': '[{{ messages[0].content }}]',
    });
    const tok = await TextTokenizer.fromSource(src);
    expect(tok.bosTokenId).toBe(6);
    expect(tok.eosTokenIds).toEqual([7]);
    expect(tok.applyChatTemplate([{ role: 'user', content: 'hi' }])).toBe('[hi]');
  });

  it('a model without chat_template: the error says --chat needs one', () => {
    const tok = TextTokenizer.fromJson(tinyByteLevel(), {}, { sourceName: 'models/base' });
    expect(() => tok.applyChatTemplate([{ role: 'user', content: 'hi' }])).toThrow(ChatTemplateError);
    expect(() => tok.applyChatTemplate([{ role: 'user', content: 'hi' }])).toThrow(
      /models\/base has no chat template: --chat needs a "chat_template" in tokenizer_config\.json/,
    );
  });

  it('a broken tokenizer.json names the source', () => {
    expect(() => TextTokenizer.fromJson({ nope: 1 }, {}, { sourceName: 'models/x' })).toThrow(/models\/x: tokenizer\.json must be an object with a "model" field/);
  });
});
