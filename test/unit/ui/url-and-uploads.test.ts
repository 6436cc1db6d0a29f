/**
 * What the page refuses before any work, without a browser: the link's parts it cannot read are each
 * named (never dropped in silence), and a corrupt adapter zip says which file and what to do.
 */
import { describe, expect, it } from 'vitest';
import { zipSync } from 'fflate';
import { readUrl } from '../../../src/ui/url-config.ts';
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
