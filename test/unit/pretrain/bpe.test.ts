// The BPE trainer (scripts/pretrain/bpe.ts): merges worked by hand on a tiny corpus, and the written
// tokenizer.json loaded by @huggingface/tokenizers through TextTokenizer, round-tripping any text.
import * as tf from '@tensorflow/tfjs-core';
import { describe, expect, it } from 'vitest';
import { extendEmbeddings } from '../../../scripts/pretrain/train.ts';
import { initBackend } from '../../../src/core/engine/backend.ts';
import { SPECIAL_TOKENS, bpeFromJson, bytesToUnicode, preTokenize, tokenizerConfig, tokenizerJson, trainBpe } from '../../../scripts/pretrain/bpe.ts';
import { TextTokenizer } from '../../../src/core/engine/tokenizer/tokenizer.ts';

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
  it('continues a tokenizer: its ids and merges stay, new merges come after them', () => {
    // Base learns (a,a) then (aa,a) on 'aaab'; the new text 'aaa SELECT SELECT' is first cut by those
    // merges ('aaa' is one symbol already, so no new merge touches it), then gets its own, ids from 261
    // on: in 'ĠSELECT' all six pairs occur twice, "CT" is the smallest joined string, then "ECT" < "EL".
    const base = trainBpe(['aaab aaab'], { vocabSize: 261 });
    const grown = trainBpe(['aaa SELECT SELECT'], { vocabSize: 264, base });
    expect(grown.merges.slice(0, 2)).toEqual(base.merges);
    for (const [token, id] of base.vocab) expect(grown.vocab.get(token)).toBe(id);
    expect(grown.merges.slice(2)).toEqual([['C', 'T'], ['E', 'CT'], ['E', 'L']]);
    expect(grown.vocab.get('CT')).toBe(261);
    expect(grown.vocab.get('EL')).toBe(263);
    // Round trip through tokenizer.json, the form --init reads.
    const back = bpeFromJson(tokenizerJson(grown));
    expect(back.merges).toEqual(grown.merges);
    expect([...back.vocab]).toEqual([...grown.vocab]);
  });
  it('grows the embeddings: old rows unchanged, a new token starts as the mean of the pair it merges', async () => {
    await initBackend({ force: 'cpu' });
    const base = trainBpe(['aaab aaab'], { vocabSize: 261 });
    const grown = trainBpe(['aaa SELECT SELECT'], { vocabSize: 264, base });
    const rows = Array.from({ length: 261 }, (_, i) => [i, -i / 2]); // hidden 2
    const weights = new Map([['model.embed_tokens.weight', tf.variable(tf.tensor2d(rows))]]);
    extendEmbeddings(weights, base, grown);
    const e = weights.get('model.embed_tokens.weight')!.arraySync() as number[][];
    expect(e.length).toBe(264);
    expect(e.slice(0, 261)).toEqual(rows);
    const id = (t: string) => grown.vocab.get(t)!;
    const mean = (a: number[], b: number[]) => a.map((x, k) => (x + b[k]) / 2);
    expect(e[id('CT')]).toEqual(mean(rows[id('C')], rows[id('T')]));
    expect(e[id('ECT')]).toEqual(mean(rows[id('E')], e[id('CT')])); // built on a row made one merge earlier
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
