/**
 * A deliberately naive float64 decoder in plain loops, independent of tfjs, used as a second
 * reference where no Hugging Face dump exists (Qwen3 q/k norm, Llama 3 rope scaling, head_dim
 * != hidden/heads). It is itself checked against the transformers logits of the parity fixtures.
 */
import type { ModelConfig } from '../../src/core/engine/model/config.ts';

export type Weights = Map<string, { shape: number[]; data: Float32Array | Float64Array }>;

function linear(x: number[], w: { shape: number[]; data: ArrayLike<number> }, bias?: { data: ArrayLike<number> }): number[] {
  const [out, inn] = w.shape;
  const y = new Array(out).fill(0);
  for (let o = 0; o < out; o++) {
    let s = bias ? bias.data[o] : 0;
    for (let i = 0; i < inn; i++) s += w.data[o * inn + i] * x[i];
    y[o] = s;
  }
  return y;
}

function rms(x: number[], w: ArrayLike<number>, eps: number): number[] {
  const ms = x.reduce((a, v) => a + v * v, 0) / x.length;
  const r = 1 / Math.sqrt(ms + eps);
  return x.map((v, i) => v * r * w[i]);
}

function invFreq(c: ModelConfig): number[] {
  const half = c.headDim / 2;
  const inv: number[] = [];
  for (let i = 0; i < half; i++) {
    let f = 1 / Math.pow(c.ropeTheta, (2 * i) / c.headDim);
    const s = c.ropeScaling;
    if (s) {
      const wl = (2 * Math.PI) / f;
      const low = s.originalMaxPositionEmbeddings / s.lowFreqFactor;
      const high = s.originalMaxPositionEmbeddings / s.highFreqFactor;
      if (wl > low) f = f / s.factor;
      else if (wl >= high) {
        const sm = (s.originalMaxPositionEmbeddings / wl - s.lowFreqFactor) / (s.highFreqFactor - s.lowFreqFactor);
        f = (1 - sm) * (f / s.factor) + sm * f;
      }
    }
    inv.push(f);
  }
  return inv;
}

function rope(v: number[], pos: number, inv: number[]): number[] {
  const half = inv.length;
  const out = v.slice();
  for (let i = 0; i < half; i++) {
    const c = Math.cos(pos * inv[i]);
    const s = Math.sin(pos * inv[i]);
    out[i] = v[i] * c - v[i + half] * s;
    out[i + half] = v[i + half] * c + v[i] * s;
  }
  return out;
}

/** Logits [T][V] for one unpadded sequence. */
export function naiveForward(c: ModelConfig, w: Weights, ids: number[]): number[][] {
  const g = (n: string) => {
    const t = w.get(n);
    if (!t) throw new Error(`naive: missing ${n}`);
    return t;
  };
  const H = c.hiddenSize;
  const hd = c.headDim;
  const emb = g('model.embed_tokens.weight').data;
  let hs = ids.map((id) => Array.from(emb.subarray(id * H, (id + 1) * H)));
  const inv = invFreq(c);
  const group = c.numHeads / c.numKvHeads;
  for (let l = 0; l < c.numLayers; l++) {
    const p = `model.layers.${l}.`;
    const normed = hs.map((h) => rms(h, g(p + 'input_layernorm.weight').data, c.rmsNormEps));
    const qs: number[][][] = [];
    const ks: number[][][] = [];
    const vs: number[][][] = [];
    normed.forEach((x, t) => {
      const q = linear(x, g(p + 'self_attn.q_proj.weight'), w.get(p + 'self_attn.q_proj.bias'));
      const k = linear(x, g(p + 'self_attn.k_proj.weight'), w.get(p + 'self_attn.k_proj.bias'));
      const v = linear(x, g(p + 'self_attn.v_proj.weight'), w.get(p + 'self_attn.v_proj.bias'));
      const split = (a: number[], n: number, norm?: string) =>
        Array.from({ length: n }, (_, h) => {
          let head = a.slice(h * hd, (h + 1) * hd);
          if (norm) head = rms(head, g(norm).data, c.rmsNormEps);
          return head;
        });
      qs.push(split(q, c.numHeads, c.qkNorm ? p + 'self_attn.q_norm.weight' : undefined).map((h) => rope(h, t, inv)));
      ks.push(split(k, c.numKvHeads, c.qkNorm ? p + 'self_attn.k_norm.weight' : undefined).map((h) => rope(h, t, inv)));
      vs.push(split(v, c.numKvHeads));
    });
    hs = hs.map((h, t) => {
      const ctx: number[] = [];
      for (let head = 0; head < c.numHeads; head++) {
        const kvh = Math.floor(head / group);
        const scores = [];
        for (let s = 0; s <= t; s++) scores.push(qs[t][head].reduce((a, q, i) => a + q * ks[s][kvh][i], 0) / Math.sqrt(hd));
        const m = Math.max(...scores);
        const e = scores.map((x) => Math.exp(x - m));
        const z = e.reduce((a, b) => a + b, 0);
        for (let i = 0; i < hd; i++) ctx.push(e.reduce((a, wgt, s) => a + (wgt / z) * vs[s][kvh][i], 0));
      }
      const o = linear(ctx, g(p + 'self_attn.o_proj.weight'), w.get(p + 'self_attn.o_proj.bias'));
      const h1 = h.map((v, i) => v + o[i]);
      const n2 = rms(h1, g(p + 'post_attention_layernorm.weight').data, c.rmsNormEps);
      const gate = linear(n2, g(p + 'mlp.gate_proj.weight'));
      const up = linear(n2, g(p + 'mlp.up_proj.weight'));
      const act = gate.map((x, i) => (x / (1 + Math.exp(-x))) * up[i]);
      const down = linear(act, g(p + 'mlp.down_proj.weight'));
      return h1.map((v, i) => v + down[i]);
    });
  }
  const head = w.get('lm_head.weight') ?? g('model.embed_tokens.weight');
  return hs.map((h) => linear(rms(h, g('model.norm.weight').data, c.rmsNormEps), head));
}
