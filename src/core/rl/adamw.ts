/**
 * AdamW (decoupled weight decay, Loshchilov & Hutter) over a list of tfjs variables, with state
 * that can be saved and restored exactly, so a checkpointed run resumes bit-for-bit.
 *
 * For: the adapters' parameters, and the learning rate over a run (`lrAt`, below). Not for: gradient clipping
 * (update.ts does it before `step`).
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
  private m: tf.Variable[];
  private v: tf.Variable[];
  step = 0;

  constructor(vars: tf.Variable[], settings: Partial<AdamWSettings> & Pick<AdamWSettings, 'lr'>) {
    this.settings = { ...DEFAULT_ADAMW, ...settings };
    this.vars = vars;
    this.m = vars.map((x) => tf.variable(tf.zerosLike(x), false));
    this.v = vars.map((x) => tf.variable(tf.zerosLike(x), false));
  }

  /** Apply one update from gradients given in the same order as the variables. */
  apply(grads: tf.Tensor[]): void {
    if (grads.length !== this.vars.length) throw new Error(`AdamW: ${grads.length} gradients for ${this.vars.length} variables`);
    this.step++;
    const { lr, beta1, beta2, eps, weightDecay } = this.settings;
    const c1 = 1 - Math.pow(beta1, this.step);
    const c2 = 1 - Math.pow(beta2, this.step);
    tf.tidy(() => {
      this.vars.forEach((w, i) => {
        const g = grads[i];
        const m = tf.add(tf.mul(this.m[i], beta1), tf.mul(g, 1 - beta1));
        const v = tf.add(tf.mul(this.v[i], beta2), tf.mul(tf.square(g), 1 - beta2));
        this.m[i].assign(m);
        this.v[i].assign(v);
        const update = tf.div(tf.div(m, c1), tf.add(tf.sqrt(tf.div(v, c2)), eps));
        const decayed = weightDecay !== undefined && weightDecay > 0 ? tf.mul(w, 1 - lr * weightDecay) : w;
        w.assign(tf.sub(decayed, tf.mul(update, lr)));
      });
    });
  }

  async getState(): Promise<AdamWState> {
    return {
      step: this.step,
      m: await Promise.all(this.m.map(async (t) => (await t.data()) as Float32Array)),
      v: await Promise.all(this.v.map(async (t) => (await t.data()) as Float32Array)),
    };
  }

  setState(state: AdamWState): void {
    if (state.m.length !== this.vars.length || state.v.length !== this.vars.length) {
      throw new Error(`AdamW: saved state has ${state.m.length} slots but the adapter has ${this.vars.length} parameters; ` +
        'was it saved for another adapter configuration?');
    }
    this.step = state.step;
    state.m.forEach((d, i) => this.m[i].assign(tf.tensor(d, this.vars[i].shape)));
    state.v.forEach((d, i) => this.v[i].assign(tf.tensor(d, this.vars[i].shape)));
  }

  dispose(): void {
    for (const t of [...this.m, ...this.v]) t.dispose();
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
