/**
 * A team's adapters in one pass: every batch row uses its own agent's LoRA pair, gathered by adapter
 * index (BGMV, as S-LoRA and Punica serve many adapters; here for training too). One forward and one
 * backward over rows of many agents give every agent's gradient at once, since agent k's variables
 * reach only the rows of agent k.
 *
 * For: the batched update (rl/batched-update.ts): log-probs and PPO gradients of rows of several agents.
 * Not for: decoding (the decoders read `lora`, which a team view refuses) or one agent (adapter.ts).
 *
 * Only the adapters the rows use are stacked (`used`, in order of first use), so a micro-batch of 16
 * rows over 128 agents stacks at most 16 pairs and differentiates only their variables.
 * Per layer and projection, gathered: A [U, r, in] = stack of the used adapters' A, B [U, out, r], rows [B]
 * int32; masked (the default): A [U*r, in], B [out, U*r] concatenated, and a [B, 1, U*r] mask of each row's columns.
 *
 * Example: const view = BatchedAdapter.over([solver, verifier], [1, 1, 0]);   // rows 0, 1 verifier; row 2 solver
 *          view.used            // [verifier, solver]; view.usedIndex -> [1, 0]; view.rowIndex -> [0, 0, 1]
 *          model.forward(ids, {adapter: view})   // row 2 equals model.forward(ids[2], {adapter: solver})
 */
import * as tf from '@tensorflow/tfjs-core';
import type { AdapterView, LoraPair, Projection, RowLoraPair } from '../model/llama.ts';
import type { LoraAdapter } from './adapter.ts';

export class BatchedAdapter implements AdapterView {
  /** The adapters the rows use, in order of first use. */
  readonly used: LoraAdapter[];
  /** For each of `used`, its index in the adapters the view was made over. */
  readonly usedIndex: number[];
  /** Per batch row, the index of its adapter in `used`. */
  readonly rowIndex: number[];
  readonly dropout: number;
  private rows: tf.Tensor1D | null = null;

  private constructor(used: LoraAdapter[], usedIndex: number[], rowIndex: number[]) {
    this.used = used;
    this.usedIndex = usedIndex;
    this.rowIndex = rowIndex;
    const first = used[0];
    for (const a of used) {
      if (a.scale !== first.scale || a.settings.rank !== first.settings.rank || a.dropout !== first.dropout
        || a.settings.targetModules.join() !== first.settings.targetModules.join()) {
        throw new Error(`a team pass needs one LoRA shape for every agent: "${a.name}" differs from "${first.name}" (rank, alpha, dropout or targets)`);
      }
    }
    this.dropout = first.dropout;
  }

  /** The view for rows whose adapters are `adapters[rowAdapter[i]]`. */
  static over(adapters: LoraAdapter[], rowAdapter: number[]): BatchedAdapter {
    if (rowAdapter.length === 0) throw new Error('a team pass needs at least one row');
    const slot = new Map<number, number>();
    const used: LoraAdapter[] = [];
    const usedIndex: number[] = [];
    const rowIndex = rowAdapter.map((k) => {
      if (!(k >= 0 && k < adapters.length)) throw new Error(`a team pass row names adapter ${k} of ${adapters.length}`);
      if (!slot.has(k)) {
        slot.set(k, used.length);
        used.push(adapters[k]);
        usedIndex.push(k);
      }
      return slot.get(k)!;
    });
    return new BatchedAdapter(used, usedIndex, rowIndex);
  }

  /**
   * How a pass reads the rows' pairs: 'gather' (A and B gathered per row, batched matmuls) or 'masked'
   * (every used pair's columns in one matmul, each row keeping its own; cheap while few adapters share a batch).
   * Masked by default: faster at every team size measured (bench/results/update-team-wasm.md: 1.59 against
   * 1.89 CPU s at 128 agents, the relay model, wasm).
   */
  static form: 'gather' | 'masked' = 'masked';
  private mask: tf.Tensor3D | null = null;

  /** [B, 1, U*r]: 1 on row i's own adapter's r columns. */
  private maskTensor(): tf.Tensor3D {
    if (!this.mask) {
      const r = this.used[0].settings.rank;
      const u = this.used.length;
      const m = new Float32Array(this.rowIndex.length * u * r);
      this.rowIndex.forEach((k, i) => m.fill(1, i * u * r + k * r, i * u * r + (k + 1) * r));
      this.mask = tf.keep(tf.tensor3d(m, [this.rowIndex.length, 1, u * r]));
    }
    return this.mask;
  }

  /** The row indices as a tensor, made on first use (kept out of any tidy scope; `dispose` frees it). */
  private rowTensor(): tf.Tensor1D {
    if (!this.rows) this.rows = tf.keep(tf.tensor1d(this.rowIndex, 'int32'));
    return this.rows;
  }

  rowLora(layer: number, proj: Projection): RowLoraPair | null {
    const pairs = this.used.map((a) => a.lora(layer, proj));
    if (pairs.every((p) => p === null)) return null;
    const present = pairs.filter((p): p is LoraPair => p !== null);
    if (present.length !== pairs.length) throw new Error(`a team pass: layer ${layer} ${proj} is adapted for some agents only`);
    if (BatchedAdapter.form === 'masked') {
      const a = present.length === 1 ? present[0].a : tf.concat(present.map((p) => p.a), 0); // [U*r, in]
      const b = present.length === 1 ? present[0].b : tf.concat(present.map((p) => p.b), 1); // [out, U*r]
      return { a: null as never, b: null as never, rows: this.rowTensor(), scale: present[0].scale, masked: { a, b, mask: this.maskTensor() } };
    }
    return {
      a: (present.length === 1 ? tf.expandDims(present[0].a, 0) : tf.stack(present.map((p) => p.a))) as tf.Tensor3D, // [U, r, in]
      b: (present.length === 1 ? tf.expandDims(present[0].b, 0) : tf.stack(present.map((p) => p.b))) as tf.Tensor3D, // [U, out, r]
      rows: this.rowTensor(),
      scale: present[0].scale,
    };
  }

  /** None where no agent adapts the projection; elsewhere refused (the decoders read this, one adapter per call). */
  lora(layer: number, proj: Projection): LoraPair | null {
    if (this.used.every((a) => a.lora(layer, proj) === null)) return null;
    throw new Error('a team view serves full forward passes (log-probs, gradients); decode each agent with its own adapter');
  }

  /** Every used adapter's variables, adapter after adapter (each in its own `variables()` order). */
  variables(): tf.Variable[] {
    return this.used.flatMap((a) => a.variables());
  }

  dispose(): void {
    this.rows?.dispose();
    this.rows = null;
    this.mask?.dispose();
    this.mask = null;
  }
}
