/**
 * The output projection of a tied embedding on wasm, held as column blocks of E^T.
 *
 * Why blocks: logits [N, V] = hidden [N, H] @ E^T [H, V]. tfjs-backend-wasm hands the product to
 * XNNPACK, which on one thread walks every column of its packed weights once per group of a few
 * rows. A whole SmolLM2 head (H 576, V 49,152: 113 MB) does not stay in cache, so each group
 * reads it again from memory and the product runs at half the matmul rate of the same process
 * (docs/performance.md). Blocks of at most BLOCK_BYTES stay in cache across the row groups. The
 * blocks together hold the same bytes as one [H, V] copy.
 *
 * Why a custom gradient: the plain gradient of hidden is dlogits @ block^T per block, which the
 * wasm matmul wrapper computes by transposing each block first. The transposed blocks are row
 * ranges of E itself, so the backward slices E (contiguous runs) instead and sums
 *   dhidden [N, H] = sum_k dlogits[:, cols_k] [N, V_k] @ E[rows_k] [V_k, H].
 * The forward gives the plain path's numbers; the backward takes the same sum over V block by block,
 * so its last bits may differ.
 *
 * For: CausalLM on wasm with tied embeddings (llama.ts makes one); decode-wasm.ts multiplies by
 * `blocks` over the heap. Not for: webgpu or cpu, nor a trainable embedding (no gradient reaches E).
 *
 * Example: E = [[1, 0], [0, 1], [1, 1]] (V 3, H 2), blockCols 2
 *   blocks = [[[1, 0], [0, 1]], [[1], [1]]]          (E^T columns 0-1, then column 2)
 *   project([[2, 3]]) -> concat([[2, 3]], [[5]]) = [[2, 3, 5]]
 *   gradient for dlogits [[1, 1, 1]]: [[1, 1]] @ E[0:2] + [[1]] @ E[2:3] = [[1, 1]] + [[1, 1]] = [[2, 2]]
 */
import * as tf from '@tensorflow/tfjs-core';

/** Most bytes per block: a block's packed weights stay in a server core's cache (docs/performance.md). */
const BLOCK_BYTES = 8 << 20;
let blockBytes = BLOCK_BYTES;

/** Sets the bytes per block of heads made from now on (tests split small heads); returns the previous value. */
export function setBlockBytes(bytes: number): number {
  const previous = blockBytes;
  blockBytes = bytes;
  return previous;
}

/** Columns per block for hidden size `h`: at most `maxBytes`, a multiple of 16 (XNNPACK's widest tile), at least 16. */
export function blockColumns(h: number, maxBytes = blockBytes): number {
  return Math.max(16, Math.floor(maxBytes / (h * 4) / 16) * 16);
}

export class TiedHead {
  /** E^T in column blocks: block k is [H, V_k], columns starts[k] .. starts[k] + V_k of E^T. */
  readonly blocks: tf.Tensor2D[] = [];
  readonly starts: number[] = [];
  /** The embedding [V, H] the blocks were made from (owned by the model, not by this head). */
  private readonly embed: tf.Tensor2D;
  private readonly projectFn: (hidden: tf.Tensor2D) => tf.Tensor2D;

  constructor(embed: tf.Tensor2D, cols = blockColumns(embed.shape[1])) {
    this.embed = embed;
    const [V, H] = embed.shape;
    for (let s = 0; s < V; s += cols) {
      const n = Math.min(cols, V - s);
      this.starts.push(s);
      this.blocks.push(tf.tidy(() => tf.transpose(tf.slice(embed, [s, 0], [n, H])) as tf.Tensor2D));
    }
    this.projectFn = tf.customGrad(((hidden: tf.Tensor2D) => ({
      value: this.forward(hidden),
      gradFunc: (dy: tf.Tensor2D) => this.backward(dy),
    })) as unknown as Parameters<typeof tf.customGrad>[0]) as (hidden: tf.Tensor2D) => tf.Tensor2D;
  }

  /** hidden [N, H] -> logits [N, V] (differentiable in hidden). */
  project(hidden: tf.Tensor2D): tf.Tensor2D {
    return this.projectFn(hidden);
  }

  /** [N, H] @ each block, joined along V. */
  private forward(hidden: tf.Tensor2D): tf.Tensor2D {
    return tf.tidy(() => {
      const parts = this.blocks.map((b) => tf.matMul(hidden, b));
      return (parts.length === 1 ? parts[0] : tf.concat(parts, 1)) as tf.Tensor2D;
    });
  }

  /** dlogits [N, V] -> dhidden [N, H] = sum over blocks of dlogits[:, cols_k] @ E[rows_k]. */
  private backward(dy: tf.Tensor2D): tf.Tensor2D {
    const N = dy.shape[0];
    const H = this.embed.shape[1];
    if (this.starts.length === 1) return tf.matMul(dy, this.embed);
    // One block's slices at a time: all of E's row slices at once would be a second embedding.
    let sum: tf.Tensor2D | null = null;
    this.starts.forEach((s, k) => {
      const n = this.blocks[k].shape[1];
      const part = tf.tidy(() => tf.matMul(tf.slice(dy, [0, s], [N, n]), tf.slice(this.embed, [s, 0], [n, H])) as tf.Tensor2D);
      if (!sum) sum = part;
      else {
        const next: tf.Tensor2D = tf.add(sum, part);
        tf.dispose([sum, part]);
        sum = next;
      }
    });
    return sum!;
  }

  dispose(): void {
    tf.dispose(this.blocks);
    this.blocks.length = 0;
  }
}
