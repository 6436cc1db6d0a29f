/**
 * Switches for the engine's exact speed paths, each on by default. Each gives the numbers of the path it
 * replaced, to the bit or to float rounding (its own test says which), so nothing but a benchmark or a
 * test has a reason to turn one off: bench/speed.ts turns them off for "today's path" to time both in one
 * run, in a process of its own.
 *
 * - smallProducts: batched products of small entries through the project's SIMD kernel
 *   (kernels/bmm-wasm.ts, from kernels/wasm-matmul.ts), else tfjs-backend-wasm's batched loop.
 * - plainProducts: single products of an inner dimension up to 256 through the same kernel (the relay
 *   model's layers and their gradients), else XNNPACK after a physical transpose: the same numbers to the bit.
 * - ropeProduct: RoPE's rotate_half as one product x R (model/rope.ts), else split, negate and concat.
 * - uniqueRows: the per-agent PPO pass runs repeated samples once (rl/ppo.ts, model/score.ts).
 * - keptRows: the last layer runs its queries, MLP and final norm only at the positions read (a prefill's last,
 *   the update's action positions; model/kept-rows.ts), keys and values everywhere, else at every position.
 * - hostStep: the optimizer step's arithmetic (clip and AdamW) on the host where the backend keeps tensors in
 *   CPU memory (cpu, wasm; engine/host-math.ts), else ~16 kernel calls per LoRA tensor.
 * - groupedPrefill: prompts that start alike share their prefill per group, and a judge batches its
 *   prompts in token order (model/prefill.ts, model/generate.ts alikeBatches), else one prefix common to
 *   the whole batch and the prompts in the order given.
 *
 * Example: ENGINE_PATHS.uniqueRows = false;   // the update runs every sample's row again
 */
export const ENGINE_PATHS = {
  smallProducts: true, plainProducts: true, ropeProduct: true, uniqueRows: true, groupedPrefill: true, keptRows: true, hostStep: true,
};
