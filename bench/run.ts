/**
 * Benchmark dispatcher: `npm run bench -- <name> [options]` runs `bench/<name>.ts`.
 *
 * For: picking one benchmark by name and handing it the rest of the command line.
 * Not for: measuring anything itself; each benchmark is its own module exporting
 * `main(argv: string[]): Promise<void>` (argv = the options after the name).
 *
 * Example: npm run bench -- engine --backends wasm --contexts 16,128
 *          -> imports ./engine.ts and calls main(['--backends', 'wasm', '--contexts', '16,128'])
 */
import { existsSync } from 'node:fs';

/** Known benchmarks: name -> what it measures. Each lives in bench/<name>.ts. */
const BENCHMARKS: Record<string, string> = {
  decode: 'one rollout decoding step (24 rows) at the shipped and SmolLM2-135M shapes against its matmul / weight-read bound, with kernels per step',
  engine: 'decoder speed (prefill, KV-cache and recompute decode) and peak memory per backend',
  update: 'one policy-gradient LoRA update step',
  projection: 'decode tok/s of SmolLM2-135M and Qwen2.5-0.5B on a laptop GPU, projected on paper from dispatches and weight bytes (every assumption a flag)',
  phases: 'seconds per phase (rollout, coach, update, eval) of two or more training runs, with the ratio to the first and its interval',
  rollouts: 'rollouts of a whole agent team',
  arms: 'finished runs as arms (e.g. judge-coached, rule-coached, outcome): final accuracies and every pair\'s paired difference, per seed and pooled',
  pretrain: 'one pretraining step of the tiny agent, one thread vs data-parallel worker threads',
  machine: 'measure this machine: decode and update tokens/s at a real shape, as fractions of the backend\'s own matvec / matmul rates (bench/gpu.sh runs it on a GPU)',
  memory: 'the memory plan (src/core/engine/model/memory-plan.ts) against the measured peak of a rollout and an update step, per backend',
  slice: 'the wasm Slice kernel, stock vs the project\'s, on one math-team rollout and update (alternated)',
  relay: 'process vs outcome reward on the relay team of 2, 4, 6 agents against the theory; --coach-sweep: against the coach\'s quality',
  credit: 'credit methods side by side on the relay of 2, 4, 6: outcome, process (rubric), counterfactual replays, state groups, at one budget of generations',
  tiers: 'the relay of 4 coached by the weak judge with the rubric on a budget of its actions (0-50 %), with and without teaching the judge during the run, beside the rubric and outcome reward',
  'judge-axis': 'the relay of 4 coached by judges of measured ranking accuracy: step accuracy gained against the judge\'s quality, beside the rubric and outcome reward',
  'judge-loss': 'a judge build\'s loss against its steps (the plateau and the drop), beside its checkpoints\' ranking',
  judge: 'the judge model against the rule labeller on the base team\'s own held-out work of both teams, with the always-the-mean baseline',
  'relay-cells': 'a relay team\'s greedy errors cell by cell (agent x input digit x number), untrained or from a run\'s checkpoint',
  'relay-positions': 'the shipped relay model and judge by position in teams up to 128 (1-6 seen in pretraining): step accuracy, judge ranking',
  snr: 'the relay of 2..128 agents untrained: outcome reward\'s rewarded rollouts against its luck floor, and each agent\'s policy-gradient signal-to-noise under outcome and process reward beside the Theta(N) line',
  'scale-page': 'the page\'s Scale the team (its runner and plan) headless in Node: team accuracy by size against the untrained team, with the luck floor and the words',
  scale: 'process (judge, rubric), outcome and a coach-free method on the relay of 2..128 agents: accuracies, rollouts to a step and a team target, theory lines; --recipe: at the shipped recipe\'s speed',
  corrections: 'a weak judge taught on K corrections (the rubric plays the person), picked by its uncertainty or at random: ranking against K',
  speed: 'agent steps per second of the relay of 32 and 128, today\'s path beside the new one, with each phase\'s matmul FLOP rate against the plain matmul rate',
  sandbox: 'the code tools\' isolation side by side with another checkout: start-up and each run, replayed on a math run\'s own code blocks, as a share of its iteration time',
  'tool-frame': 'the browser\'s Python tool in the opaque-origin frame against a same-origin worker, in the built site: start-up and each run',
  page: 'the page from npm start in headless Chromium against npm run train: first iteration, seconds per iteration',
};

interface BenchModule {
  main(argv: string[]): Promise<void>;
}

function usage(): string {
  const lines = Object.entries(BENCHMARKS).map(([name, what]) => {
    const ready = existsSync(new URL(`./${name}.ts`, import.meta.url));
    return `  ${name.padEnd(10)} ${what}${ready ? '' : ' (not written yet)'}`;
  });
  return `usage: npm run bench -- <name> [options]\nknown benchmarks:\n${lines.join('\n')}`;
}

async function run(argv: string[]): Promise<void> {
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h') {
    console.log(usage());
    return;
  }
  if (!(name in BENCHMARKS)) {
    throw new Error(`bench/run.ts: unknown benchmark "${name}".\n${usage()}`);
  }
  const file = new URL(`./${name}.ts`, import.meta.url);
  if (!existsSync(file)) {
    throw new Error(`bench/run.ts: benchmark "${name}" is listed but bench/${name}.ts does not exist yet.\n${usage()}`);
  }
  const mod = (await import(`./${name}.ts`)) as Partial<BenchModule>;
  if (typeof mod.main !== 'function') {
    throw new Error(`bench/${name}.ts must export "main(argv: string[]): Promise<void>"`);
  }
  await mod.main(rest);
}

run(process.argv.slice(2)).catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exitCode = 1;
});
