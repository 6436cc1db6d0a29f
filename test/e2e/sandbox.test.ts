// The sandbox page end to end, built (dist/) and served on 127.0.0.1, in Debian's headless Chromium
// on SwiftShader WebGPU: it opens on webgpu, trains two iterations in the worker (charts and
// inspector update, typing stays responsive during the update), exports a valid PEFT adapter zip,
// resumes after a reload, loads a hub-layout model folder through the URL loader, and survives a
// WebGPU device loss by restarting the GPU in the page (a Step on it in `npm run test:slow`), or by continuing on wasm.
//
// The page trains the embedded default: the shipped models in models/, built into the site. Speed:
// SwiftShader is a CPU GPU (~1 s per decoding step here), so the run is small (1 prompt x 2 samples,
// 4-token budgets, LoRA rank 2 on q/v, rule coach, no baseline or periodic evaluation): the page's
// plumbing is tested, not the models' skill. A tiny random model (test/helpers/tiny-team.ts) stands in
// for a remote hub repository in the URL-loader test. The tests share one page and run in order.
// Screenshots: test-results/sandbox-*.png.

import fs from 'node:fs';
import path from 'node:path';
import { unzipSync } from 'fflate';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { MATH_CHAIN } from '../../src/core/domains/math/index.ts';
import { DATA_TEAM_SETTINGS } from '../../src/core/domains/data/team.ts';
import { decodeSafetensors } from '../../src/core/engine/model/safetensors.ts';
import {
  chromiumAvailable, ensureBuilt, launchChromium, repoRoot, resultsDir, screenshot, serveStatic, type StaticServer,
} from '../helpers/browser.ts';
import { warnIfSkipped } from '../helpers/webgpu.ts';
import { writeTinyModel } from '../helpers/tiny-team.ts';

const have = chromiumAvailable();
warnIfSkipped('sandbox e2e suite (test/e2e/sandbox.test.ts)', have);

const TINY = path.join(resultsDir, 'tiny-models');
/** A training Step on the restarted GPU (minutes on SwiftShader): in `npm run test:slow` (MAPPA_SLOW=1) only. */
const STEP_ON_RESTARTED_GPU = process.env.MAPPA_SLOW === '1';
const CONFIG = {
  promptsPerIteration: 1, samplesPerPrompt: 2, evalTasks: 2, evalEvery: 50, checkpointEvery: 1, iterations: 50,
  coach: { kind: 'rule' }, lora: { rank: 2, targetModules: ['q_proj', 'v_proj'] },
  workflow: { ...MATH_CHAIN, agents: MATH_CHAIN.agents.map((a) => ({ ...a, maxTokens: 4 })) },
};

interface RunView {
  state: string;
  stateMessage?: string;
  iteration: number;
  metrics: unknown[];
  errors: string[];
  backend: { name: string; adapter?: { vendor: string; architecture: string } } | null;
  model: { name: string } | null;
  progress: Record<string, unknown>;
  trajectories: { iteration: number; trajectories: unknown[] } | null;
}
const view = (page: Page) => page.evaluate(() => {
  const r = (window as unknown as { __mappa: { run: RunView } }).__mappa.run;
  return JSON.parse(JSON.stringify({
    state: r.state, stateMessage: r.stateMessage, iteration: r.iteration, metrics: r.metrics, errors: r.errors, backend: r.backend,
    model: r.model, progress: r.progress, trajectories: r.trajectories,
  })) as RunView;
});
// Generous: the suite shares 2 cores with the other e2e files (start.test.ts trains the default run at the same time).
const waitRun = (page: Page, predicate: string, timeout = 540_000) =>
  page.waitForFunction(`(() => { const r = window.__mappa && window.__mappa.run; return Boolean(r && (${predicate})); })()`, undefined, { timeout, polling: 250 });

describe.skipIf(!have.ok)('the sandbox page in headless Chromium (webgpu)', () => {
  let server: StaticServer;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    writeTinyModel(path.join(TINY, 'hub/org/tiny/resolve/main'), 2);
    const dist = await ensureBuilt('site');
    server = await serveStatic(dist, { '/hub/': path.join(TINY, 'hub') });
    browser = await launchChromium();
    const url = `${server.url}?backend=webgpu&baseline=0&config=${encodeURIComponent(JSON.stringify(CONFIG))}`;
    page = await browser.newPage({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
    page.on('pageerror', (e) => console.warn(`[browser pageerror] ${e.message}`));
    page.on('console', (m) => { if (m.type() === 'error') console.warn(`[browser error] ${m.text()}`); });
    await page.goto(url, { waitUntil: 'load' });
    // This server sends no COOP/COEP: the site's service worker takes control and reloads the page
    // once to isolate it (as on any plain static host). Let that happen before the page is driven,
    // or a read or a screenshot can land in the middle of the reload.
    await page.waitForFunction(() => crossOriginIsolated, undefined, { timeout: 120_000, polling: 250 });
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it('builds the shipped models into the site, byte for byte', async () => {
    for (const name of ['agent', 'judge']) {
      for (const file of ['config.json', 'model.safetensors', 'tokenizer.json']) {
        const built = fs.readFileSync(path.join(repoRoot, 'dist/models', name, file));
        expect(built.equals(fs.readFileSync(path.join(repoRoot, 'models', name, file))), `${name}/${file}`).toBe(true);
      }
    }
  });

  it('opens on webgpu with the team, controls and an empty run', async () => {
    await waitRun(page, "r.state === 'ready' || r.state === 'error'", 120_000);
    const r = await view(page);
    expect(r.errors).toEqual([]);
    expect(r.state).toBe('ready');
    expect(r.backend?.name).toBe('webgpu');
    expect(r.backend?.adapter?.architecture).toBe('swiftshader');
    await expect(page.getByTestId('backend-name').textContent()).resolves.toBe('webgpu');
    await expect(page.getByTestId('team').locator('li.agent').count()).resolves.toBe(3);
    expect(await page.getByTestId('btn-start').isEnabled()).toBe(true);
    // The run's memory plan on this device, before anything starts.
    await expect(page.getByTestId('memory-plan').textContent()).resolves.toMatch(/Memory plan on webgpu: peak up to [\d.]+ MiB \(update .*largest buffer .* · fits/);
    // The URL carries the experiment.
    expect(new URL(page.url()).searchParams.get('config')).toContain('"promptsPerIteration":1');
    await screenshot(page, 'sandbox-open');
  });

  it('trains two iterations in the worker; charts and inspector update; typing stays responsive during an update', async () => {
    await page.getByTestId('btn-start').click();
    await waitRun(page, 'r.progress.update');
    // The update runs in the worker: the page must keep painting and take keystrokes. Checked as an order of
    // events, not in milliseconds (a busy machine stretches those): keystrokes handled and frames painted on the
    // page's thread while the worker's update was still under way. An update on the page's thread would let
    // neither happen until it ended.
    await page.evaluate(() => {
      const w = window as unknown as { __during: { keys: number; keysAfter: number; frames: number }; __mappa: { run: RunView } };
      const updating = () => w.__mappa.run.progress.update !== undefined;
      w.__during = { keys: 0, keysAfter: 0, frames: 0 };
      document.querySelector('[data-testid=notes]')!.addEventListener('input', () => {
        if (updating()) w.__during.keys++;
        else w.__during.keysAfter++;
      });
      const tick = () => {
        if (!updating()) return;
        w.__during.frames++;
        requestAnimationFrame(tick);
      };
      requestAnimationFrame(tick);
    });
    const notes = page.getByTestId('notes');
    const typed = 'process beats outcome?';
    const t0 = Date.now();
    await notes.pressSequentially(typed, { delay: 15 });
    const typingMs = Date.now() - t0;
    const during = await page.evaluate(() => (window as unknown as { __during: { keys: number; keysAfter: number; frames: number } }).__during);
    console.log(`[e2e] typing ${typed.length} chars took ${typingMs} ms; during the worker's update the page handled ${during.keys} keystrokes `
      + `(${during.keysAfter} after it) and painted ${during.frames} frames`);
    await expect(notes.inputValue()).resolves.toBe(typed);
    expect(during.keys).toBeGreaterThan(0);
    expect(during.frames).toBeGreaterThan(1);

    await waitRun(page, 'r.metrics.length >= 2');
    await page.getByTestId('btn-pause').click(); // stops the third iteration in its rollouts: it leaves no trace
    await waitRun(page, "r.state === 'ready'");
    const r = await view(page);
    expect(r.errors).toEqual([]);
    expect(r.iteration).toBe(2);
    expect(r.metrics).toHaveLength(2);
    await expect(page.getByTestId('chart-score').getAttribute('data-points')).resolves.toBe('2');
    await expect(page.getByTestId('chart-kl').getAttribute('data-points')).resolves.toBe('2');
    expect(r.trajectories?.iteration).toBe(2);
    expect(r.trajectories?.trajectories).toHaveLength(2);
    expect(await page.getByTestId('action').count()).toBeGreaterThanOrEqual(3);
    await expect(page.getByTestId('credit-view').textContent()).resolves.toMatch(/outcome/);
    await screenshot(page, 'sandbox-trained');
  }, 900_000);

  it('runs the agents\' Python tool (Pyodide served by the site, in a worker) and JavaScript (QuickJS)', async () => {
    const run = (code: string, language: string) => page.evaluate(([c, l]) => (window as unknown as { __mappa: { client: { request(t: string, a: object): Promise<{ stdout: string; error?: string }> } } })
      .__mappa.client.request('tool', { code: c, language: l }), [code, language]);
    const py = await run('import statistics\nprint(statistics.mean([40, 44]))', 'python');
    expect(py.error).toBeUndefined();
    expect(py.stdout.trim()).toBe('42');
    const js = await run('console.log(6 * 7)', 'javascript');
    expect(js.stdout.trim()).toBe('42');
  }, 120_000);

  it('exports the adapters as PEFT folders whose safetensors are valid', async () => {
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-adapters').click()]);
    const file = path.join(resultsDir, 'sandbox-adapters.zip');
    await download.saveAs(file);
    const files = unzipSync(new Uint8Array(fs.readFileSync(file)));
    for (const agent of ['solver', 'executor', 'verifier']) {
      const config = JSON.parse(new TextDecoder().decode(files[`${agent}/adapter_config.json`]));
      expect(config.peft_type).toBe('LORA');
      expect(config.r).toBe(2);
      expect([...config.target_modules].sort()).toEqual(['q_proj', 'v_proj']);
      const { tensors } = await decodeSafetensors(files[`${agent}/adapter_model.safetensors`], `${agent}/adapter_model.safetensors`);
      const a = tensors.get('base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight');
      const b = tensors.get('base_model.model.model.layers.1.self_attn.v_proj.lora_B.weight');
      const shipped = JSON.parse(fs.readFileSync(path.join(repoRoot, 'models/agent/config.json'), 'utf8'));
      expect(a?.shape).toEqual([2, shipped.hidden_size]); // [r, hidden]
      expect(b?.shape[1]).toBe(2); // [out, r]
      expect(tensors.size).toBe(shipped.num_hidden_layers * 2 * 2); // layers x targets x (A, B)
      expect([...a!.data].every(Number.isFinite)).toBe(true);
    }
    const [traj] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-trajectories').click()]);
    const lines = fs.readFileSync(await traj.path(), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    expect(lines).toHaveLength(4); // 2 iterations x 1 prompt x 2 samples
    expect(lines[0].actions[0]).toHaveProperty('reward');
    const [csv] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-metrics').click()]);
    const rows = fs.readFileSync(await csv.path(), 'utf8').trim().split('\n');
    expect(rows[0]).toMatch(/^iteration,train_accuracy,mean_reward,kl/);
    expect(rows.slice(1).map((r) => r.split(',')[0])).toEqual(['1', '2']);
  });

  it('resumes from the checkpoint after a reload', async () => {
    await page.reload({ waitUntil: 'load' });
    await waitRun(page, "r.state === 'ready' || r.state === 'error'", 120_000);
    const r = await view(page);
    expect(r.errors).toEqual([]);
    expect(r.iteration).toBe(2);
    expect(r.stateMessage).toMatch(/resumed at iteration 2/);
    expect(r.metrics).toHaveLength(2);
    expect(r.trajectories?.iteration).toBe(2);
    await expect(page.getByTestId('chart-score').getAttribute('data-points')).resolves.toBe('2');
    await screenshot(page, 'sandbox-resumed');
  });

  it('loads a model folder served in the hub layout through the URL loader', async () => {
    await page.getByTestId('model-url').fill(`${server.url}hub/org/tiny`);
    await page.getByTestId('btn-load-model').click();
    await page.getByTestId('model-message').filter({ hasText: 'loaded' }).waitFor({ timeout: 120_000 });
    const r = await view(page);
    expect(r.model?.name).toBe(`${server.url}hub/org/tiny`);
    // The link carries what differs from the named team (here the agents' model); it follows the run's 'run' event.
    await expect.poll(() => new URL(page.url()).searchParams.get('config') ?? '', { timeout: 60_000 }).toContain('hub/org/tiny');
    // A missing model is refused with a clear message, not a crash.
    await page.getByTestId('model-url').fill(`${server.url}hub/org/missing`);
    await page.getByTestId('btn-load-model').click();
    await expect(page.getByTestId('model-error').textContent({ timeout: 60_000 })).resolves.toMatch(/404|not found/i);
  });

  const loseDevice = async () => {
    await page.evaluate(() => (window as unknown as { __mappa: { client: { request(t: string, a: object): Promise<unknown> } } }).__mappa.client.request('device', { lose: true }));
    await page.getByTestId('device-lost').waitFor({ timeout: 30_000 });
  };

  it('a WebGPU device loss stops the run at its checkpoint; the GPU restarts in the page and training goes on', async () => {
    const before = (await view(page)).metrics.length;
    await loseDevice();
    await screenshot(page, 'sandbox-device-lost');
    await page.getByTestId('btn-restart-gpu').click();
    await waitRun(page, "r.backend && r.backend.name === 'webgpu' && r.state === 'ready'", 120_000);
    expect((await view(page)).metrics.length).toBe(before); // the checkpoint's iterations, none lost
    // A fresh device builds every pipeline again: 187 s for this Step on SwiftShader with the machine loaded (the same
    // Step on wasm: 5 s), so `npm test` checks that the restarted device is ready and leaves the Step on it to
    // `npm run test:slow` (the next test trains a Step after a loss, on wasm).
    if (STEP_ON_RESTARTED_GPU) {
      await page.getByTestId('btn-step').click();
      await waitRun(page, `r.state === 'ready' && r.metrics.length > ${before}`, 1_200_000);
    }
    const r = await view(page);
    expect(r.errors).toEqual([]);
    expect(r.backend?.name).toBe('webgpu');
  }, 1_500_000);

  it('after another loss it continues on wasm', async () => {
    const before = (await view(page)).metrics.length;
    await loseDevice();
    await page.getByTestId('btn-recover').click();
    await waitRun(page, "r.backend && r.backend.name === 'wasm' && r.state === 'ready'", 120_000);
    await expect(page.getByTestId('backend-notice').textContent()).resolves.toMatch(/wasm/);
    await page.getByTestId('btn-step').click();
    await waitRun(page, `r.state === 'ready' && r.metrics.length > ${before}`, 480_000);
    const r = await view(page);
    expect(r.errors).toEqual([]);
  }, 600_000);

  it('offers the data team: picking it applies its loop settings, picking math again drops them', async () => {
    const config = () => page.evaluate(() => JSON.parse(JSON.stringify((window as unknown as { __mappa: { run: { config: unknown } } }).__mappa.run.config)));
    await page.getByTestId('team-preset').selectOption('data-team');
    await waitRun(page, "r.config && r.config.workflow.domain === 'data' && r.state === 'ready'", 60_000);
    await expect(page.getByTestId('team').locator('li.agent b').allTextContents()).resolves.toEqual(['1. Data Engineer', '2. Modeler', '3. Analyst']);
    const { temperature, evalTasks, promptsPerIteration } = DATA_TEAM_SETTINGS;
    expect(await config()).toMatchObject({ temperature, evalTasks, promptsPerIteration });
    // The link follows the run's 'run' event, which may reach the page after its state does (a busy machine): poll it.
    // It names the team (?team=data-team); the team's own settings come from resolveTrainConfig when the link is opened (one origin per
    // setting: test/unit/loop/team-defaults.test.ts resolves a link alike in the CLI and the page).
    await expect.poll(() => new URL(page.url()).searchParams.get('team'), { timeout: 60_000 }).toBe('data-team');
    await page.getByTestId('team-preset').selectOption('math-chain');
    await waitRun(page, "r.config && r.config.workflow.domain === 'math' && r.state === 'ready'", 60_000);
    expect(await config()).toMatchObject({ temperature: 1, evalTasks: 200, promptsPerIteration: 12 });
    expect((await view(page)).errors).toEqual([]);
  }, 120_000);
});
