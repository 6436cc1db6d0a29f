// Real model shapes through the page, end to end, on webgpu (SwiftShader in headless Chromium).
//
// Models of SmolLM2-135M's and Qwen2.5-0.5B's shapes (their vocabularies, widths, heads and MLP
// sizes; random weights; 1 of their layers: scripts/shape-model.ts) are served in the Hugging Face
// hub layout and loaded by the page's URL loader (?config={"agentModel": "/hub/<shape>"}). The page
// runs one MAPPA iteration (Step: rollouts of a math team, the rule coach, the update), then
// exports the adapters as PEFT, imports one back, and the files load in Node against the shape.
//   - SmolLM2-135M under the adapter's limits (SwiftShader here: 1 GiB bindings);
//   - Qwen2.5-0.5B under WebGPU's default limits (?limits=default: 128 MiB bindings, 256 MiB
//     buffers), where its 519 MiB embedding cannot be one buffer and is held in 5 row blocks
//     (src/core/engine/model/vocab-table.ts).
// SwiftShader multiplies [2, 896] by Qwen's [896, 151936] output projection in about 20 s, so the
// settings are cut to what it runs in a few minutes: one layer, one agent, one problem sampled twice,
// 2-3 tokens. It runs in `npm run test:slow` (vite.config.ts SLOW_TESTS), not in `npm test`.
// Timings go to the log; the README keeps them. Skips loudly without Debian's chromium.

import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { unzipSync } from 'fflate';
import { initBackend } from '../../src/core/engine/backend.ts';
import { importPeft } from '../../src/core/engine/lora/peft.ts';
import { shapeConfig } from '../../src/core/engine/model/shapes.ts';
import { memorySource } from '../../src/core/engine/model/sources.ts';
import { writeShapeModel } from '../../scripts/shape-model.ts';
import { chromiumAvailable, ensureBuilt, launchChromium, openPage, resultsDir, screenshot, serveStatic, type StaticServer } from '../helpers/browser.ts';
import { readState, waitFor } from '../helpers/page-state.ts';
import { warnIfSkipped } from '../helpers/webgpu.ts';

const have = chromiumAvailable();
warnIfSkipped('real-shape e2e suite (test/e2e/shapes.test.ts)', have);

const LAYERS = 1;
/** One agent turn a case: SwiftShader's output projection is the cost (Qwen's about 6x SmolLM2's). */
const CASES = [
  { shape: 'smollm2-135m', limits: 'adapter', agents: ['solver'], tokens: 3 },
  { shape: 'qwen2.5-0.5b', limits: 'default', agents: ['solver'], tokens: 2 },
] as const;

/** The run: a math team of `agents` with `tokens`-token turns, one problem sampled twice; no evaluation before iteration 2. */
function runPatch(hubPath: string, agents: readonly string[], tokens: number) {
  const solver = { id: 'solver', role: 'Problem Solver', system: 'Solve it.', user: '{{problem}}', maxTokens: tokens, turns: 1, tools: [], trainable: true };
  const verifier = { id: 'verifier', role: 'Verifier', system: 'Answer as \\boxed{n}.', user: '{{problem}}\n{{output:solver}}', maxTokens: tokens, turns: 1, tools: [], trainable: true };
  const team = agents.length === 1 ? [{ ...solver, final: true }] : [solver, { ...verifier, final: true }];
  return {
    agentModel: hubPath,
    iterations: 2,
    promptsPerIteration: 1,
    samplesPerPrompt: 2,
    evalEvery: 2,
    evalTasks: 1,
    // Every 2-3-token action hits its budget; MAPPA masks such actions out of the loss, which here would
    // leave the update nothing to train on.
    // No KL term: the reference pass would add a third forward over the output projection.
    update: { maskTruncated: false, klCoef: 0 },
    workflow: { name: `math-${agents.length}`, domain: 'math', agents: team },
  };
}

type Lab = { lab: Record<string, (args: object) => Promise<unknown>> };

describe.skipIf(!have.ok)('real model shapes through the page on webgpu', () => {
  let server: StaticServer;
  let browser: Browser;
  const dirs = Object.fromEntries(CASES.map((c) => [c.shape, path.join(resultsDir, 'shape-models', `${c.shape}-${LAYERS}`)]));

  beforeAll(async () => {
    for (const c of CASES) {
      const t0 = Date.now();
      writeShapeModel(dirs[c.shape], c.shape, LAYERS);
      console.log(`[shapes] wrote ${dirs[c.shape]} in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    }
    await initBackend({ force: 'cpu' }); // for reading the exported adapters back here
    server = await serveStatic(await ensureBuilt('site'), Object.fromEntries(CASES.map((c) => [`/hub/${c.shape}/resolve/main/`, dirs[c.shape]])));
    browser = await launchChromium();
  }, 300_000);
  afterAll(async () => {
    await browser?.close();
    await server?.close();
    for (const dir of Object.values(dirs)) fs.rmSync(dir, { recursive: true, force: true });
  });

  for (const { shape, limits, agents, tokens } of CASES) {
    it(`${shape}: loads through the URL loader, trains one iteration, exports PEFT that loads back (${limits} limits)`, async () => {
      const query = new URLSearchParams({ backend: 'webgpu', baseline: '0', config: JSON.stringify(runPatch(`/hub/${shape}`, agents, tokens)) });
      if (limits === 'default') query.set('limits', 'default');
      const t0 = Date.now();
      const page = await openPage(browser, `${server.url}?${query}`);
      await waitFor(page, (s) => s.state === 'ready', 240_000, 'the model loaded');
      const loaded = (Date.now() - t0) / 1000;
      const info = await page.evaluate(() => (window as unknown as { __mappa: { backend: { name: string; adapter: { limits: { maxStorageBufferBindingSize: number } } } } }).__mappa.backend);
      expect(info.name).toBe('webgpu');
      const binding = info.adapter.limits.maxStorageBufferBindingSize;
      if (limits === 'default') expect(binding).toBe(128 * 2 ** 20);

      const t1 = Date.now();
      await page.getByTestId('btn-step').click();
      const s = await waitFor(page, (x) => x.metrics >= 1 && x.state === 'ready', 1_500_000, 'one iteration');
      const trained = (Date.now() - t1) / 1000;
      expect(s.errors).toEqual([]);
      // The update ran: every agent trained on its samples.
      const m = await page.evaluate(() => (window as unknown as { __mappa: { run: { metrics: { updateTokensPerSecond: number; perAgent: Record<string, { samples: number }> }[] } } }).__mappa.run.metrics[0]);
      for (const agent of agents) expect(m.perAgent[agent].samples).toBeGreaterThan(0);
      expect(m.updateTokensPerSecond).toBeGreaterThan(0);

      // Export every agent's adapter (a zip of PEFT folders), import the solver's back, export again.
      const [first, again] = await page.evaluate(async () => {
        const { lab } = (window as unknown as { __mappa: { client: Lab } }).__mappa.client;
        const b64 = (u: Uint8Array) => {
          let s = '';
          for (let i = 0; i < u.length; i += 0x8000) s += String.fromCharCode(...u.subarray(i, i + 0x8000));
          return btoa(s);
        };
        const one = (await lab.export({ what: 'adapters' })) as { bytes: Uint8Array };
        await lab.import({ adapter: { agentId: 'solver', files: { 'adapters.zip': one.bytes } } });
        const two = (await lab.export({ what: 'adapters' })) as { bytes: Uint8Array };
        return [b64(one.bytes), b64(two.bytes)];
      });
      const zipOne = unzipSync(Buffer.from(first, 'base64'));
      const zipTwo = unzipSync(Buffer.from(again, 'base64'));
      for (const agent of agents) {
        expect(Object.keys(zipOne)).toEqual(expect.arrayContaining([`${agent}/adapter_config.json`, `${agent}/adapter_model.safetensors`]));
      }
      expect(Buffer.from(zipTwo['solver/adapter_model.safetensors']).equals(Buffer.from(zipOne['solver/adapter_model.safetensors']))).toBe(true);
      // The same files load in Node against the shape's config (an independent reader of the export).
      const config = shapeConfig(shape, LAYERS);
      for (const agent of agents) {
        const files = Object.fromEntries(Object.entries(zipOne).filter(([n]) => n.startsWith(`${agent}/`)).map(([n, b]) => [n.slice(agent.length + 1), b]));
        const adapter = await importPeft(memorySource(files, agent), config, agent);
        expect(adapter.variables().length).toBeGreaterThan(0);
        adapter.dispose();
      }
      const roundTrip = { bytes: Buffer.from(first, 'base64').length };
      const plan = await page.evaluate(() => document.querySelector('[data-testid=memory-plan]')?.textContent ?? '');
      console.log(`[shapes] ${shape} x${LAYERS} layers, ${agents.length} agent(s) x ${tokens} tokens, ${limits} limits (binding ${binding / 2 ** 20} MiB): ready ${loaded.toFixed(1)} s after opening; ` +
        `Step -> iteration 1 ${trained.toFixed(1)} s; adapters zip ${(roundTrip.bytes / 2 ** 20).toFixed(1)} MiB; plan: ${plan.trim()}`);
      await screenshot(page, `shapes-${shape}-${limits}`);
      expect((await readState(page)).errors).toEqual([]);
      await page.context().close();
    }, 1_700_000);
  }
});
