// The BPE trainer (scripts/pretrain/bpe.ts): merges worked by hand on a tiny corpus, and the written
// tokenizer.json loaded by @huggingface/tokenizers through TextTokenizer, round-tripping any text.
import { describe, expect, it } from 'vitest';
import { SPECIAL_TOKENS, bytesToUnicode, preTokenize, tokenizerConfig, tokenizerJson, trainBpe } from '../../../scripts/pretrain/bpe.ts';
import { TextTokenizer } from '../../../src/core/tokenizer/tokenizer.ts';

describe('trainBpe', () => {
  it('merges the most frequent pair first, ties by the joined string', () => {
    // Words "aaab" and "Ġaaab": (a,a) occurs 4 times -> "aa"; then (aa,a) and (a,b) both occur twice,
    // and "aaa" < "ab", so (aa,a) comes next.
    const bpe = trainBpe(['aaab aaab'], { vocabSize: 3 + 256 + 2 });
    expect(bpe.merges).toEqual([['a', 'a'], ['aa', 'a']]);
    expect(bpe.vocab.get('aaa')).toBe(260);
    expect(bpe.vocab.get('<|im_end|>')).toBe(2);
  });
  it('pre-tokenizes like GPT-2 with every digit apart', () => {
    expect(preTokenize('x = 128\n')).toEqual(['x', 'Ġ=', 'Ġ', '1', '2', '8', 'Ċ']);
    expect(bytesToUnicode()[32]).toBe('Ġ');
  });
  it('stops when no pair repeats', () => {
    expect(trainBpe(['abc'], { vocabSize: 400 }).merges).toEqual([]);
  });
});

describe('written tokenizer.json', () => {
  const corpus = ['Problem: Maya has 12 stickers.\n```python\nx = 12 - 5\nprint(x)\n```\nAnswer: 7', 'Result: 7 \\boxed{7}'];
  const bpe = trainBpe(corpus.concat(corpus), { vocabSize: 300 });
  const tok = TextTokenizer.fromJson(tokenizerJson(bpe), tokenizerConfig(bpe, 1024));

  it('round-trips text exactly, including unseen characters', () => {
    for (const text of [...corpus, '  indented\n\n\ttab', 'Grüße, 東京 🎉', '']) {
      expect(tok.decode(tok.encode(text))).toBe(text);
    }
  });
  it('keeps digits as single tokens and special tokens whole', () => {
    const ids = tok.encode('x = 1234');
    expect(ids.slice(-4).map((i) => tok.idToToken(i))).toEqual(['1', '2', '3', '4']);
    expect(tok.encode('<|im_start|>user')[0]).toBe(SPECIAL_TOKENS.indexOf('<|im_start|>'));
  });
  it('renders ChatML and ends turns with <|im_end|>', () => {
    expect(tok.applyChatTemplate([{ role: 'user', content: 'Hi' }])).toBe('<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n');
    expect(tok.eosTokenIds).toEqual([2]);
  });
});
