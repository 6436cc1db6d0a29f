/**
 * The learning rate over a run: the run's `lr` at its first iteration, falling on a half cosine to
 * `lr x lrFinal` at its last (lrFinal 1, the default, keeps it constant). A late, small rate stops the
 * updates from breaking what earlier ones fixed: on the relay, the last greedy errors of a long run are
 * mostly new ones (off-by-one replies) made by the updates themselves (docs/relay-128-recipe.md).
 *
 * For: `lrAt(lr, lrFinal, iteration, iterations)`, called by the trainer before each update.
 * Not for: the optimizer's step (adamw.ts).
 *
 * Example: lrAt(0.002, 0.1, 1, 21) -> 0.002; lrAt(0.002, 0.1, 11, 21) -> 0.0011 (half way); lrAt(0.002, 0.1, 21, 21) -> 0.0002
 */
export function lrAt(lr: number, lrFinal: number, iteration: number, iterations: number): number {
  if (lrFinal === 1 || iterations <= 1) return lr;
  const t = Math.min(1, Math.max(0, (iteration - 1) / (iterations - 1)));
  return lr * (lrFinal + (1 - lrFinal) * 0.5 * (1 + Math.cos(Math.PI * t)));
}
