/**
 * A vocabulary table (the token embedding, or an untied lm_head) held as row blocks, each small
 * enough for one GPU storage binding.
 *
 * Why: Qwen2.5-0.5B's embedding is [151936, 896] float32, 519 MiB. A device with WebGPU's default
 * limits binds at most 128 MiB per storage buffer and allocates at most 256 MiB per buffer, so that
 * table cannot be one tensor there. Split by rows it is 5 blocks of at most 37,449 rows
 * (37,449 * 896 * 4 bytes = 127.99 MiB), and the two uses of the table split with it:
 *   lookup:     rows for token ids = gather from the block each id falls in, then put back in order;
 *   projection: logits [N, V] = concat over blocks of hidden [N, H] @ block^T [H, V_k], along V.
 * Both give the same numbers as the whole table: each output element is the same dot product.
 * The weights loader (weights.ts) makes the blocks; the decoder (llama.ts) uses them.
 *
 * Blocks are kept in the model's weight map under `<name>#<k>` (k = 0, 1, ...), so everything
 * that owns, counts or disposes weights keeps working; `blockName`/`blocksOf` read that scheme.
 *
 * Example: rowsPerBlock(896, 128 * 2 ** 20) -> 37449;  blockRows(151936, 37449) -> [37449 x 4, 2140]
 *          const t = new RowBlocks([tf.tensor2d([[1, 1], [2, 2]]), tf.tensor2d([[3, 3]])]);
 *          t.lookup([2, 0])                        -> [[3, 3], [1, 1]]
 *          t.project(tf.tensor2d([[1, 0]]))        -> [[1, 2, 3]]
 */
import * as tf from '@tensorflow/tfjs-core';

/** The tables that may be split: the only weights whose size grows with the vocabulary. */
export const VOCAB_TABLES = ['model.embed_tokens.weight', 'lm_head.weight'] as const;

const F32 = 4;

/** Most rows of `cols` float32 values that fit `maxBytes` (at least 1). */
export function rowsPerBlock(cols: number, maxBytes: number): number {
  return Math.max(1, Math.floor(maxBytes / (cols * F32)));
}

/** Row counts of the blocks of a `rows`-row table, `perBlock` rows each but the last. */
export function blockRows(rows: number, perBlock: number): number[] {
  const out: number[] = [];
  for (let start = 0; start < rows; start += perBlock) out.push(Math.min(perBlock, rows - start));
  return out;
}

/** The weight-map key of block `k` of table `name`. */
export function blockName(name: string, k: number): string {
  return `${name}#${k}`;
}

/** The blocks of table `name` in a weight map, in order; empty when it is held whole or absent. */
export function blocksOf(weights: Map<string, tf.Tensor>, name: string): tf.Tensor2D[] {
  const out: tf.Tensor2D[] = [];
  for (let k = 0; weights.has(blockName(name, k)); k++) out.push(weights.get(blockName(name, k)) as tf.Tensor2D);
  return out;
}

/** The Hugging Face name a weight-map key stands for (`name#k` -> `name`). */
export function tableName(key: string): string {
  const at = key.lastIndexOf('#');
  return at < 0 ? key : key.slice(0, at);
}

/**
 * Split float32 `data` of a [rows, cols] table into row blocks of at most `maxBytes` each, as
 * tensors (views of `data`, copied by tf.tensor2d). One block when the table fits.
 */
export function splitTable(data: Float32Array, rows: number, cols: number, maxBytes: number): tf.Tensor2D[] {
  const out: tf.Tensor2D[] = [];
  let start = 0;
  for (const n of blockRows(rows, rowsPerBlock(cols, maxBytes))) {
    out.push(tf.tensor2d(data.subarray(start * cols, (start + n) * cols), [n, cols], 'float32'));
    start += n;
  }
  return out;
}

/** A [V, H] table as row blocks [V_k, H] (the model's weight map owns the tensors). */
export class RowBlocks {
  readonly blocks: tf.Tensor2D[];
  /** First row of each block. */
  readonly starts: number[];
  readonly rows: number;
  readonly cols: number;

  constructor(blocks: tf.Tensor2D[]) {
    if (!blocks.length) throw new Error('RowBlocks: a table needs at least one block');
    this.blocks = blocks;
    this.cols = blocks[0].shape[1];
    this.starts = [];
    let rows = 0;
    for (const b of blocks) {
      if (b.shape[1] !== this.cols) throw new Error(`RowBlocks: blocks have ${b.shape[1]} and ${this.cols} columns`);
      this.starts.push(rows);
      rows += b.shape[0];
    }
    this.rows = rows;
  }

  /**
   * Rows for host-side ids: [ids.length, H]. Ids are grouped by block on the host, each block is
   * gathered once, and one more gather restores the order of `ids`.
   */
  lookup(ids: ArrayLike<number>): tf.Tensor2D {
    return tf.tidy(() => {
      const perBlock: number[][] = this.blocks.map(() => []);
      const where = new Int32Array(ids.length); // block k's j-th id -> position in the concatenation
      const which = new Int32Array(ids.length);
      for (let i = 0; i < ids.length; i++) {
        const id = ids[i];
        if (!(id >= 0 && id < this.rows)) throw new Error(`RowBlocks.lookup: id ${id} is outside [0, ${this.rows})`);
        let k = this.blocks.length - 1;
        while (this.starts[k] > id) k--;
        which[i] = k;
        where[i] = perBlock[k].length;
        perBlock[k].push(id - this.starts[k]);
      }
      const parts: tf.Tensor2D[] = [];
      const offset: number[] = [];
      let n = 0;
      perBlock.forEach((local, k) => {
        offset.push(n);
        if (!local.length) return;
        parts.push(tf.gather(this.blocks[k], tf.tensor1d(local, 'int32')) as tf.Tensor2D);
        n += local.length;
      });
      const joined = parts.length === 1 ? parts[0] : (tf.concat(parts, 0) as tf.Tensor2D); // [N, H], by block
      if (parts.length === 1) return joined; // one block used: already in the order of ids
      const order = Int32Array.from(where, (w, i) => offset[which[i]] + w);
      return tf.gather(joined, tf.tensor1d(order, 'int32')) as tf.Tensor2D;
    });
  }

  /** hidden [N, H] -> hidden @ table^T [N, V], one matmul per block, concatenated along V. */
  project(hidden: tf.Tensor2D): tf.Tensor2D {
    return tf.tidy((): tf.Tensor2D => {
      const parts = this.blocks.map((b) => tf.matMul(hidden, b, false, true) as tf.Tensor2D); // [N, V_k]
      return parts.length === 1 ? parts[0] : tf.concat(parts, 1) as tf.Tensor2D;
    });
  }
}
