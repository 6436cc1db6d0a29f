/**
 * A byte-level BPE trainer that writes a Hugging Face `tokenizer.json` (plus the ChatML chat
 * template for `tokenizer_config.json`), for the project's own tiny models.
 *
 * For: training a small vocabulary (e.g. 1024) on the synthetic corpus; any text round-trips
 * exactly (every byte has a token), digits are always single tokens (a `Digits` pre-tokenizer with
 * `individual_digits` splits them before the GPT-2 byte-level regex), so arithmetic stays learnable.
 * Not for: encoding (the @huggingface/tokenizers package does that from the written file) or large
 * corpora (the trainer recounts pairs after each merge: fine for a few thousand distinct words).
 *
 * Algorithm (the classic one of Sennrich et al.): split text into pre-tokens exactly as the
 * tokenizer will, map each byte to its printable stand-in (GPT-2's bytes_to_unicode), count words,
 * then repeatedly merge the most frequent adjacent pair (ties: the pair whose joined string sorts
 * first) until the vocabulary is full. Special tokens never take part in merges.
 *
 * Example:
 *   const bpe = trainBpe(['aaab aaab'], { vocabSize: 3 + 256 + 2 });
 *   bpe.merges  // [['a', 'a'], ['aa', 'a']]  ("aa" occurs 4 times, then "aa"+"a" twice)
 */

export const SPECIAL_TOKENS = ['<|endoftext|>', '<|im_start|>', '<|im_end|>'] as const;

/** ChatML, as Qwen-style instruct models ship it (no default system message). */
export const CHATML_TEMPLATE =
  "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}" +
  "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

/** GPT-2's reversible map from the 256 byte values to printable unicode characters. */
export function bytesToUnicode(): string[] {
  const printable: number[] = [];
  for (let b = 33; b <= 126; b++) printable.push(b);
  for (let b = 161; b <= 172; b++) printable.push(b);
  for (let b = 174; b <= 255; b++) printable.push(b);
  const map: string[] = new Array(256);
  let extra = 0;
  for (let b = 0; b < 256; b++) {
    map[b] = printable.includes(b) ? String.fromCharCode(b) : String.fromCharCode(256 + extra++);
  }
  return map;
}

const BYTE_CHARS = bytesToUnicode();
// The ByteLevel pre-tokenizer's regex (GPT-2), as @huggingface/tokenizers uses it.
const BYTE_LEVEL_PATTERN = /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/gu;
const encoder = new TextEncoder();

/** Text -> pre-tokens in byte-char form, exactly as the written tokenizer.json splits it
 *  (special tokens are cut out first). Example: 'x 12' -> ['x', 'Ġ', '1', '2']. */
export function preTokenize(text: string): string[] {
  const out: string[] = [];
  const specials = new RegExp(SPECIAL_TOKENS.map((s) => s.replace(/[|]/g, '\\|')).join('|'), 'g');
  for (const segment of text.split(specials)) {
    for (const piece of segment.match(/[^\d]+|\d/gu) ?? []) {
      for (const word of piece.match(BYTE_LEVEL_PATTERN) ?? []) {
        out.push(Array.from(encoder.encode(word), (b) => BYTE_CHARS[b]).join(''));
      }
    }
  }
  return out;
}

export interface BpeModel {
  /** token -> id: specials first (0..2), then the 256 bytes, then one token per merge. */
  vocab: Map<string, number>;
  merges: [string, string][];
}

export interface TrainBpeOptions {
  vocabSize: number;
  /** Pairs seen fewer times than this are not merged (the vocabulary may end up smaller). */
  minFrequency?: number;
  /** Continue this tokenizer: its ids and merges are kept as they are (so a model trained on it keeps
   *  its embeddings), its merges are applied to the new texts first, and new merges get the next ids.
   *  Example: trainBpe(sqlTexts, { vocabSize: 1536, base: mathBpe }) -> mathBpe's 1024 tokens + 512 new. */
  base?: BpeModel;
}

/** A BpeModel back from a tokenizer.json written by tokenizerJson(). */
export function bpeFromJson(json: Record<string, unknown>): BpeModel {
  const model = json.model as { vocab: Record<string, number>; merges: (string | [string, string])[] };
  const vocab = new Map(Object.entries(model.vocab).sort((a, b) => a[1] - b[1]));
  const merges = model.merges.map((m) => (typeof m === 'string' ? (m.split(' ') as [string, string]) : m));
  return { vocab, merges };
}

export function trainBpe(texts: Iterable<string>, opts: TrainBpeOptions): BpeModel {
  const base = SPECIAL_TOKENS.length + 256;
  if (opts.vocabSize < base) throw new Error(`trainBpe: vocabSize must be at least ${base} (specials + 256 bytes), got ${opts.vocabSize}`);
  const counts = new Map<string, number>();
  for (const text of texts) for (const w of preTokenize(text)) counts.set(w, (counts.get(w) ?? 0) + 1);
  // Words as symbol arrays, sorted so the result does not depend on Map insertion order.
  const words = [...counts.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    .map(([w, n]) => ({ symbols: Array.from(w), count: n }));

  const vocab = new Map<string, number>();
  const merges: [string, string][] = [];
  if (opts.base) {
    for (const [token, id] of opts.base.vocab) vocab.set(token, id);
    for (const [left, right] of opts.base.merges) {
      merges.push([left, right]);
      for (const w of words) mergePair(w.symbols, left, right);
    }
  } else {
    for (const s of SPECIAL_TOKENS) vocab.set(s, vocab.size);
    for (const c of BYTE_CHARS) vocab.set(c, vocab.size);
  }
  const minFrequency = opts.minFrequency ?? 2;

  while (vocab.size < opts.vocabSize) {
    const pairs = new Map<string, number>();
    for (const { symbols, count } of words) {
      for (let i = 0; i + 1 < symbols.length; i++) {
        const key = symbols[i] + '\u0000' + symbols[i + 1];
        pairs.set(key, (pairs.get(key) ?? 0) + count);
      }
    }
    let best: string | null = null;
    let bestCount = 0;
    for (const [key, n] of pairs) {
      if (n > bestCount || (n === bestCount && best !== null && tieBefore(key, best))) {
        best = key;
        bestCount = n;
      }
    }
    if (best === null || bestCount < minFrequency) break;
    const [left, right] = best.split('\u0000') as [string, string];
    const joined = left + right;
    merges.push([left, right]);
    if (!vocab.has(joined)) vocab.set(joined, vocab.size);
    for (const w of words) mergePair(w.symbols, left, right);
  }
  return { vocab, merges };
}

/** Replace every (left, right) neighbour pair in a word by the joined symbol, left to right. */
function mergePair(s: string[], left: string, right: string): void {
  for (let i = 0; i + 1 < s.length; i++) {
    if (s[i] === left && s[i + 1] === right) s.splice(i, 2, left + right);
  }
}

/** Tie-break between equally frequent pairs: smaller joined string, then smaller (left, right). */
function tieBefore(a: string, b: string): boolean {
  const ja = a.replace('\u0000', '');
  const jb = b.replace('\u0000', '');
  return ja < jb || (ja === jb && a < b);
}

/** The tokenizer.json that @huggingface/tokenizers (and HF `tokenizers`) load. */
export function tokenizerJson(bpe: BpeModel): Record<string, unknown> {
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: SPECIAL_TOKENS.map((content) => ({
      id: bpe.vocab.get(content)!, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true,
    })),
    normalizer: null,
    pre_tokenizer: {
      type: 'Sequence',
      pretokenizers: [
        { type: 'Digits', individual_digits: true },
        { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
      ],
    },
    post_processor: null,
    decoder: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab: Object.fromEntries(bpe.vocab),
      merges: bpe.merges.map(([a, b]) => `${a} ${b}`),
    },
  };
}

/** tokenizer_config.json: special tokens and the ChatML template (eos = <|im_end|>). */
export function tokenizerConfig(bpe: BpeModel, modelMaxLength: number): Record<string, unknown> {
  return {
    added_tokens_decoder: Object.fromEntries(SPECIAL_TOKENS.map((content) => [String(bpe.vocab.get(content)), {
      content, lstrip: false, normalized: false, rstrip: false, single_word: false, special: true,
    }])),
    additional_special_tokens: ['<|im_start|>', '<|im_end|>'],
    bos_token: null,
    eos_token: '<|im_end|>',
    pad_token: '<|endoftext|>',
    unk_token: null,
    chat_template: CHATML_TEMPLATE,
    clean_up_tokenization_spaces: false,
    model_max_length: modelMaxLength,
    tokenizer_class: 'PreTrainedTokenizerFast',
  };
}
