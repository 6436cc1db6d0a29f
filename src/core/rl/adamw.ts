/**
 * AdamW (decoupled weight decay, Loshchilov & Hutter) over a list of tfjs variables, with state
 * that can be saved and restored exactly, so a checkpointed run resumes bit-for-bit.
 *
 * For: the adapters' parameters, and the learning rate over a run (`lrAt`, below). Not for: gradient clipping
 * (update-steps.ts `clippedStep` does it first, and picks the step: `apply` on the device, or `applyHost` where the
 * backend keeps tensors in CPU memory, the same numbers; engine/host-math.ts).
 *
 * m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;  w -= lr (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps) + lr wd w
 * Example: one step from w = 1 with g = 0.5, lr 0.1, wd 0: m^ = 0.5, v^ = 0.25 -> w = 1 - 0.1 = 0.9.
 */
import * as tf from '@tensorflow/tfjs-core';

export interface AdamWSettings {
  lr: number;
  beta1: number;
  beta2: number;
  eps: number;
  /** Decoupled weight decay; absent: none. A run's is its config's (`TrainConfig.weightDecay`, config.ts). */
  weightDecay?: number;
}

/** The moments' defaults. The learning rate and the weight decay have none here: they are the run's (`TrainConfig.lr`, `.weightDecay`). */
const DEFAULT_ADAMW: Omit<AdamWSettings, 'lr' | 'weightDecay'> = { beta1: 0.9, beta2: 0.999, eps: 1e-8 };

export interface AdamWState {
  step: number;
  m: Float32Array[];
  v: Float32Array[];
}

export class AdamW {
  settings: AdamWSettings;
  private readonly vars: tf.Variable[];
  /** The moments, on the device (`apply`) or on the host (`applyHost`): whichever the last step used. */
  private device: { m: tf.Variable[]; v: tf.Variable[] } | null = null;
  private host: { m: Float32Array[]; v: Float32Array[] } | null;
  step = 0;

  constructor(vars: tf.Variable[], settings: Partial<AdamWSettings> & Pick<AdamWSettings, 'lr'>) {
    this.settings = { ...DEFAULT_ADAMW, ...settings };
    this.vars = vars;
    this.host = { m: vars.map((x) => new Float32Array(x.size)), v: vars.map((x) => new Float32Array(x.size)) };
  }

  /** Apply one update from gradients given in the same order as the variables (tensors: on the device). */
  apply(grads: tf.Tensor[]): void {
    if (grads.length !== this.vars.length) throw new Error(`AdamW: ${grads.length} gradients for ${this.vars.length} variables`);
    this.step++;
    const { lr, beta1, beta2, eps, weightDecay } = this.settings;
    const c1 = 1 - Math.pow(beta1, this.step);
    const c2 = 1 - Math.pow(beta2, this.step);
    const moments = this.onDevice();
    tf.tidy(() => {
      this.vars.forEach((w, i) => {
        const g = grads[i];
        const m = tf.add(tf.mul(moments.m[i], beta1), tf.mul(g, 1 - beta1));
        const v = tf.add(tf.mul(moments.v[i], beta2), tf.mul(tf.square(g), 1 - beta2));
        moments.m[i].assign(m);
        moments.v[i].assign(v);
        const update = tf.div(tf.div(m, c1), tf.add(tf.sqrt(tf.div(v, c2)), eps));
        const decayed = weightDecay !== undefined && weightDecay > 0 ? tf.mul(w, 1 - lr * weightDecay) : w;
        w.assign(tf.sub(decayed, tf.mul(update, lr)));
      });
    });
  }

  /**
   * The same step with the arithmetic on the host, for backends whose tensors live in CPU memory (cpu, wasm:
   * engine/host-math.ts): every operation of `apply` in the same order, each rounded to float32 as the device's
   * kernels round it, so the numbers are `apply`'s to the bit; one write a variable instead of ~13 kernel calls.
   */
  applyHost(grads: Float32Array[]): void {
    if (grads.length !== this.vars.length) throw new Error(`AdamW: ${grads.length} gradients for ${this.vars.length} variables`);
    this.step++;
    const f = Math.fround;
    const { lr, beta1, beta2, eps, weightDecay } = this.settings;
    const [b1, ob1, b2, ob2] = [f(beta1), f(1 - beta1), f(beta2), f(1 - beta2)];
    const [c1, c2, e, rate] = [f(1 - Math.pow(beta1, this.step)), f(1 - Math.pow(beta2, this.step)), f(eps), f(lr)];
    const keep = weightDecay !== undefined && weightDecay > 0 ? f(1 - lr * weightDecay) : null;
    const moments = this.onHost();
    this.vars.forEach((w, i) => {
      const g = grads[i];
      const m = moments.m[i];
      const v = moments.v[i];
      const out = new Float32Array(w.dataSync() as Float32Array);
      for (let j = 0; j < out.length; j++) {
        m[j] = f(f(m[j] * b1) + f(g[j] * ob1));
        v[j] = f(f(v[j] * b2) + f(f(g[j] * g[j]) * ob2));
        const update = f(f(m[j] / c1) / f(f(Math.sqrt(f(v[j] / c2))) + e));
        out[j] = f((keep === null ? out[j] : f(out[j] * keep)) - f(update * rate));
      }
      tf.tidy(() => w.assign(tf.tensor(out, w.shape))); // the variable keeps the data, the tidy frees the tensor
    });
  }

  /** The moments as device variables (made from the host's on first need). */
  private onDevice(): { m: tf.Variable[]; v: tf.Variable[] } {
    if (!this.device) {
      const h = this.host!;
      this.device = tf.tidy(() => ({ // the tidy frees the initial values, the variables keep their data
        m: this.vars.map((x, i) => tf.variable(tf.tensor(h.m[i], x.shape), false)),
        v: this.vars.map((x, i) => tf.variable(tf.tensor(h.v[i], x.shape), false)),
      }));
      this.host = null;
    }
    return this.device;
  }

  /** The moments as host arrays (read back from the device's, if a step ran there). */
  private onHost(): { m: Float32Array[]; v: Float32Array[] } {
    if (!this.host) {
      const d = this.device!;
      this.host = { m: d.m.map((t) => new Float32Array(t.dataSync() as Float32Array)), v: d.v.map((t) => new Float32Array(t.dataSync() as Float32Array)) };
      this.dropDevice();
    }
    return this.host;
  }

  async getState(): Promise<AdamWState> {
    const read = async (t: tf.Tensor) => (await t.data()) as Float32Array;
    if (this.device) return { step: this.step, m: await Promise.all(this.device.m.map(read)), v: await Promise.all(this.device.v.map(read)) };
    return { step: this.step, m: this.host!.m.map((a) => a.slice()), v: this.host!.v.map((a) => a.slice()) };
  }

  setState(state: AdamWState): void {
    if (state.m.length !== this.vars.length || state.v.length !== this.vars.length) {
      throw new Error(`AdamW: saved state has ${state.m.length} slots but the adapter has ${this.vars.length} parameters; ` +
        'was it saved for another adapter configuration?');
    }
    state.m.forEach((d, i) => {
      if (d.length !== this.vars[i].size || state.v[i].length !== this.vars[i].size) {
        throw new Error(`AdamW: saved slot ${i} has ${d.length} values but its parameter has ${this.vars[i].size}; ` +
          'was it saved for another adapter configuration?');
      }
    });
    this.step = state.step;
    this.dropDevice();
    this.host = { m: state.m.map((d) => Float32Array.from(d)), v: state.v.map((d) => Float32Array.from(d)) };
  }

  /** Frees the device moments, if any (the host's, or none, stand for them). */
  private dropDevice(): void {
    if (this.device) tf.dispose([...this.device.m, ...this.device.v]);
    this.device = null;
  }

  dispose(): void {
    this.dropDevice();
    this.host = null;
  }
}

/**
 * The learning rate over a run: the run's `lr` at its first iteration, falling on a half cosine to
 * `lr x lrFinal` at its last (lrFinal 1, the default, keeps it constant). A late, small rate stops the
 * updates from breaking what earlier ones fixed: on the relay, the last greedy errors of a long run are
 * mostly new ones (off-by-one replies) made by the updates themselves (docs/relay-128-recipe.md).
 * The trainer sets each agent's rate to it before the update.
 *
 * Example: lrAt(0.002, 0.1, 1, 21) -> 0.002; lrAt(0.002, 0.1, 11, 21) -> 0.0011 (half way); lrAt(0.002, 0.1, 21, 21) -> 0.0002
 */
export function lrAt(lr: number, lrFinal: number, iteration: number, iterations: number): number {
  if (lrFinal === 1 || iterations <= 1) return lr;
  const t = Math.min(1, Math.max(0, (iteration - 1) / (iterations - 1)));
  return lr * (lrFinal + (1 - lrFinal) * 0.5 * (1 + Math.cos(Math.PI * t)));
}
