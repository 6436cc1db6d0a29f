/**
 * A lane Web Worker: one replica of the agent model on its own single-threaded `wasm` backend,
 * answering the training worker's LaneCompute jobs (update micro-batches and evaluation passes), as
 * the CLI's worker threads do (src/cli/train-workers.ts).
 *
 * For: src/worker/lane-workers.ts, which starts one per extra core. Not for: anything the page sees.
 * Protocol: the first job is `{kind: 'boot', spec, baseUrl, files?}` (the model to load, as the
 * training worker names it), answered `{kind: 'ready'}`; every later one is a LaneJob (core/compute/lane-server.ts).
 */
/// <reference lib="webworker" />
import { initBackend } from '../core/engine/backend.ts';
import { loadModel, type LoadedModel } from '../core/engine/model/load.ts';
import { laneTransfer, LaneServer, type LaneJob, type LaneResult } from '../core/compute/lane-server.ts';
import { serveLaneJobs } from '../core/compute/lane-pool.ts';
import type { TeamParts } from '../core/loop/rollout.ts';
import type { PlayedTeam } from '../core/loop/team.ts';
import { sqlFunctions, teamOf } from '../core/domains/index.ts';
import { toolsFor } from '../core/tools/runners.ts';
import type { Sandbox } from '../core/tools/sandbox.ts';
import { createSandbox } from '../core/tools/code-sandbox.ts';
import { useToolFrame } from '../core/tools/worker-host.ts';
import { createSqlTool } from '../core/tools/sql.ts';
import { pickedModels, sourceFor } from '../platform/browser/models.ts';
import type { PickedFile } from '../core/engine/model/sources.ts';

export interface LaneBoot { kind: 'boot'; spec: string; baseUrl: string; files?: PickedFile[] }

const scope = self as unknown as DedicatedWorkerGlobalScope;
let replica: { model: LoadedModel; server: LaneServer; baseUrl: string } | null = null;
let sandbox: Sandbox | null = null;
let sql: Sandbox | null = null;

async function boot(b: LaneBoot): Promise<LaneResult> {
  await initBackend({ force: 'wasm' });
  if (b.files) pickedModels.set(b.spec, b.files);
  const model = await loadModel(sourceFor(b.spec, b.baseUrl), { tokenizer: 'required' });
  replica = { model, server: new LaneServer(model.model, parts), baseUrl: b.baseUrl };
  return { kind: 'ready' };
}

/** The tools an evaluation pass needs, started on first use (Pyodide only if an agent runs Python). */
async function parts(config: PlayedTeam): Promise<TeamParts> {
  const tools = toolsFor(config.workflow, {
    code: () => (sandbox ??= createSandbox({ pyodideIndexURL: new URL('pyodide/', replica!.baseUrl).href })),
    sql: () => (sql ??= createSqlTool({ functions: sqlFunctions() })),
  });
  return { team: teamOf(config.workflow), agentModel: replica!.model, tools };
}

serveLaneJobs<LaneJob | LaneBoot, LaneResult>(
  {
    postMessage: (m, t) => scope.postMessage(m, t ?? []),
    // {kind:'tool-frame'}: the port to the page's opaque-origin frame for the code tools (lane-workers.ts), not a job.
    onMessage: (h) => scope.addEventListener('message', (ev) => (ev.data?.kind === 'tool-frame' ? useToolFrame(ev.data.port) : h(ev.data))),
  },
  (job, signal) => {
    if (job.kind === 'boot') return boot(job);
    if (!replica) throw new Error('lane worker: a job arrived before the model was loaded');
    return replica.server.handle(job, signal); // a pause stops it at its next decoding step
  },
  laneTransfer,
);
