// Types shared by the test-only browser harness (harness.ts), its checks (checks/*.ts) and the
// Node side that calls window.runHarness through playwright (harness.test.ts and later suites).

import type { BackendInfo, BackendName } from '../../src/core/engine/backend.ts';

/** What a check gets: the chosen backend and a way to read files from test/fixtures. */
export interface HarnessContext {
  backend: BackendInfo;
  /** Bytes of test/fixtures/<rel>, e.g. fetchBytes('parity/llama/model.safetensors'). */
  fetchBytes(rel: string): Promise<Uint8Array>;
  /** Parsed JSON of test/fixtures/<rel>, e.g. fetchJson('parity/llama/config.json'). */
  fetchJson<T = unknown>(rel: string): Promise<T>;
}

/**
 * One browser check. `run` returns something JSON-serializable; the Node test asserts on it.
 * Register by adding a file test/e2e/checks/<name>.ts that exports `check`.
 */
export interface HarnessCheck {
  name: string;
  description: string;
  run(ctx: HarnessContext): Promise<unknown>;
}

export interface HarnessOptions {
  /** Backend to force before the check (default 'webgpu'). */
  backend?: BackendName;
}

export type HarnessResult =
  | { ok: true; name: string; backend: BackendInfo; ms: number; result: unknown }
  | { ok: false; name: string; error: string; stack?: string; backend?: BackendInfo };

/** What harness.html puts on window. */
export interface HarnessWindow {
  runHarness(name: string, opts?: HarnessOptions): Promise<HarnessResult>;
  harnessChecks(): string[];
  harnessReady: boolean;
}
