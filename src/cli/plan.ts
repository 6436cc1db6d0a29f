/**
 * `mappa plan --model DIR [--rows N --prompt-tokens N --action-tokens N --rank R ...]`: the memory
 * plan of a run (src/core/engine/model/memory-plan.ts) from the model's config.json alone — no weights are
 * read — and whether it fits the given limits. Prints a table on stdout.
 * Exit code: 0 when it fits, 3 when it does not (the problems, and what to change, are printed).
 */
import { parseConfig } from '../core/engine/model/config.ts';
import { fitsLimits, planMemory, type DeviceLimits, type PlanProjection } from '../core/engine/model/memory-plan.ts';
import { CliError, parseOptions, sourceFor } from './common.ts';

const USAGE = `usage: mappa plan --model DIR|URL [options]

  --rows N             rollout rows decoded at once, = samples per update (default 8)
  --prompt-tokens N    longest prompt (default 256)
  --action-tokens N    longest action (default 256)
  --rank R             LoRA rank (default 8)
  --targets LIST       adapted projections (default q_proj,k_proj,v_proj,o_proj)
  --micro-batch N      rows per training pass (default 4)
  --backend NAME       cpu | wasm | webgpu (default webgpu)
  --memory-gib X       memory the run may use (default: 4 on wasm, the wasm32 heap; none otherwise)
  --binding-mib X      maxStorageBufferBindingSize (default on webgpu: 128, WebGPU's default limit)
  --max-buffer-mib X   maxBufferSize (default on webgpu: 256, WebGPU's default limit)
`;

const TARGETS: PlanProjection[] = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'];

function positive(v: string | undefined, flag: string, fallback: number, whole = true): number {
  if (v === undefined) return fallback;
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0 || (whole && !Number.isInteger(n))) {
    throw new CliError(`${flag} must be a positive ${whole ? 'whole ' : ''}number, got "${v}"`);
  }
  return n;
}

const mib = (b: number) => (b / 2 ** 20).toFixed(1);

export async function planCommand(argv: string[]): Promise<void> {
  const o = parseOptions(argv, {
    model: { type: 'string' }, rows: { type: 'string' }, 'prompt-tokens': { type: 'string' }, 'action-tokens': { type: 'string' },
    rank: { type: 'string' }, targets: { type: 'string' }, 'micro-batch': { type: 'string' }, backend: { type: 'string' },
    'memory-gib': { type: 'string' }, 'binding-mib': { type: 'string' }, 'max-buffer-mib': { type: 'string' },
  }, USAGE);
  if (!o.model) throw new CliError(`--model is required (a folder or URL with config.json)\n\n${USAGE}`);
  const backend = (o.backend ?? 'webgpu') as 'cpu' | 'wasm' | 'webgpu';
  if (!['cpu', 'wasm', 'webgpu'].includes(backend)) throw new CliError(`--backend must be cpu, wasm or webgpu, got "${o.backend}"`);
  const targets = (o.targets ?? 'q_proj,k_proj,v_proj,o_proj').split(',').map((s) => s.trim()) as PlanProjection[];
  for (const t of targets) if (!TARGETS.includes(t)) throw new CliError(`--targets: "${t}" is not a projection; pick from ${TARGETS.join(', ')}`);

  const source = await sourceFor(o.model);
  const config = parseConfig(await source.readJson('config.json'), `${source.name}/config.json`);
  const plan = planMemory(config, {
    rows: positive(o.rows, '--rows', 8), promptTokens: positive(o['prompt-tokens'], '--prompt-tokens', 256),
    actionTokens: positive(o['action-tokens'], '--action-tokens', 256), rank: positive(o.rank, '--rank', 8), targets,
    microBatch: positive(o['micro-batch'], '--micro-batch', 4), backend,
  });
  const limits: DeviceLimits = {
    memory: o['memory-gib'] !== undefined ? positive(o['memory-gib'], '--memory-gib', 0, false) * 2 ** 30
      : backend === 'wasm' ? 4 * 2 ** 30 : undefined,
    maxStorageBufferBindingSize: o['binding-mib'] !== undefined ? positive(o['binding-mib'], '--binding-mib', 0, false) * 2 ** 20
      : backend === 'webgpu' ? 128 * 2 ** 20 : undefined,
    maxBufferSize: o['max-buffer-mib'] !== undefined ? positive(o['max-buffer-mib'], '--max-buffer-mib', 0, false) * 2 ** 20
      : backend === 'webgpu' ? 256 * 2 ** 20 : undefined,
  };
  const verdict = fitsLimits(plan, limits);
  const s = plan.settings;
  const lines = [
    `memory plan: ${source.name} (${config.numLayers} layers, hidden ${config.hiddenSize}, vocab ${config.vocabSize}), ${backend}, float32`,
    `run: ${s.rows} rows x (${s.promptTokens} prompt + ${s.actionTokens} action) tokens, LoRA rank ${s.rank} on ${s.targets.join(', ')}, ` +
      `micro-batch ${s.microBatch} (${plan.microBatchRows} rows per training pass)`,
    '',
    '| part | MiB |',
    '|---|---:|',
    `| weights | ${mib(plan.weights)} |`,
    `| LoRA + AdamW state + gradients | ${mib(plan.lora)} |`,
    `| rollout: KV cache | ${mib(plan.kvCache)} |`,
    `| rollout: prefill working set (one layer) | ${mib(plan.prefillWorking)} |`,
    `| update: activations, all layers, forward + backward | ${mib(plan.activations)} |`,
    `| update: [${plan.microBatchRows * s.actionTokens}, ${config.vocabSize}] logits and temporaries | ${mib(plan.logits)} |`,
    `| update: embeddings and final norm | ${mib(plan.updateOther)} |`,
    `| **rollout peak** | ${mib(plan.rolloutPeak)} |`,
    `| **update peak** | ${mib(plan.updatePeak)} |`,
    `| **peak** | ${mib(plan.peak)} |`,
    '',
    `largest buffer: ${plan.largest.what} [${plan.largest.shape.join(', ')}] ${mib(plan.largest.bytes)} MiB`,
    `limits: memory ${limits.memory ? `${mib(limits.memory)} MiB` : 'not given'}, ` +
      `storage binding ${limits.maxStorageBufferBindingSize ? `${mib(limits.maxStorageBufferBindingSize)} MiB` : 'not given'}, ` +
      `buffer ${limits.maxBufferSize ? `${mib(limits.maxBufferSize)} MiB` : 'not given'}`,
    verdict.fits ? 'fits: yes' : 'fits: NO',
    ...verdict.problems.map((p) => `- ${p}`),
  ];
  process.stdout.write(lines.join('\n') + '\n');
  if (!verdict.fits) throw new CliError('the run does not fit the limits above (see the list); exit code 3', 3);
}
