/*
 * Attention of one decoding step over a KV cache, for every row and query head, in wasm SIMD.
 * Built by scripts/build-kernels.sh into ../attention-wasm-bytes.ts; loaded by ../attention-wasm.ts;
 * called by src/core/engine/model/decode-wasm.ts. The JS loop `attendJs` there is the reference.
 *
 *   q      [B, nh, hd]        this step's queries (RoPE applied)
 *   k, v   [B, nkv, cap, hd]  the cache; slots [0, slots) are filled, this step's included
 *   mask   [B, cap]           1 = a real token, 0 = padding
 *   out    [B, nh, hd]        softmax(q k^T * scale over the row's real slots) v
 *   scores [slots]            scratch, double
 * Query head h reads KV head h / (nh / nkv) (grouped-query attention, as HF repeat_kv).
 * Products and sums are in double (f64x2 lanes), as the JS reference's are: the logits then stay
 * within float32 rounding of the plain tfjs path. Head sizes up to 1024.
 */
#include <wasm_simd128.h>

/* exp(x) for x <= 0 (a softmax's x - max), in double: 2^k * p(r), x = k ln2 + r, |r| <= ln2 / 2,
 * p the Taylor polynomial of degree 12 (relative error below 1e-15 there). */
static double exp_neg(double x) {
  if (x < -700.0) return 0.0;
  const double log2e = 1.4426950408889634, ln2_hi = 0.6931471803691238, ln2_lo = 1.9082149292705877e-10;
  double kf = __builtin_floor(x * log2e + 0.5);
  double r = (x - kf * ln2_hi) - kf * ln2_lo;
  double p = 1.0 / 479001600.0;
  const double inv_fact[12] = { 1.0 / 39916800.0, 1.0 / 3628800.0, 1.0 / 362880.0, 1.0 / 40320.0, 1.0 / 5040.0, 1.0 / 720.0,
                                1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0 };
  for (int i = 0; i < 12; i++) p = p * r + inv_fact[i];
  union { double f; long long i; } s;
  s.i = (long long)((int)kf + 1023) << 52;
  return p * s.f;
}

/* a . b over n floats, products and sums in double (two f64x2 lanes for each 4 floats). */
static double dot(const float* a, const float* b, int n) {
  int d = 0;
  double sum = 0.0;
  if ((n & 3) == 0) {
    v128_t lo = wasm_f64x2_splat(0.0), hi = wasm_f64x2_splat(0.0);
    for (; d < n; d += 4) {
      v128_t a4 = wasm_v128_load(a + d), b4 = wasm_v128_load(b + d);
      lo = wasm_f64x2_add(lo, wasm_f64x2_mul(wasm_f64x2_promote_low_f32x4(a4), wasm_f64x2_promote_low_f32x4(b4)));
      v128_t a2 = wasm_i32x4_shuffle(a4, a4, 2, 3, 0, 1), b2 = wasm_i32x4_shuffle(b4, b4, 2, 3, 0, 1);
      hi = wasm_f64x2_add(hi, wasm_f64x2_mul(wasm_f64x2_promote_low_f32x4(a2), wasm_f64x2_promote_low_f32x4(b2)));
    }
    sum = (wasm_f64x2_extract_lane(lo, 0) + wasm_f64x2_extract_lane(hi, 0)) + (wasm_f64x2_extract_lane(lo, 1) + wasm_f64x2_extract_lane(hi, 1));
  }
  for (; d < n; d++) sum += (double)a[d] * (double)b[d];
  return sum;
}

/* acc += p * row over n floats, in double. */
static void axpy(double* acc, double p, const float* row, int n) {
  int d = 0;
  if ((n & 3) == 0) {
    v128_t pv = wasm_f64x2_splat(p);
    for (; d < n; d += 4) {
      v128_t r4 = wasm_v128_load(row + d);
      v128_t r2 = wasm_i32x4_shuffle(r4, r4, 2, 3, 0, 1);
      wasm_v128_store(acc + d, wasm_f64x2_add(wasm_v128_load(acc + d), wasm_f64x2_mul(pv, wasm_f64x2_promote_low_f32x4(r4))));
      wasm_v128_store(acc + d + 2, wasm_f64x2_add(wasm_v128_load(acc + d + 2), wasm_f64x2_mul(pv, wasm_f64x2_promote_low_f32x4(r2))));
    }
  }
  for (; d < n; d++) acc[d] += p * row[d];
}

/* A head's output before rounding to float (head sizes up to 1024). */
static double acc[1024];

__attribute__((export_name("attend")))
void attend(const float* q, const float* k, const float* v, const unsigned char* mask, int rows, int nh, int nkv, int hd,
            int cap, int slots, double scale, float* out, double* scores) {
  const int group = nh / nkv;
  for (int b = 0; b < rows; b++) {
    const unsigned char* m = mask + b * cap;
    for (int h = 0; h < nh; h++) {
      const float* qh = q + (b * nh + h) * hd;
      const long base = (long)(b * nkv + h / group) * cap * hd;
      const float* kh = k + base;
      const float* vh = v + base;
      float* o = out + (b * nh + h) * hd;
      double max = -__builtin_inf();
      for (int s = 0; s < slots; s++) {
        if (!m[s]) continue;
        double z = (double)(float)dot(qh, kh + s * hd, hd) * scale; /* the score as a float32 matmul gives it, then scaled */
        scores[s] = z;
        if (z > max) max = z;
      }
      double sum = 0.0;
      for (int s = 0; s < slots; s++) {
        if (!m[s]) continue;
        double e = exp_neg(scores[s] - max);
        scores[s] = e;
        sum += e;
      }
      for (int d = 0; d < hd; d++) acc[d] = 0.0;
      for (int s = 0; s < slots; s++) {
        if (!m[s]) continue;
        axpy(acc, scores[s] / sum, vh + s * hd, hd);
      }
      for (int d = 0; d < hd; d++) o[d] = (float)acc[d];
    }
  }
}
