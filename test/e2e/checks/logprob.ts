// Browser check: the fused chosen-token log-prob kernel (src/core/engine/kernels/logprob-webgpu.ts) on the
// harness' backend (webgpu) against the plain-ops path on tfjs' cpu backend in the same page,
// forward and gradient, including a run forced into several row chunks. Returns the largest
// absolute differences, whether the fused path was taken, and the tensor-leak counts.

import '@tensorflow/tfjs-core/dist/register_all_gradients';
import { initBackend } from '../../../src/core/engine/backend.ts';
import { fusedLogProbsActive, selectedLogProbs, selectedLogProbsPlain } from '../../../src/core/engine/kernels/logprob.ts';
import { setLogProbChunkLimits } from '../../../src/core/engine/kernels/logprob-webgpu.ts';
import { registerCustomKernels } from '../../../src/core/engine/kernels/register.ts';
import { makeCase, maxAbsDiff, runLogProb, type LogProbRun } from '../../helpers/logprob-cases.ts';
import type { HarnessCheck } from '../harness-types.ts';

const CASES = {
  v97: makeCase(8, 97, 1, { outOfRange: true }),
  v151936: makeCase(4, 151936, 3),
};
/** Runs on the tested backend; `chunks` is the forced rows-per-chunk limit (none: device limits). */
const RUNS = [
  { label: 'v97', c: CASES.v97, chunks: undefined },
  { label: 'v97-chunks3', c: CASES.v97, chunks: 3 },
  { label: 'v151936', c: CASES.v151936, chunks: undefined },
  { label: 'v151936-chunks1', c: CASES.v151936, chunks: 1 },
];

export const check: HarnessCheck = {
  name: 'logprob-fused-vs-cpu',
  description: 'fused selected log-prob forward + gradient (V=97, 151936; forced chunks) vs the plain path on tfjs cpu',
  async run(ctx) {
    const tested = ctx.backend.name;
    registerCustomKernels(); // idempotent; src/core/engine/backend.ts may already have done it
    const fused = fusedLogProbsActive();
    const got: Record<string, LogProbRun> = {};
    try {
      for (const r of RUNS) {
        setLogProbChunkLimits({ maxRowsPerChunk: r.chunks });
        got[r.label] = await runLogProb(selectedLogProbs, r.c);
      }
    } finally {
      setLogProbChunkLimits({});
    }
    await initBackend({ force: 'cpu' });
    const ref: Record<string, LogProbRun> = {};
    for (const [name, c] of Object.entries(CASES)) ref[name] = await runLogProb(selectedLogProbsPlain, c);
    await initBackend({ force: tested }); // leave the page on the backend the harness chose
    const diffs = RUNS.map((r) => {
      const want = ref[r.label.split('-')[0]];
      return {
        label: r.label,
        logp: maxAbsDiff(got[r.label].logp, want.logp),
        dlogits: maxAbsDiff(got[r.label].dlogits, want.dlogits),
        leaked: got[r.label].leaked,
      };
    });
    return { backend: tested, fused, diffs };
  },
};
