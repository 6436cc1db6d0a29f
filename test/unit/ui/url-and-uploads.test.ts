/**
 * What the page refuses before any work, without a browser: the link's parts it cannot read are each
 * named (never dropped in silence), and a corrupt adapter zip says which file and what to do.
 */
import { describe, expect, it } from 'vitest';
import { zipSync } from 'fflate';
import { readUrl, urlFor } from '../../../src/ui/url-config.ts';
import { relayConfig, relayWorkflow } from '../../../src/core/domains/relay/team.ts';
import { scalePatch } from '../../../src/core/lab/experiments/scale/scale-maths.ts';
import { adapterFiles } from '../../../src/core/lab/transfer.ts';
import { runSize } from '../../../src/core/measure/run-size.ts';
import { resolveTrainConfig } from '../../../src/core/domains/index.ts';

describe('the link', () => {
  it('reads a good link whole', () => {
    const s = readUrl('http://x/?backend=wasm&config=%7B%22seed%22%3A3%7D&limits=default&baseline=0');
    expect(s).toEqual({ backend: 'wasm', config: { seed: 3 }, webgpuLimits: 'default', baseline: false });
  });

  it('names each part it cannot read and keeps the rest', () => {
    const s = readUrl('http://x/?config=%7B&backend=quantum&limits=huge&coach=gpt');
    expect(s.config).toEqual({});
    expect(s.backend).toBeUndefined();
    expect(s.error).toMatch(/\?backend=quantum is not a backend \(webgpu, wasm or cpu\)/);
    expect(s.error).toMatch(/\?limits=huge is not "default"/);
    expect(s.error).toMatch(/\?coach=gpt is not "webllm:<model id>"/);
    expect(s.error).toMatch(/\?config= is not a JSON object \(.*\); using the default configuration/);
    expect(readUrl('http://x/?config=%5B1%5D').error).toMatch(/expected a JSON object/);
  });
});

describe('a short link at any team size', () => {
  const BASE = 'http://localhost:4173/';
  /** The link for a patch, read back: the resolved config (what names the run) must be the patch's own. */
  const roundTrip = (patch: Record<string, unknown>) => {
    const href = urlFor(BASE, { config: patch });
    const back = readUrl(href);
    expect(back.error).toBeUndefined();
    expect(resolveTrainConfig(back.config)).toEqual(resolveTrainConfig(patch));
    return href;
  };

  it('a relay of 128 with its team settings is a few words, and opens the same configuration', () => {
    const old = `${BASE}?config=${encodeURIComponent(JSON.stringify(relayConfig(128)))}`;
    expect(old.length).toBeGreaterThan(30_000); // the whole workflow: what a server answered 431 to
    const href = roundTrip(relayConfig(128));
    expect(href).toBe(`${BASE}?team=relay&agents=128`);
  });

  it('every size 1..128 round-trips under 200 characters, and every Scale run under 600', () => {
    for (const n of [1, 2, 7, 33, 64, 128]) expect(roundTrip({ workflow: relayWorkflow(n), seed: 5 }).length).toBeLessThan(200);
    // A Scale run carries its budget and the fast path's settings (rolloutBatch, coach.batch, the shared-prefix update): about 470.
    for (const n of [8, 16, 32, 64]) for (const mode of ['process', 'outcome'] as const) expect(roundTrip(scalePatch(n, mode)).length).toBeLessThan(600);
  });

  it('a menu preset is named by its name; an edited workflow travels whole', () => {
    const math = resolveTrainConfig({}).workflow;
    expect(roundTrip({ workflow: math, lr: 0.01 })).toMatch(/\?team=math-chain&config=/);
    const edited = relayWorkflow(3);
    edited.agents[1].maxTokens = 9;
    expect(roundTrip({ workflow: edited })).toMatch(/config=.*maxTokens/);
  });

  it('an edited relay of 128 travels deflated, about 1 KB, and opens the same configuration', () => {
    const edited = relayWorkflow(128);
    for (const a of edited.agents) a.maxTokens = 6;
    const href = roundTrip({ workflow: edited, seed: 2 });
    expect(href).toMatch(/\?configz=[\w-]+$/);
    expect(href.length).toBeLessThan(4000);
    expect(readUrl(`${BASE}?configz=not-deflate`).error).toMatch(/\?configz= could not be unpacked/);
  });

  it('an older link with the whole workflow in ?config= still loads', () => {
    const s = readUrl(`${BASE}?config=${encodeURIComponent(JSON.stringify(relayConfig(64)))}`);
    expect(s.error).toBeUndefined();
    expect(resolveTrainConfig(s.config)).toEqual(resolveTrainConfig({ workflow: relayWorkflow(64) }));
  });

  it('a size out of range or a team without one is refused in words, and the default team is used', () => {
    expect(readUrl(`${BASE}?team=relay&agents=500`).error).toMatch(/\?team=relay&agents=500 names no team: a relay team has 1 to 128 agents, not 500/);
    expect(readUrl(`${BASE}?team=relay`).error).toMatch(/needs its number of agents, e\.g\. agents=128/);
    expect(readUrl(`${BASE}?team=chess`).error).toMatch(/no team is named "chess"/);
    expect(readUrl(`${BASE}?agents=4`).error).toMatch(/\?agents=4 names no team: it goes with \?team=/);
    expect(readUrl(`${BASE}?team=relay&agents=500`).config).toEqual({});
  });
});

describe('an adapter upload', () => {
  it('a cut-short zip names the file and says what to do', () => {
    const zip = zipSync({ 'agent1/adapter_config.json': new TextEncoder().encode('{}') });
    expect(() => adapterFiles({ 'adapters.zip': zip.subarray(0, zip.length - 10) }))
      .toThrow(/adapter upload: "adapters\.zip" is not a readable zip \(.*\); it may be cut short or not a zip: export the adapters again, or upload the PEFT folder's files/);
  });
});

describe('a run far beyond this machine', () => {
  it('100,000 prompts an iteration is large (asked about), the default is not', () => {
    expect(runSize(resolveTrainConfig({})).large).toBe(false);
    const big = runSize(resolveTrainConfig({ promptsPerIteration: 100_000 }));
    expect(big).toMatchObject({ rolloutsPerIteration: 200_000, large: true });
    expect(big.message).toMatch(/^this run makes 200,000 rollouts an iteration \(the default: 24\), about \d+ days an iteration/);
  });
});
