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

/* c rows [i0, i0 + rows) (rows <= 4), all n columns, from packed pa [m, k] and pb [k, n4]. */
static void tile_rows(const float *pa, const float *pb, float *c, int i0, int rows, int k, int n, int n4) {
  float tmp[8];
  for (int j = 0; j < n4; j += 8) {
    v128_t acc[4][2];
    for (int r = 0; r < 4; r++) acc[r][0] = acc[r][1] = wasm_f32x4_splat(0.0f);
    const float *bp = pb + j;
    for (int p = 0; p < k; p++, bp += n4) {
      v128_t b0 = wasm_v128_load(bp), b1 = wasm_v128_load(bp + 4);
      for (int r = 0; r < rows; r++) {
        v128_t av = wasm_f32x4_splat(pa[(i0 + r) * k + p]);
        acc[r][0] = wasm_f32x4_add(acc[r][0], wasm_f32x4_mul(av, b0));
        acc[r][1] = wasm_f32x4_add(acc[r][1], wasm_f32x4_mul(av, b1));
      }
    }
    int width = n - j < 8 ? n - j : 8;
    for (int r = 0; r < rows; r++) {
      float *out = c + (i0 + r) * n + j;
      if (width == 8) {
        wasm_v128_store(out, acc[r][0]);
        wasm_v128_store(out + 4, acc[r][1]);
      } else {
        wasm_v128_store(tmp, acc[r][0]);
        wasm_v128_store(tmp + 4, acc[r][1]);
        for (int q = 0; q < width; q++) out[q] = tmp[q];
      }
    }
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
    for (int i = 0; i < m; i += 4) tile_rows(pa, pb, ce, i, m - i < 4 ? m - i : 4, k, n, n4);
  }
}
