/*
 * Many small matrix products at once, in wasm SIMD: c[i] = op(a[i]) @ op(b[i]) for every batch entry i.
 * Built by scripts/build-kernels.sh into ../bmm-wasm-bytes.ts; loaded by ../bmm-wasm.ts; called by
 * ../wasm-matmul.ts for batched products whose entries are small (attention: [B*heads, T, hd] x [.., hd, S]
 * and its gradients), where tfjs-backend-wasm's own batched loop runs at 1-2 GFLOP/s.
 *
 *   a   [batch_a, m, k]   ([batch_a, k, m] when trans_a)      batch_a is batch or 1 (broadcast)
 *   b   [batch_b, k, n]   ([batch_b, n, k] when trans_b)      batch_b is batch or 1 (broadcast)
 *   c   [batch, m, n]
 *   pa  scratch, m * k floats; pb scratch, k * round4(n + 4) floats
 *
 * Each entry packs op(a) row-major [m, k] and op(b) as [k, n4] (n4 = n rounded up to 8, zero-padded), then a
 * 4 x 8 register tile accumulates over p = 0..k-1 in order: every output is the plain sum of its k products
 * in float32, in the order a naive loop takes (tfjs's kernels sum in other orders: the two agree to float
 * rounding, not to the bit).
 */
#include <wasm_simd128.h>

static void pack_a(const float *a, float *pa, int m, int k, int trans) {
  if (!trans) {
    for (int i = 0; i < m * k; i++) pa[i] = a[i];
    return;
  }
  for (int p = 0; p < k; p++)
    for (int i = 0; i < m; i++) pa[i * k + p] = a[p * m + i];
}

static void pack_b(const float *b, float *pb, int k, int n, int n4, int trans) {
  for (int p = 0; p < k; p++) {
    float *row = pb + p * n4;
    if (!trans) {
      for (int j = 0; j < n; j++) row[j] = b[p * n + j];
    } else {
      for (int j = 0; j < n; j++) row[j] = b[j * k + p];
    }
    for (int j = n; j < n4; j++) row[j] = 0.0f;
  }
}

/* Stores an 8-wide accumulator pair into out (width <= 8 valid columns). */
static void store8(float *out, v128_t lo, v128_t hi, int width) {
  if (width == 8) {
    wasm_v128_store(out, lo);
    wasm_v128_store(out + 4, hi);
    return;
  }
  float tmp[8];
  wasm_v128_store(tmp, lo);
  wasm_v128_store(tmp + 4, hi);
  for (int q = 0; q < width; q++) out[q] = tmp[q];
}

/* c rows [i0, i0 + 4), all n columns, from packed pa [m, k] and pb [k, n4]: a 4 x 8 tile in registers. */
static void tile4(const float *pa, const float *pb, float *c, int i0, int k, int n, int n4) {
  const float *a0 = pa + i0 * k, *a1 = a0 + k, *a2 = a1 + k, *a3 = a2 + k;
  for (int j = 0; j < n4; j += 8) {
    v128_t c00 = wasm_f32x4_splat(0.0f), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00;
    const float *bp = pb + j;
    for (int p = 0; p < k; p++, bp += n4) {
      v128_t b0 = wasm_v128_load(bp), b1 = wasm_v128_load(bp + 4);
      v128_t x0 = wasm_f32x4_splat(a0[p]), x1 = wasm_f32x4_splat(a1[p]), x2 = wasm_f32x4_splat(a2[p]), x3 = wasm_f32x4_splat(a3[p]);
      c00 = wasm_f32x4_add(c00, wasm_f32x4_mul(x0, b0)); c01 = wasm_f32x4_add(c01, wasm_f32x4_mul(x0, b1));
      c10 = wasm_f32x4_add(c10, wasm_f32x4_mul(x1, b0)); c11 = wasm_f32x4_add(c11, wasm_f32x4_mul(x1, b1));
      c20 = wasm_f32x4_add(c20, wasm_f32x4_mul(x2, b0)); c21 = wasm_f32x4_add(c21, wasm_f32x4_mul(x2, b1));
      c30 = wasm_f32x4_add(c30, wasm_f32x4_mul(x3, b0)); c31 = wasm_f32x4_add(c31, wasm_f32x4_mul(x3, b1));
    }
    int width = n - j < 8 ? n - j : 8;
    float *out = c + i0 * n + j;
    store8(out, c00, c01, width);
    store8(out + n, c10, c11, width);
    store8(out + 2 * n, c20, c21, width);
    store8(out + 3 * n, c30, c31, width);
  }
}

/* One row i of c (the rows past the last whole tile of 4). */
static void tile1(const float *pa, const float *pb, float *c, int i, int k, int n, int n4) {
  const float *a = pa + i * k;
  for (int j = 0; j < n4; j += 8) {
    v128_t lo = wasm_f32x4_splat(0.0f), hi = lo;
    const float *bp = pb + j;
    for (int p = 0; p < k; p++, bp += n4) {
      v128_t x = wasm_f32x4_splat(a[p]);
      lo = wasm_f32x4_add(lo, wasm_f32x4_mul(x, wasm_v128_load(bp)));
      hi = wasm_f32x4_add(hi, wasm_f32x4_mul(x, wasm_v128_load(bp + 4)));
    }
    store8(c + i * n + j, lo, hi, n - j < 8 ? n - j : 8);
  }
}

__attribute__((export_name("bmm")))
void bmm(const float *a, const float *b, float *c, int batch, int batch_a, int batch_b, int m, int k, int n,
         int trans_a, int trans_b, float *pa, float *pb) {
  int n4 = (n + 7) & ~7;
  for (int e = 0; e < batch; e++) {
    const float *ae = a + (batch_a == 1 ? 0 : e) * m * k;
    const float *be = b + (batch_b == 1 ? 0 : e) * k * n;
    float *ce = c + e * m * n;
    if (e == 0 || batch_a != 1) pack_a(ae, pa, m, k, trans_a);
    if (e == 0 || batch_b != 1) pack_b(be, pb, k, n, n4, trans_b);
    int i = 0;
    for (; i + 4 <= m; i += 4) tile4(pa, pb, ce, i, k, n, n4);
    for (; i < m; i++) tile1(pa, pb, ce, i, k, n, n4);
  }
}
