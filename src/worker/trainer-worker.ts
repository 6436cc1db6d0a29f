/**
 * The training worker: hosts the lab (src/core/lab/lab.ts: the headless core's backend, models,
 * coach, sandbox and run) in a Web Worker so the page stays responsive. This file only wires the
 * browser's pieces into the lab and passes messages: each request is one call of the lab's method
 * of the same name, and the lab's events go to the page as they come.
 *
 * For: answering the requests of core/lab/protocol.ts. Not for: drawing anything (the page
 * subscribes through client.ts) or any training logic (the lab and core/loop).
 *
 * Persistence: each run lives in IndexedDB (platform/browser/store-idb.ts) under an id derived from
 * its whole configuration, so opening the same configuration (the same URL) resumes that run.
 */
/// <reference lib="webworker" />
import { Lab } from '../core/lab/lab.ts';
import type { LabPlatform } from '../core/lab/shelf.ts';
import { REQUEST_TYPES, type EventMessage, type ReplyMessage, type RequestMessage } from '../core/lab/protocol.ts';
import { createSandbox } from '../core/tools/code-sandbox.ts';
import { relayToolFrame, useToolFrame } from '../core/tools/worker-host.ts';
import { pickedModels, sourceFor } from '../platform/browser/models.ts';
import { IdbStore, listRuns } from '../platform/browser/store-idb.ts';
import { claimRun } from '../platform/browser/run-lock.ts';
import { laneCount, startWebLanes } from './lane-workers.ts';

const scope = self as unknown as DedicatedWorkerGlobalScope;

/** From the page: a port to the code tools' frame (the page sends it once, before its first request). */
export interface ToolFrameMessage { type: 'tool-frame'; port: MessagePort }

const browser: LabPlatform = {
  store: (runId) => new IdbStore(runId),
  listRuns,
  modelSource: sourceFor,
  pickModel: (spec, files) => void pickedModels.set(spec, files),
  laneCount: () => laneCount(),
  startLanes: (count, spec, baseUrl) => startWebLanes(count, spec, baseUrl, pickedModels.get(spec), relayToolFrame),
  createSandbox: (baseUrl) => createSandbox({ pyodideIndexURL: new URL('pyodide/', baseUrl).href }),
  deviceMemoryGiB: (navigator as Navigator & { deviceMemory?: number }).deviceMemory,
  claimRun,
};

const lab = new Lab(browser, (event) => scope.postMessage({ type: 'event', event } satisfies EventMessage));

scope.onmessage = async (ev: MessageEvent<RequestMessage | ToolFrameMessage>) => {
  // The page's opaque-origin frame for the code tools (src/platform/browser/tool-frame.ts): not a request.
  if (ev.data.type === 'tool-frame') return useToolFrame(ev.data.port);
  const { id, type, args } = ev.data;
  let reply: ReplyMessage;
  try {
    if (!(REQUEST_TYPES as readonly string[]).includes(type)) throw new Error(`the training worker has no request "${String(type)}"`);
    reply = { type: 'reply', id, ok: true, value: await (lab[type] as (a: unknown) => Promise<unknown>).call(lab, args) };
  } catch (e) {
    reply = { type: 'reply', id, ok: false, error: (e as Error)?.message ?? String(e) };
  }
  scope.postMessage(reply);
};
