/**
 * A fused decoding step for tfjs-backend-webgpu: one token per row through every layer in 5 compute
 * dispatches a layer (plus one for the embedding and one for the output projection), with the KV
 * cache in this decoder's own GPU buffers, written in place.
 *
 * Why: the plain step (llama.ts) records ~51 dispatches a layer (`npm run bench -- decode --backend
 * webgpu`), and on a GPU each dispatch has a fixed cost; tfjs binds inputs read-only and copies the
 * whole cache every step (`tf.concat`). Here, per layer, rows B, hidden H, heads nh of size hd (nkv
 * for K/V), intermediate I, grid [x, y] = [workgroups of 64 threads, blocks of RB = 8 rows] (a
 * workgroup serves 8 rows, so each weight is read ceil(B / 8) times a step, not B times):
 *   1. qkv      [nh + 2 nkv, B/8]  RMSNorm of h, one head of q, k or v (+ bias, + LoRA), Qwen3's norm
 *                                  per head, RoPE, then q to a scratch buffer, k and v into the cache
 *   2. attend   [nh, B]            softmax(q k^T / sqrt(hd)) v over the row's real slots, online by
 *                                  chunks of 64 slots (any length, no [S] buffer)
 *   3. o        [H / 64, B/8]      h += ctx Wo (+ bias, + LoRA)
 *   4. gate_up  [I / 64, B/8]      RMSNorm of h, silu(n Wg) * (n Wu) (+ LoRA)
 *   5. down     [H / 64, B/8]      h += m Wd (+ LoRA)
 * Not tuned for a real GPU yet: a thread reads its weight row straight from storage (HF layout
 * [out, in], so neighbouring threads read H floats apart, not coalesced). No device has measured it.
 * The weights are the model's own tensors' buffers (either layout: [out, in] or [in, out]). LoRA runs
 * unmerged: each workgroup computes the rank-r down projection it needs (x A^T) itself, then adds
 * (u B^T) * scale; the scale is folded into B here. Norms, biases and LoRA live in one small buffer
 * per layer whose first 40 words say where each part is (HEADER below).
 *
 * Numerics: float32 throughout, sums in another order than the plain ops: logits within 1e-4 of the
 * plain path (test/webgpu/decode.test.ts). RoPE's cos/sin are computed here in float64 per row and
 * position, as the plain path's table is, and passed in (the GPU's own cos loses precision at large
 * angles).
 *
 * For: `generate` on the webgpu backend after the prefill. Not for: the prefill, training, other
 * backends, tables held in row blocks, heads wider than 256 or a LoRA rank over 64
 * (`gpuDecodeRefusal` says why it declines; generate then uses the plain step).
 *
 * Example:
 *   const out = model.forward(ids, { useCache: true, lastOnly: true, adapter });   // prefill
 *   const dec = await GpuDecoder.open(model, out.cache!, adapter, 32);             // copies the cache
 *   const logits = await dec.step([12, 40]);   // Float32Array [2 * V]
 *   dec.keepRows([1]);                         // row 0 finished
 *   dec.dispose();
 */
import * as tf from '@tensorflow/tfjs-core';
import { gpuBuffer, pipeline, type WebGPUBackendInternals } from '../kernels/webgpu-raw.ts';
import { PROJECTIONS, projectionPrefix, type AdapterView, type CausalLM, type KVCache } from './llama.ts';

const NONE = 0xffffffff;
/** Words of a layer's parameter header: where each part starts (in floats), NONE when absent. */
const HEADER = { inNorm: 0, postNorm: 1, qNorm: 2, kNorm: 3, bias: 4, loraA: 11, loraB: 18, transposed: 25, rank: 32, size: 40 };
const MAX_HEAD = 256;
const MAX_RANK = 64;
/** Rows a weight kernel's workgroup serves (its accumulators), so that a weight is read ceil(B / RB) times a step, not B. */
const RB = 8;

/** Why the fused WebGPU step cannot serve this model here, or null when it can. */
export function gpuDecodeRefusal(model: CausalLM, adapter: AdapterView | null = null): string | null {
  if (tf.getBackend() !== 'webgpu') return `the backend is ${tf.getBackend()}, not webgpu`;
  if (model.tablesInBlocks()) return 'the embedding or output table is held in row blocks';
  const c = model.config;
  const limit = (tf.backend() as unknown as WebGPUBackendInternals).device.limits.maxStorageBufferBindingSize;
  const names = [
    'model.embed_tokens.weight',
    ...Array.from({ length: c.numLayers }, (_, l) => PROJECTIONS.map((p) => `${projectionPrefix(l, p)}.weight`)).flat(),
  ];
  const largest = Math.max(model.outputWeight().w.size, ...names.map((n) => model.w(n).size)) * 4;
  if (largest > limit) return `a weight of ${largest} bytes is over the device's storage binding limit (${limit})`;
  if (c.headDim > MAX_HEAD || c.headDim % 2) return `head size ${c.headDim} (the kernel takes even sizes up to ${MAX_HEAD})`;
  for (let l = 0; adapter && l < c.numLayers; l++) {
    for (const p of PROJECTIONS) {
      const r = adapter.lora(l, p)?.a.shape[0] ?? 0;
      if (r > MAX_RANK) return `LoRA rank ${r} (the kernel takes up to ${MAX_RANK})`;
    }
  }
  return null;
}

// ---------------------------------------------------------------------------------------------
// WGSL. One uniform block for every kernel of a step; per-layer parts in P (header, then floats).

const COMMON = /* wgsl */ `
struct S { B : u32, H : u32, nh : u32, nkv : u32, hd : u32, I : u32, V : u32, cap : u32,
           len : u32, headT : u32, eps : f32, scale : f32, maskAt : u32, pad0 : u32, pad1 : u32, pad2 : u32 };
@group(0) @binding(0) var<uniform> s : S;
const NONE : u32 = 0xffffffffu;
const RB : u32 = ${RB}u; // rows per workgroup in the weight kernels: each weight is read ceil(B / RB) times a step
var<workgroup> red : array<f32, 64>;
fn reduceSum(t : u32, v : f32) -> f32 {
  red[t] = v;
  workgroupBarrier();
  for (var o = 32u; o > 0u; o = o >> 1u) {
    if (t < o) { red[t] = red[t] + red[t + o]; }
    workgroupBarrier();
  }
  let r = red[0];
  workgroupBarrier();
  return r;
}
fn reduceMax(t : u32, v : f32) -> f32 {
  red[t] = v;
  workgroupBarrier();
  for (var o = 32u; o > 0u; o = o >> 1u) {
    if (t < o) { red[t] = max(red[t], red[t + o]); }
    workgroupBarrier();
  }
  let r = red[0];
  workgroupBarrier();
  return r;
}
`;

const HDR = /* wgsl */ `fn hdr(i : u32) -> u32 { return bitcast<u32>(P[i]); }
// Element (output j, input i) of a weight with n inputs and m outputs, held [out, in] (t = 1) or [in, out].
fn at(j : u32, i : u32, n : u32, m : u32, t : u32) -> u32 { return select(i * m + j, j * n + i, t == 1u); }
`;

/** 1. RMSNorm + one head of q, k or v + bias + LoRA (+ per-head norm) + RoPE, for RB rows; k, v into the cache at slot len - 1. */
const QKV_WGSL = /* wgsl */ `${COMMON}
@group(0) @binding(1) var<storage, read> X : array<f32>;          // h [B, H]
@group(0) @binding(2) var<storage, read> Wq : array<f32>;
@group(0) @binding(3) var<storage, read> Wk : array<f32>;
@group(0) @binding(4) var<storage, read> Wv : array<f32>;
@group(0) @binding(5) var<storage, read> P : array<f32>;          // layer parts
@group(0) @binding(6) var<storage, read> ST : array<f32>;         // tokens [B], rope [B, hd], mask [B, cap]
@group(0) @binding(7) var<storage, read_write> KV : array<f32>;   // [2, B, nkv, cap, hd]
@group(0) @binding(8) var<storage, read_write> Q : array<f32>;    // [B, nh * hd]
${HDR}
var<workgroup> lu : array<f32, ${RB * MAX_RANK}>;
var<workgroup> hv : array<f32, ${RB * MAX_HEAD}>;
fn w(p : u32, k : u32) -> f32 {
  if (p == 0u) { return Wq[k]; }
  if (p == 1u) { return Wk[k]; }
  return Wv[k];
}
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid : vec3<u32>, @builtin(local_invocation_id) lid : vec3<u32>) {
  let t = lid.x; let b0 = wid.y * RB; let nb = min(RB, s.B - b0); let H = s.H; let hd = s.hd;
  var p = 0u; var h = wid.x; var m = s.nh * hd;
  if (wid.x >= s.nh) { p = 1u; h = wid.x - s.nh; m = s.nkv * hd; }
  if (wid.x >= s.nh + s.nkv) { p = 2u; h = wid.x - s.nh - s.nkv; }
  let g = hdr(${HEADER.inNorm}u);
  var inv : array<f32, RB>;
  for (var rb = 0u; rb < RB; rb++) {
    var ss = 0.0;
    if (rb < nb) { for (var i = t; i < H; i += 64u) { let x = X[(b0 + rb) * H + i]; ss += x * x; } }
    inv[rb] = 1.0 / sqrt(reduceSum(t, ss) / f32(H) + s.eps);
  }
  let r = hdr(${HEADER.rank}u + p); let ao = hdr(${HEADER.loraA}u + p); let bo = hdr(${HEADER.loraB}u + p);
  for (var k = t; k < r * nb; k += 64u) {
    let rb = k / r; let xo = (b0 + rb) * H; let kk = k % r;
    var acc = 0.0;
    for (var i = 0u; i < H; i++) { acc += P[ao + kk * H + i] * (X[xo + i] * inv[rb] * P[g + i]); }
    lu[rb * ${MAX_RANK}u + kk] = acc;
  }
  workgroupBarrier();
  let tr = hdr(${HEADER.transposed}u + p); let bi = hdr(${HEADER.bias}u + p);
  for (var c = t; c < hd; c += 64u) {
    let j = h * hd + c;
    var acc : array<f32, RB>;
    for (var i = 0u; i < H; i++) {
      let wv = w(p, at(j, i, H, m, tr)) * P[g + i];
      for (var rb = 0u; rb < nb; rb++) { acc[rb] += X[(b0 + rb) * H + i] * wv; }
    }
    for (var rb = 0u; rb < nb; rb++) {
      var y = acc[rb] * inv[rb];
      if (bi != NONE) { y += P[bi + j]; }
      for (var k = 0u; k < r; k++) { y += P[bo + j * r + k] * lu[rb * ${MAX_RANK}u + k]; }
      hv[rb * ${MAX_HEAD}u + c] = y;
    }
  }
  workgroupBarrier();
  var qk = NONE;
  if (p == 0u) { qk = hdr(${HEADER.qNorm}u); }
  if (p == 1u) { qk = hdr(${HEADER.kNorm}u); }
  let hf = hd / 2u; let slot = s.len - 1u;
  for (var rb = 0u; rb < RB; rb++) {
    var ss2 = 0.0;
    if (rb < nb) { for (var c = t; c < hd; c += 64u) { let y = hv[rb * ${MAX_HEAD}u + c]; ss2 += y * y; } }
    let inv2 = 1.0 / sqrt(reduceSum(t, ss2) / f32(hd) + s.eps);
    if (rb < nb) {
      let b = b0 + rb; let ro = s.B + b * hd; let ho = rb * ${MAX_HEAD}u;
      for (var i = t; i < hf; i += 64u) {
        var x1 = hv[ho + i]; var x2 = hv[ho + i + hf];
        if (qk != NONE) { x1 = x1 * inv2 * P[qk + i]; x2 = x2 * inv2 * P[qk + hf + i]; }
        if (p < 2u) {
          let cs = ST[ro + i]; let sn = ST[ro + hf + i];
          let y1 = x1 * cs - x2 * sn; let y2 = x2 * cs + x1 * sn;
          x1 = y1; x2 = y2;
        }
        if (p == 0u) {
          let o = (b * s.nh + h) * hd;
          Q[o + i] = x1; Q[o + hf + i] = x2;
        } else {
          let o = ((((p - 1u) * s.B + b) * s.nkv + h) * s.cap + slot) * hd;
          KV[o + i] = x1; KV[o + hf + i] = x2;
        }
      }
    }
  }
}
`;

/** 2. One query head of one row over the row's real cached slots, online softmax by chunks of 64 slots. */
const ATTEND_WGSL = /* wgsl */ `${COMMON}
@group(0) @binding(1) var<storage, read> Q : array<f32>;          // [B, nh * hd]
@group(0) @binding(2) var<storage, read> KV : array<f32>;         // [2, B, nkv, cap, hd]
@group(0) @binding(3) var<storage, read> ST : array<f32>;
@group(0) @binding(4) var<storage, read_write> A : array<f32>;    // [B, nh * hd]
var<workgroup> sc : array<f32, 64>;
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid : vec3<u32>, @builtin(local_invocation_id) lid : vec3<u32>) {
  let t = lid.x; let b = wid.y; let h = wid.x; let hd = s.hd;
  let grp = h / (s.nh / s.nkv);
  let qo = (b * s.nh + h) * hd;
  let ko = ((b * s.nkv) + grp) * s.cap * hd;
  let vo = (((s.B + b) * s.nkv) + grp) * s.cap * hd;
  let mo = s.maskAt + b * s.cap;
  var m = -1e30; var l = 0.0;
  var acc = array<f32, 4>(0.0, 0.0, 0.0, 0.0);
  for (var c0 = 0u; c0 < s.len; c0 += 64u) {
    let sl = c0 + t;
    var z = -1e30; var live = false;
    if (sl < s.len) {
      if (ST[mo + sl] > 0.5) {
        live = true;
        var d = 0.0;
        for (var k = 0u; k < hd; k++) { d += Q[qo + k] * KV[ko + sl * hd + k]; }
        z = d * s.scale;
      }
    }
    let mn = max(m, reduceMax(t, z));
    let corr = exp(m - mn);
    var pz = 0.0;
    if (live) { pz = exp(z - mn); }
    sc[t] = pz;
    l = l * corr + reduceSum(t, pz);
    let n = min(64u, s.len - c0);
    for (var u = 0u; u < 4u; u++) {
      let d = t + u * 64u;
      var a = acc[u] * corr;
      if (d < hd) {
        for (var j = 0u; j < n; j++) { a += sc[j] * KV[vo + (c0 + j) * hd + d]; }
      }
      acc[u] = a;
    }
    m = mn;
    workgroupBarrier();
  }
  for (var u = 0u; u < 4u; u++) {
    let d = t + u * 64u;
    if (d < hd) { A[qo + d] = acc[u] / l; }
  }
}
`;

/** 3 and 5. Y[b, j] += X[b] W (+ bias, + LoRA) for projection PJ with N inputs (o_proj: nh * hd; down_proj: I), RB rows. */
const residualWgsl = (pj: number, n: string) => /* wgsl */ `${COMMON}
@group(0) @binding(1) var<storage, read> X : array<f32>;          // [B, n]
@group(0) @binding(2) var<storage, read> W : array<f32>;
@group(0) @binding(3) var<storage, read> P : array<f32>;
@group(0) @binding(4) var<storage, read_write> Y : array<f32>;    // h [B, H]
${HDR}
var<workgroup> lu : array<f32, ${RB * MAX_RANK}>;
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid : vec3<u32>, @builtin(local_invocation_id) lid : vec3<u32>) {
  let t = lid.x; let b0 = wid.y * RB; let nb = min(RB, s.B - b0); let j = wid.x * 64u + t;
  let n = ${n}; let m = s.H;
  let r = hdr(${HEADER.rank + pj}u); let ao = hdr(${HEADER.loraA + pj}u); let bo = hdr(${HEADER.loraB + pj}u);
  for (var k = t; k < r * nb; k += 64u) {
    let rb = k / r; let xo = (b0 + rb) * n; let kk = k % r;
    var acc = 0.0;
    for (var i = 0u; i < n; i++) { acc += P[ao + kk * n + i] * X[xo + i]; }
    lu[rb * ${MAX_RANK}u + kk] = acc;
  }
  workgroupBarrier();
  if (j < m) {
    let tr = hdr(${HEADER.transposed + pj}u); let bi = hdr(${HEADER.bias + pj}u);
    var acc : array<f32, RB>;
    for (var i = 0u; i < n; i++) {
      let wv = W[at(j, i, n, m, tr)];
      for (var rb = 0u; rb < nb; rb++) { acc[rb] += X[(b0 + rb) * n + i] * wv; }
    }
    for (var rb = 0u; rb < nb; rb++) {
      var y = acc[rb];
      if (bi != NONE) { y += P[bi + j]; }
      for (var k = 0u; k < r; k++) { y += P[bo + j * r + k] * lu[rb * ${MAX_RANK}u + k]; }
      let o = (b0 + rb) * m + j;
      Y[o] = Y[o] + y;
    }
  }
}
`;

/** 4. RMSNorm of h, then silu(n Wg) * (n Wu) (+ bias, + LoRA on each) into M [B, I], RB rows. */
const GATE_UP_WGSL = /* wgsl */ `${COMMON}
@group(0) @binding(1) var<storage, read> X : array<f32>;          // h [B, H]
@group(0) @binding(2) var<storage, read> Wg : array<f32>;
@group(0) @binding(3) var<storage, read> Wu : array<f32>;
@group(0) @binding(4) var<storage, read> P : array<f32>;
@group(0) @binding(5) var<storage, read_write> M : array<f32>;    // [B, I]
${HDR}
var<workgroup> lu : array<f32, ${RB * 2 * MAX_RANK}>;
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid : vec3<u32>, @builtin(local_invocation_id) lid : vec3<u32>) {
  let t = lid.x; let b0 = wid.y * RB; let nb = min(RB, s.B - b0); let j = wid.x * 64u + t;
  let H = s.H; let I = s.I; let g = hdr(${HEADER.postNorm}u);
  var inv : array<f32, RB>;
  for (var rb = 0u; rb < RB; rb++) {
    var ss = 0.0;
    if (rb < nb) { for (var i = t; i < H; i += 64u) { let x = X[(b0 + rb) * H + i]; ss += x * x; } }
    inv[rb] = 1.0 / sqrt(reduceSum(t, ss) / f32(H) + s.eps);
  }
  let rg = hdr(${HEADER.rank + 4}u); let ru = hdr(${HEADER.rank + 5}u); let rr = rg + ru;
  for (var k = t; k < rr * nb; k += 64u) {
    let rb = k / rr; let kk = k % rr; let xo = (b0 + rb) * H;
    var ao = hdr(${HEADER.loraA + 4}u) + kk * H;
    if (kk >= rg) { ao = hdr(${HEADER.loraA + 5}u) + (kk - rg) * H; }
    var acc = 0.0;
    for (var i = 0u; i < H; i++) { acc += P[ao + i] * (X[xo + i] * inv[rb] * P[g + i]); }
    lu[rb * ${2 * MAX_RANK}u + kk] = acc;
  }
  workgroupBarrier();
  if (j < I) {
    let tg = hdr(${HEADER.transposed + 4}u); let tu = hdr(${HEADER.transposed + 5}u);
    var a : array<f32, RB>; var c : array<f32, RB>;
    for (var i = 0u; i < H; i++) {
      let gi = P[g + i];
      let wg = Wg[at(j, i, H, I, tg)] * gi;
      let wu = Wu[at(j, i, H, I, tu)] * gi;
      for (var rb = 0u; rb < nb; rb++) {
        let x = X[(b0 + rb) * H + i];
        a[rb] += x * wg;
        c[rb] += x * wu;
      }
    }
    let bg = hdr(${HEADER.bias + 4}u); let bu = hdr(${HEADER.bias + 5}u);
    let og = hdr(${HEADER.loraB + 4}u); let ou = hdr(${HEADER.loraB + 5}u);
    for (var rb = 0u; rb < nb; rb++) {
      var ga = a[rb] * inv[rb]; var up = c[rb] * inv[rb];
      if (bg != NONE) { ga += P[bg + j]; }
      if (bu != NONE) { up += P[bu + j]; }
      let lo = rb * ${2 * MAX_RANK}u;
      for (var k = 0u; k < rg; k++) { ga += P[og + j * rg + k] * lu[lo + k]; }
      for (var k = 0u; k < ru; k++) { up += P[ou + j * ru + k] * lu[lo + rg + k]; }
      M[(b0 + rb) * I + j] = ga / (1.0 + exp(-ga)) * up;
    }
  }
}
`;

/** The embedding lookup: h[b] = E[token_b]. */
const EMBED_WGSL = /* wgsl */ `${COMMON}
@group(0) @binding(1) var<storage, read> E : array<f32>;          // [V, H]
@group(0) @binding(2) var<storage, read> ST : array<f32>;
@group(0) @binding(3) var<storage, read_write> X : array<f32>;    // [B, H]
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid : vec3<u32>, @builtin(local_invocation_id) lid : vec3<u32>) {
  let b = wid.y; let j = wid.x * 64u + lid.x;
  if (j < s.H) { X[b * s.H + j] = E[bitcast<u32>(ST[b]) * s.H + j]; }
}
`;

/** The final RMSNorm and the output projection: logits [B, V], RB rows. */
const HEAD_WGSL = /* wgsl */ `${COMMON}
@group(0) @binding(1) var<storage, read> X : array<f32>;          // h [B, H]
@group(0) @binding(2) var<storage, read> W : array<f32>;          // [V, H] or [H, V]
@group(0) @binding(3) var<storage, read> G : array<f32>;          // final norm [H]
@group(0) @binding(4) var<storage, read_write> L : array<f32>;    // [B, V]
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid : vec3<u32>, @builtin(local_invocation_id) lid : vec3<u32>) {
  let t = lid.x; let b0 = wid.y * RB; let nb = min(RB, s.B - b0); let j = wid.x * 64u + t;
  let H = s.H; let V = s.V;
  var inv : array<f32, RB>;
  for (var rb = 0u; rb < RB; rb++) {
    var ss = 0.0;
    if (rb < nb) { for (var i = t; i < H; i += 64u) { let x = X[(b0 + rb) * H + i]; ss += x * x; } }
    inv[rb] = 1.0 / sqrt(reduceSum(t, ss) / f32(H) + s.eps);
  }
  if (j < V) {
    var acc : array<f32, RB>;
    for (var i = 0u; i < H; i++) {
      let wv = W[select(i * V + j, j * H + i, s.headT == 1u)] * G[i];
      for (var rb = 0u; rb < nb; rb++) { acc[rb] += X[(b0 + rb) * H + i] * wv; }
    }
    for (var rb = 0u; rb < nb; rb++) { L[(b0 + rb) * V + j] = acc[rb] * inv[rb]; }
  }
}
`;

/** A 2-D dispatch grid of `x` workgroups per row; throws when x is over the device's limit. */
function grid(device: GPUDevice, x: number, rows: number): [number, number] {
  const max = device.limits.maxComputeWorkgroupsPerDimension;
  if (x > max || rows > max) throw new Error(`decode-webgpu: a grid of ${x} x ${rows} workgroups is over the device limit ${max}`);
  return [x, rows];
}

const STORAGE = 0x80 | 0x8 | 0x4; // GPUBufferUsage.STORAGE | COPY_DST | COPY_SRC (numbers: Node has no global GPUBufferUsage before Dawn loads)

export class GpuDecoder {
  /** Compute dispatches recorded so far (the bench's count per step: the difference over one step). */
  dispatches = 0;
  private rows: number;
  private length: number;
  private cap: number;
  private positions: Int32Array;
  private mask: Uint8Array; // [B, cap]
  private kv: GPUBuffer[] = [];
  private hid!: GPUBuffer;
  private q!: GPUBuffer;
  private att!: GPUBuffer;
  private mlp!: GPUBuffer;
  private logits!: GPUBuffer;
  private staging!: GPUBuffer;
  private state!: GPUBuffer;
  private readonly uniform: GPUBuffer;
  private readonly params: GPUBuffer[];
  private readonly finalNorm: GPUBuffer;
  private readonly device: GPUDevice;

  private constructor(
    private readonly model: CausalLM,
    private readonly be: WebGPUBackendInternals,
    params: Float32Array[],
    finalNorm: Float32Array,
    cache: KVCache,
    rows: number[],
    extra: number,
  ) {
    this.device = be.device;
    this.rows = rows.length;
    this.length = cache.length;
    this.cap = cache.length + Math.max(1, extra);
    this.positions = Int32Array.from(rows, (r) => cache.nextPosition[r]);
    this.params = params.map((p) => this.upload(p));
    this.finalNorm = this.upload(finalNorm);
    this.uniform = this.device.createBuffer({ size: 64, usage: 0x40 | 0x8 }); // UNIFORM | COPY_DST
    this.mask = new Uint8Array(this.rows * this.cap);
    rows.forEach((r, j) => this.mask.set(cache.mask.subarray(r * cache.length, (r + 1) * cache.length), j * this.cap));
    this.allocate();
    // The prefill's K/V [B, nkv, S, hd] into this decoder's cache [2, B', nkv, cap, hd], rows picked by `rows`.
    const { numKvHeads: nkv, headDim: hd } = model.config;
    const enc = this.encoder();
    cache.layers.forEach((layer, l) => {
      const src = [gpuBuffer(be, layer.k, 'cache k'), gpuBuffer(be, layer.v, 'cache v')];
      src.forEach((buf, kv) => rows.forEach((r, j) => {
        for (let g = 0; g < nkv; g++) {
          const from = (r * nkv + g) * cache.length * hd * 4;
          const to = (((kv * this.rows + j) * nkv + g) * this.cap) * hd * 4;
          if (cache.length) enc.copyBufferToBuffer(buf, from, this.kv[l], to, cache.length * hd * 4);
        }
      }));
    });
    this.be.submitQueue();
  }

  /**
   * A decoder that continues from a prefill's cache (copied here; the caller still owns it), with
   * room for `extra` more tokens per row (it grows if asked for more); null when
   * `gpuDecodeRefusal` names a reason.
   */
  static async open(model: CausalLM, cache: KVCache, adapter: AdapterView | null | undefined, extra: number,
    opts: { rows?: number[] } = {}): Promise<GpuDecoder | null> {
    if (gpuDecodeRefusal(model, adapter ?? null)) return null;
    const be = tf.backend() as unknown as WebGPUBackendInternals;
    const params: Float32Array[] = [];
    for (let l = 0; l < model.config.numLayers; l++) params.push(await layerParams(model, l, adapter ?? null));
    const finalNorm = (await model.w('model.norm.weight').data()) as Float32Array;
    const rows = opts.rows ?? Array.from({ length: cache.batch }, (_, b) => b);
    return new GpuDecoder(model, be, params, finalNorm, cache, rows, extra);
  }

  private upload(data: Float32Array): GPUBuffer {
    const buf = this.device.createBuffer({ size: Math.max(16, data.byteLength), usage: STORAGE });
    this.device.queue.writeBuffer(buf, 0, data as Float32Array<ArrayBuffer>);
    return buf;
  }

  private buffer(floats: number): GPUBuffer {
    return this.device.createBuffer({ size: Math.max(16, floats * 4), usage: STORAGE });
  }

  /** Scratch, logits and the cache for this.rows x this.cap (the cache left empty). */
  private allocate(): void {
    const c = this.model.config;
    const B = this.rows;
    this.destroyScratch();
    this.hid = this.buffer(B * c.hiddenSize);
    this.q = this.buffer(B * c.numHeads * c.headDim);
    this.att = this.buffer(B * c.numHeads * c.headDim);
    this.mlp = this.buffer(B * c.intermediateSize);
    this.logits = this.buffer(B * c.vocabSize);
    this.staging = this.device.createBuffer({ size: Math.max(16, B * c.vocabSize * 4), usage: 0x1 | 0x8 }); // MAP_READ | COPY_DST
    this.state = this.buffer(B + B * c.headDim + B * this.cap);
    this.kv = Array.from({ length: c.numLayers }, () => this.buffer(2 * B * c.numKvHeads * this.cap * c.headDim));
  }

  private destroyScratch(): void {
    for (const b of [this.hid, this.q, this.att, this.mlp, this.logits, this.staging, this.state, ...this.kv]) b?.destroy();
  }

  /** tfjs' command encoder, its compute pass ended: what is recorded here runs after tfjs' pending ops. */
  private encoder(): GPUCommandEncoder {
    this.be.ensureCommandEncoderReady();
    this.be.endComputePassEncoder();
    return this.be.commandEncoder!;
  }

  /** The per-step inputs: the uniform block, then tokens, RoPE's cos/sin per row, the mask. */
  private writeInputs(tokens: number[]): void {
    const c = this.model.config;
    const B = this.rows;
    const u = new ArrayBuffer(64);
    const u32 = new Uint32Array(u);
    const f32 = new Float32Array(u);
    const head = this.model.outputWeight();
    u32.set([B, c.hiddenSize, c.numHeads, c.numKvHeads, c.headDim, c.intermediateSize, c.vocabSize, this.cap, this.length, head.transposeB ? 1 : 0]);
    f32[10] = c.rmsNormEps;
    f32[11] = 1 / Math.sqrt(c.headDim);
    u32[12] = B + B * c.headDim;
    this.device.queue.writeBuffer(this.uniform, 0, u);
    const hd = c.headDim;
    const half = hd / 2;
    const st = new Float32Array(B + B * hd + B * this.cap);
    new Uint32Array(st.buffer, 0, B).set(tokens);
    const inv = this.model.ropeFrequencies();
    for (let b = 0; b < B; b++) {
      const o = B + b * hd;
      for (let i = 0; i < half; i++) {
        const angle = Math.fround(this.positions[b] * inv[i]);
        st[o + i] = Math.cos(angle);
        st[o + half + i] = Math.sin(angle);
      }
    }
    for (let i = 0; i < this.mask.length; i++) st[B + B * hd + i] = this.mask[i];
    this.device.queue.writeBuffer(this.state, 0, st);
  }

  private bind(pipe: GPUComputePipeline, buffers: GPUBuffer[]): GPUBindGroup {
    return this.device.createBindGroup({
      layout: pipe.getBindGroupLayout(0),
      entries: [this.uniform, ...buffers].map((buffer, binding) => ({ binding, resource: { buffer } })),
    });
  }

  /** One token per row -> the next token's logits, Float32Array [B * V] (row-major). */
  async step(tokens: number[]): Promise<Float32Array> {
    const c = this.model.config;
    const B = this.rows;
    if (tokens.length !== B) throw new Error(`GpuDecoder.step: ${tokens.length} tokens for ${B} rows`);
    for (const t of tokens) {
      if (!Number.isInteger(t) || t < 0 || t >= c.vocabSize) throw new Error(`GpuDecoder.step: token id ${t} is outside the vocabulary [0, ${c.vocabSize})`);
    }
    if (this.length === this.cap) this.grow();
    for (let b = 0; b < B; b++) this.mask[b * this.cap + this.length] = 1;
    this.length++;
    this.writeInputs(tokens);
    const d = this.device;
    const be = this.be;
    const w = (name: string) => gpuBuffer(be, this.model.w(name), name);
    const wide = (n: number) => Math.ceil(n / 64);
    const p = {
      embed: pipeline(d, 'mappa_decode_embed', EMBED_WGSL),
      qkv: pipeline(d, 'mappa_decode_qkv', QKV_WGSL),
      attend: pipeline(d, 'mappa_decode_attend', ATTEND_WGSL),
      o: pipeline(d, 'mappa_decode_o', residualWgsl(3, 's.nh * s.hd')),
      gateUp: pipeline(d, 'mappa_decode_gate_up', GATE_UP_WGSL),
      down: pipeline(d, 'mappa_decode_down', residualWgsl(6, 's.I')),
      head: pipeline(d, 'mappa_decode_head', HEAD_WGSL),
    };
    const enc = this.encoder();
    const pass = enc.beginComputePass({ label: 'mappa_decode_step' });
    const blocks = Math.ceil(B / RB);
    const run = (pipe: GPUComputePipeline, buffers: GPUBuffer[], x: number, y = blocks) => {
      pass.setPipeline(pipe);
      pass.setBindGroup(0, this.bind(pipe, buffers));
      pass.dispatchWorkgroups(...grid(d, x, y));
      this.dispatches++;
    };
    run(p.embed, [w('model.embed_tokens.weight'), this.state, this.hid], wide(c.hiddenSize), B);
    for (let l = 0; l < c.numLayers; l++) {
      const lw = (proj: (typeof PROJECTIONS)[number]) => gpuBuffer(be, this.model.linearWeight(`${projectionPrefix(l, proj)}.weight`).w, proj);
      run(p.qkv, [this.hid, lw('q_proj'), lw('k_proj'), lw('v_proj'), this.params[l], this.state, this.kv[l], this.q], c.numHeads + 2 * c.numKvHeads);
      run(p.attend, [this.q, this.kv[l], this.state, this.att], c.numHeads, B);
      run(p.o, [this.att, lw('o_proj'), this.params[l], this.hid], wide(c.hiddenSize));
      run(p.gateUp, [this.hid, lw('gate_proj'), lw('up_proj'), this.params[l], this.mlp], wide(c.intermediateSize));
      run(p.down, [this.mlp, lw('down_proj'), this.params[l], this.hid], wide(c.hiddenSize));
    }
    run(p.head, [this.hid, gpuBuffer(be, this.model.outputWeight().w, 'output'), this.finalNorm, this.logits], wide(c.vocabSize));
    pass.end();
    const bytes = B * c.vocabSize * 4;
    enc.copyBufferToBuffer(this.logits, 0, this.staging, 0, bytes);
    be.submitQueue();
    for (let b = 0; b < B; b++) this.positions[b]++;
    await this.staging.mapAsync(1, 0, bytes); // GPUMapMode.READ
    const out = new Float32Array(this.staging.getMappedRange(0, bytes).slice(0));
    this.staging.unmap();
    return out;
  }

  /** Move the cache into new buffers of `rows` (indices into the current rows) and `cap` slots. */
  private restore(rows: number[], cap: number): void {
    const { numKvHeads: nkv, headDim: hd } = this.model.config;
    const old = { kv: this.kv, rows: this.rows, cap: this.cap, mask: this.mask };
    this.kv = []; // kept until the copies below are submitted
    this.rows = rows.length;
    this.cap = cap;
    this.allocate();
    const enc = this.encoder();
    old.kv.forEach((buf, l) => {
      for (let kv = 0; kv < 2; kv++) {
        rows.forEach((r, j) => {
          for (let g = 0; g < nkv; g++) {
            const from = (((kv * old.rows + r) * nkv + g) * old.cap) * hd * 4;
            const to = (((kv * this.rows + j) * nkv + g) * this.cap) * hd * 4;
            if (this.length) enc.copyBufferToBuffer(buf, from, this.kv[l], to, this.length * hd * 4);
          }
        });
      }
    });
    this.be.submitQueue();
    for (const b of old.kv) b.destroy(); // WebGPU frees them once the submitted copies are done
    this.mask = new Uint8Array(this.rows * this.cap);
    rows.forEach((r, j) => this.mask.set(old.mask.subarray(r * old.cap, r * old.cap + this.length), j * this.cap));
  }

  /** Double the slots per row (a generation longer than announced). */
  private grow(): void {
    this.restore(Array.from({ length: this.rows }, (_, b) => b), this.cap * 2);
  }

  /** Keep only these rows (by index, in this order), as selectCacheRows does for the plain cache. */
  keepRows(rows: number[]): void {
    this.restore(rows, this.cap);
    this.positions = Int32Array.from(rows, (r) => this.positions[r]);
  }

  dispose(): void {
    this.destroyScratch();
    for (const b of [...this.params, this.finalNorm, this.uniform]) b.destroy();
    this.kv = [];
  }
}

/**
 * A layer's norms, biases and LoRA in one array: HEADER words (offsets as uint32 bits, NONE where
 * absent), then the parts. LoRA A as [r, in], B as [out, r] times the scale.
 */
async function layerParams(model: CausalLM, layer: number, adapter: AdapterView | null): Promise<Float32Array> {
  const c = model.config;
  const parts: Float32Array[] = [];
  let at = HEADER.size;
  const head = new Uint32Array(HEADER.size).fill(NONE);
  const put = (slot: number, data: Float32Array) => {
    head[slot] = at;
    parts.push(data);
    at += data.length;
  };
  const read = async (t: tf.Tensor) => (await t.data()) as Float32Array;
  const p = `model.layers.${layer}.`;
  put(HEADER.inNorm, await read(model.w(p + 'input_layernorm.weight')));
  put(HEADER.postNorm, await read(model.w(p + 'post_attention_layernorm.weight')));
  if (c.qkNorm) {
    put(HEADER.qNorm, await read(model.w(p + 'self_attn.q_norm.weight')));
    put(HEADER.kNorm, await read(model.w(p + 'self_attn.k_norm.weight')));
  }
  for (const [i, proj] of PROJECTIONS.entries()) {
    const prefix = projectionPrefix(layer, proj);
    head[HEADER.transposed + i] = model.linearWeight(`${prefix}.weight`).transposeB ? 1 : 0;
    const bias = model.weights.get(`${prefix}.bias`);
    if (bias) put(HEADER.bias + i, await read(bias));
    const pair = adapter?.lora(layer, proj) ?? null;
    head[HEADER.rank + i] = pair ? pair.a.shape[0] : 0;
    if (pair) {
      put(HEADER.loraA + i, await read(pair.a));
      const b = Float32Array.from(await read(pair.b), (x) => x * pair.scale);
      put(HEADER.loraB + i, b);
    }
  }
  const out = new Float32Array(at);
  new Uint32Array(out.buffer, 0, HEADER.size).set(head);
  let o = HEADER.size;
  for (const part of parts) {
    out.set(part, o);
    o += part.length;
  }
  return out;
}
