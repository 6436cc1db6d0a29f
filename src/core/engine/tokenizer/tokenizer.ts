/**
 * Text <-> token ids for a Hugging Face model, plus its chat template and a streaming detokenizer.
 *
 * For: wrapping `@huggingface/tokenizers` (the BPE itself lives there) with what generation needs:
 * the special-token ids (bos, every id that ends a turn, pad), chat prompts, and incremental decode.
 * Not for: sentencepiece `tokenizer.model` files (only the fast-tokenizer `tokenizer.json`).
 *
 *   const tok = await TextTokenizer.fromSource(folderSource('models/qwen2.5-0.5b-instruct'));
 *   tok.encode('Hello world')                 // [9707, 1879]
 *   tok.eosTokenIds                           // [151645, 151643]  (<|im_end|>, <|endoftext|>)
 *   const ids = tok.encodeChat([{ role: 'user', content: 'Hi' }]);
 *   const out = createStreamDecoder(tok);
 *   for (const id of generated) process.stdout.write(out.push(id));
 *   process.stdout.write(out.flush());
 *
 * Special tokens come from, in order of precedence: special_tokens_map.json, tokenizer_config.json
 * (like transformers, the map file wins), then generation_config.json for ids they do not name.
 */

import { Tokenizer } from '@huggingface/tokenizers';
import type { ModelSource } from '../model/source.ts';
import {
  pickChatTemplate,
  renderChatTemplate,
  type ChatMessage,
  type ChatTemplateOptions,
  type TemplateSpecialTokens,
} from './chat.ts';


type Json = Record<string, unknown>;

/** The optional files next to tokenizer.json, for `fromJson`. */
export interface TokenizerExtras {
  specialTokensMap?: Json | null;
  generationConfig?: Json | null;
  /** A chat template that overrides tokenizer_config's (the content of `chat_template.jinja`). */
  chatTemplate?: string | null;
  /** Names the model in error messages, e.g. the folder or URL. */
  sourceName?: string;
}

export class TokenizerLoadError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TokenizerLoadError';
  }
}

/** A special token in tokenizer_config is a string, an AddedToken object `{content: ...}`, or null. */
function tokenText(value: unknown): string | null {
  if (typeof value === 'string') return value;
  if (typeof value === 'object' && value !== null && typeof (value as Json).content === 'string') {
    return (value as Json).content as string;
  }
  return null;
}

/** generation_config ids are a number or a list of numbers. */
function idList(value: unknown): number[] {
  if (typeof value === 'number') return [value];
  if (Array.isArray(value)) return value.filter((v): v is number => typeof v === 'number');
  return [];
}

export class TextTokenizer {
  /** Number of ids the tokenizer can produce (max id + 1). Can be below config.json's
   * `vocab_size`, which is padded (Qwen2.5-0.5B: 151665 here vs 151936 embedding rows). */
  readonly vocabSize: number;
  readonly bosTokenId: number | null;
  /** Every id that ends generation: eos_token of the tokenizer plus generation_config's eos ids. */
  readonly eosTokenIds: number[];
  readonly padTokenId: number | null;
  /** The named special tokens as text, as templates see them. */
  readonly specialTokens: TemplateSpecialTokens;
  readonly chatTemplate: string | null;
  readonly sourceName: string;

  private readonly inner: Tokenizer;
  private readonly specialIds: Set<number>;

  private constructor(tokenizerJson: Json, tokenizerConfig: Json, extra: TokenizerExtras) {
    this.sourceName = extra.sourceName ?? 'in-memory tokenizer';
    const named: Json = { ...tokenizerConfig, ...(extra.specialTokensMap ?? {}) };
    try {
      this.inner = new Tokenizer(tokenizerJson, named);
    } catch (e) {
      throw new TokenizerLoadError(`${this.sourceName}: tokenizer.json could not be loaded: ${(e as Error).message}`);
    }
    const gen = extra.generationConfig ?? {};
    const additional = Array.isArray(named.additional_special_tokens)
      ? named.additional_special_tokens.map(tokenText).filter((t): t is string => t !== null)
      : [];
    this.specialTokens = {
      bos_token: tokenText(named.bos_token),
      eos_token: tokenText(named.eos_token),
      unk_token: tokenText(named.unk_token),
      pad_token: tokenText(named.pad_token),
      additional_special_tokens: additional,
    };
    const idOf = (t: string | null | undefined) => (t == null ? null : (this.inner.token_to_id(t) ?? null));

    // A key present as null (Qwen2.5: "bos_token": null) means "none"; only an absent key
    // falls back to generation_config.
    this.bosTokenId = 'bos_token' in named ? idOf(this.specialTokens.bos_token) : (idList(gen.bos_token_id)[0] ?? null);
    this.padTokenId = idOf(this.specialTokens.pad_token) ?? idList(gen.pad_token_id)[0] ?? null;
    const eos = [idOf(this.specialTokens.eos_token), ...idList(gen.eos_token_id)];
    this.eosTokenIds = [...new Set(eos.filter((id): id is number => id !== null))];

    this.vocabSize = this.inner.model?.vocab.length ?? 0;
    this.specialIds = new Set([...this.inner.get_added_tokens_decoder().values()].filter((t) => t.special).map((t) => t.id));
    for (const t of [this.specialTokens.bos_token, this.specialTokens.eos_token, this.specialTokens.unk_token,
      this.specialTokens.pad_token, ...additional]) {
      const id = idOf(t);
      if (id !== null) this.specialIds.add(id);
    }
    for (const id of this.eosTokenIds) this.specialIds.add(id);

    this.chatTemplate = extra.chatTemplate ?? pickChatTemplate(tokenizerConfig.chat_template);
  }

  /**
   * Load from a model folder / URL. Reads tokenizer.json and tokenizer_config.json, and when
   * present special_tokens_map.json, generation_config.json and chat_template.jinja.
   */
  static async fromSource(source: ModelSource): Promise<TextTokenizer> {
    if (!(await source.has('tokenizer.json'))) {
      const hasSentencepiece = await source.has('tokenizer.model').catch(() => false);
      throw new TokenizerLoadError(
        `${source.name} has no tokenizer.json. The model folder needs the Hugging Face fast-tokenizer ` +
          `file tokenizer.json (download it from the model's hub page next to config.json)` +
          (hasSentencepiece ? '; a sentencepiece tokenizer.model alone is not supported.' : '.'),
      );
    }
    const optional = async <T>(file: string, read: (f: string) => Promise<T>): Promise<T | null> =>
      (await source.has(file)) ? read(file) : null;
    const [tokenizerJson, tokenizerConfig, specialTokensMap, generationConfig, chatTemplate] = await Promise.all([
      source.readJson<Json>('tokenizer.json'),
      optional('tokenizer_config.json', (f) => source.readJson<Json>(f)),
      optional('special_tokens_map.json', (f) => source.readJson<Json>(f)),
      optional('generation_config.json', (f) => source.readJson<Json>(f)),
      optional('chat_template.jinja', (f) => source.readText(f)),
    ]);
    return TextTokenizer.fromJson(tokenizerJson, tokenizerConfig ?? {}, {
      specialTokensMap,
      generationConfig,
      chatTemplate,
      sourceName: source.name,
    });
  }

  /** Build from parsed files already in memory (tests, files the user picked). */
  static fromJson(tokenizerJson: unknown, tokenizerConfig: unknown, extra: TokenizerExtras = {}): TextTokenizer {
    const where = extra.sourceName ?? 'in-memory tokenizer';
    if (typeof tokenizerJson !== 'object' || tokenizerJson === null || !('model' in tokenizerJson)) {
      throw new TokenizerLoadError(`${where}: tokenizer.json must be an object with a "model" field`);
    }
    const config = typeof tokenizerConfig === 'object' && tokenizerConfig !== null ? (tokenizerConfig as Json) : {};
    // The library requires these keys to exist; older files omit the ones they do not use.
    const full: Json = { normalizer: null, pre_tokenizer: null, post_processor: null, decoder: null,
      added_tokens: [], ...(tokenizerJson as Json) };
    return new TextTokenizer(full, config, extra);
  }

  /** Text -> ids. `addSpecialTokens` (default true) lets the post-processor add e.g. a bos id. */
  encode(text: string, opts: { addSpecialTokens?: boolean } = {}): number[] {
    return this.inner.encode(text, { add_special_tokens: opts.addSpecialTokens ?? true }).ids;
  }

  /**
   * Ids -> text. `cleanUpSpaces` defaults to tokenizer_config's `clean_up_tokenization_spaces`
   * (HF's " ." -> "." fix-up); the stream decoder turns it off so earlier text never changes.
   */
  decode(ids: number[], opts: { skipSpecialTokens?: boolean; cleanUpSpaces?: boolean } = {}): string {
    if (ids.length === 0) return '';
    return this.inner.decode(ids, {
      skip_special_tokens: opts.skipSpecialTokens ?? false,
      ...(opts.cleanUpSpaces === undefined ? {} : { clean_up_tokenization_spaces: opts.cleanUpSpaces }),
    });
  }

  tokenToId(token: string): number | null {
    return this.inner.token_to_id(token) ?? null;
  }

  idToToken(id: number): string | null {
    return this.inner.id_to_token(id) ?? null;
  }

  /** True for added tokens marked special and for every named special token (bos/eos/pad/...). */
  isSpecial(id: number): boolean {
    return this.specialIds.has(id);
  }

  /** Render the chat template (see chat.ts for the variables passed). */
  applyChatTemplate(messages: ChatMessage[], opts: ChatTemplateOptions = {}): string {
    return renderChatTemplate(this.chatTemplate, messages, this.specialTokens, opts, this.sourceName);
  }

  /**
   * The chat prompt as ids, without doubling bos. Rule: when the rendered text already starts with
   * the bos token (Llama 3: `<|begin_of_text|>` comes from the template), encode with
   * addSpecialTokens=false, the same ids HF `apply_chat_template(tokenize=True)` gives; otherwise
   * encode normally (for Qwen2.5 / SmolLM2 the post-processor adds nothing, so again the same ids).
   */
  encodeChat(messages: ChatMessage[], opts: ChatTemplateOptions = {}): number[] {
    const key = JSON.stringify([messages, opts]);
    const known = this.chats.get(key);
    if (known) return known.slice();
    const text = this.applyChatTemplate(messages, opts);
    const bos = this.specialTokens.bos_token;
    const ids = this.encode(text, { addSpecialTokens: !(bos && text.startsWith(bos)) });
    this.chats.set(key, ids.slice());
    if (this.chats.size > CHAT_MEMO) this.chats.delete(this.chats.keys().next().value!);
    return ids;
  }

  /**
   * Conversations encoded before, by their JSON: rendering and tokenizing are pure, and a relay team
   * meets the same 90 input cells in every agent's prompt and its judge's, iteration after iteration.
   */
  private readonly chats = new Map<string, number[]>();
}

/** Conversations whose ids a tokenizer remembers (the oldest go first). */
const CHAT_MEMO = 32768;

export interface StreamDecoder {
  /** Add one generated id; returns the text it completed ('' while a character is still partial). */
  push(id: number): string;
  /** End of generation: returns whatever is left (even a partial character, as U+FFFD), then resets. */
  flush(): string;
}

/**
 * Incremental detokenizer that only emits complete UTF-8 text.
 *
 * One character can span several tokens ("é" = bytes C3 A9 may be two byte-level tokens, an emoji
 * up to four), and decoding a lone C3 gives U+FFFD. So each push decodes a small window of recent
 * ids twice, with and without the pending ones, and emits the difference only when it does not end
 * in U+FFFD. The window starts at the previous emission so decoders that treat the first token
 * specially (Metaspace's leading space) see the same start both times; the work per token is O(1).
 *
 *   push(<C3 token>) -> ''     push(<A9 token>) -> 'é'
 *
 * Special tokens (e.g. <|im_end|>) are skipped unless `skipSpecialTokens: false`.
 */
export function createStreamDecoder(tokenizer: TextTokenizer, opts: { skipSpecialTokens?: boolean } = {}): StreamDecoder {
  const decodeOpts = { skipSpecialTokens: opts.skipSpecialTokens ?? true, cleanUpSpaces: false };
  let ids: number[] = [];
  let prefixStart = 0; // window start: the tokens before readStart are context already emitted
  let readStart = 0; // first id whose text has not been emitted yet

  const pending = (): { text: string; prefixLength: number } => {
    const prefix = tokenizer.decode(ids.slice(prefixStart, readStart), decodeOpts);
    const text = tokenizer.decode(ids.slice(prefixStart), decodeOpts);
    return { text, prefixLength: prefix.length };
  };

  return {
    push(id: number): string {
      ids.push(id);
      const { text, prefixLength } = pending();
      if (text.length <= prefixLength || text.endsWith('\uFFFD')) return '';
      prefixStart = readStart;
      readStart = ids.length;
      // Drop ids no window will read again, so memory stays bounded on long generations.
      if (prefixStart > 0) {
        ids = ids.slice(prefixStart);
        readStart -= prefixStart;
        prefixStart = 0;
      }
      return text.slice(prefixLength);
    },
    flush(): string {
      const { text, prefixLength } = pending();
      ids = [];
      prefixStart = readStart = 0;
      return text.slice(prefixLength);
    },
  };
}
