// A run's files read back: a damaged checkpoint file or log line is named in one line with the way out
// (checkCheckpoint, cutJsonl, readJsonl), a torn last log line is dropped; what a run used is hashed by
// content and a change is said in words (models-used.ts). The CLI's end of both: test/unit/cli/run-record.test.ts.
import { describe, expect, it } from 'vitest';
import { checkCheckpoint, cutJsonl, JsonlLineError, readJsonl } from '../../../src/core/loop/checkpoint.ts';
import { encodeSafetensors } from '../../../src/core/engine/model/safetensors.ts';
import { memorySource } from '../../../src/core/engine/model/sources.ts';
import { modelHash, runUsed, usedChange } from '../../../src/core/loop/models-used.ts';

const bytes = (s: string) => new TextEncoder().encode(s);
const WAY = 'delete the checkpoint folder to restart, or restore it';
const tensor = () => encodeSafetensors([{ name: 'm.0', shape: [4], data: new Float32Array([1, 2, 3, 4]) }], { step: '1', slots: '1' });

describe('checkCheckpoint', () => {
  const whole = () => ({ 'state.json': bytes('{"iteration": 3, "metrics": []}'), 'optimizer/a.safetensors': tensor(), 'adapters/a/adapter_config.json': bytes('{}') });

  it('passes a whole checkpoint', async () => {
    await expect(checkCheckpoint(whole(), 'runs/x/checkpoint', WAY)).resolves.toBeUndefined();
  });

  it('state.json that is not JSON: the file, the position, the way out (the issue\'s own example)', async () => {
    const files = { ...whole(), 'state.json': bytes('{"iteration": 3 "metrics": []}') };
    await expect(checkCheckpoint(files, 'runs/x/checkpoint', WAY)).rejects
      .toThrow(/^runs\/x\/checkpoint\/state\.json is not valid JSON \(position 16\): delete the checkpoint folder to restart, or restore it$/);
  });

  it('state.json without its iteration, or missing', async () => {
    await expect(checkCheckpoint({ ...whole(), 'state.json': bytes('{"metrics": []}') }, 'c', WAY)).rejects.toThrow(/^c\/state\.json has no whole-number "iteration": /);
    const { 'state.json': _, ...rest } = whole();
    await expect(checkCheckpoint(rest, 'c', WAY)).rejects.toThrow(/^c\/state\.json is missing: /);
  });

  it('a tensor file cut short, and one that is not safetensors at all', async () => {
    const t = tensor();
    await expect(checkCheckpoint({ ...whole(), 'optimizer/a.safetensors': t.subarray(0, t.length - 3) }, 'c', WAY)).rejects
      .toThrow(/^c\/optimizer\/a\.safetensors cannot be read as safetensors \(is truncated: expected 16 bytes of tensor data, got 13\): delete the/);
    await expect(checkCheckpoint({ ...whole(), 'optimizer/a.safetensors': bytes('hello') }, 'c', WAY)).rejects
      .toThrow(/^c\/optimizer\/a\.safetensors cannot be read as safetensors \(.+\): delete the checkpoint folder/);
  });

  it('an adapter config that is not UTF-8', async () => {
    await expect(checkCheckpoint({ ...whole(), 'adapters/a/adapter_config.json': new Uint8Array([0xff, 0xfe]) }, 'c', WAY)).rejects
      .toThrow(/^c\/adapters\/a\/adapter_config\.json is not UTF-8 text: /);
  });
});

describe('JSONL logs', () => {
  it('a torn last line is dropped and counted', () => {
    expect(cutJsonl('{"iteration":1}\n{"iteration":2}\n{"itera', 1)).toEqual({ text: '{"iteration":1}\n', later: 1, torn: 1 });
  });

  it('a damaged line before the last is refused, naming the line and the position', () => {
    expect(() => cutJsonl('{"iteration":1}\n{"itera\n{"iteration":2}\n', 2)).toThrow(JsonlLineError);
    expect(() => cutJsonl('{"iteration":1}\n{"itera\n{"iteration":2}\n', 2)).toThrow(/^line 2 is not valid JSON \(position 7\)$/);
    expect(() => readJsonl('{"a":1}\n{"a":\n', 'runs/x/metrics.jsonl', 'restore it')).toThrow(/^runs\/x\/metrics\.jsonl line 2 is not valid JSON \(.+\): restore it$/);
  });
});

describe('what a run used', () => {
  const model = (weights: string) => memorySource({ 'config.json': '{"a": 1}', 'tokenizer.json': '{}', 'model.safetensors': weights }, 'models/j');

  it('hashes a model by its files: the same files the same hash, one byte more another', async () => {
    expect(await modelHash(model('abc'))).toMatch(/^[0-9a-f]{64}$/);
    expect(await modelHash(model('abc'))).toBe(await modelHash(model('abc')));
    expect(await modelHash(model('abcd'))).not.toBe(await modelHash(model('abc')));
  });

  it('says which model changed, and the template', async () => {
    const template = { name: 'team', text: 'Score {{action}}' };
    const before = await runUsed({ agents: model('a'), judge: model('j1'), template });
    expect(usedChange(before, await runUsed({ agents: model('a'), judge: model('j1'), template }))).toBeNull();
    expect(usedChange(before, await runUsed({ agents: model('a'), judge: model('j2'), template })))
      .toMatch(/^the judge models\/j changed \(sha256 [0-9a-f]{8} then, [0-9a-f]{8} now\)$/);
    expect(usedChange(before, await runUsed({ agents: model('b'), judge: model('j1'), template }))).toMatch(/^the agents' model models\/j changed/);
    expect(usedChange(before, await runUsed({ agents: model('a'), judge: model('j1'), template: { name: 'custom', text: 'x' } })))
      .toMatch(/^the coach template changed \(team, sha256 [0-9a-f]{8} then; custom, [0-9a-f]{8} now\)$/);
    expect(usedChange(before, await runUsed({ agents: model('a') }))).toMatch(/^the judge models\/j took part before and does not now$/);
    expect(usedChange(null, before)).toBeNull(); // a checkpoint from before the record: nothing to compare
  });
});
