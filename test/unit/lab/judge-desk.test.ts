// The judge desk's pieces that need no model: an action in a few words from its coach prompt (both templates, rendered
// by the real coachPrompt), and a taught judge as a model source (its weights from the store, the rest from its parent,
// the parent's report hidden), read back by the real loader's file reads.
import { describe, expect, it } from 'vitest';
import { coachPrompt, DEFAULT_COACH_TEMPLATE } from '../../../src/core/coach/coach-format.ts';
import { addVersion, type FileStore, type JudgeVersion } from '../../../src/core/coach/correction-book.ts';
import { RELAY_COACH_TEMPLATE } from '../../../src/core/domains/relay/team.ts';
import { readAllBytes } from '../../../src/core/engine/model/source.ts';
import { memorySource } from '../../../src/core/engine/model/sources.ts';
import { actionWords } from '../../../src/core/lab/desk/desk-requests.ts';
import { taughtSource } from '../../../src/core/lab/desk/taught-judges.ts';

const ctx = { problem: 'relay', agentId: 'agent2', role: 'Relay agent 2', input: 'Pass it on.\n\n3 + 4', output: '7', final: false };

describe('actionWords', () => {
  it('reads what the action received and replied from either template', () => {
    expect(actionWords(coachPrompt(ctx, RELAY_COACH_TEMPLATE))).toBe('3 + 4 → replied "7"');
    expect(actionWords(coachPrompt(ctx, DEFAULT_COACH_TEMPLATE))).toBe('3 + 4 → replied "7"');
    expect(actionWords('something else')).toBe('something else');
  });
});

describe('taughtSource', () => {
  it('serves the stored weights, the parent\'s other files, its record as taught.json, and hides the parent\'s report', async () => {
    const files = new Map<string, Uint8Array | string>();
    const store: FileStore = { readFile: async (n) => files.get(n) ?? null, writeFile: async (n, d) => void files.set(n, d) };
    const parent = memorySource({ 'config.json': '{"a":1}', 'model.safetensors': new Uint8Array([1, 2]), 'report.json': '{}' }, 'models/j');
    const spec = 'taught:j-abababababab';
    await addVersion(store, { spec, hash: 'ab'.repeat(32), parent: 'models/j', team: 'relay', corrections: 3 } as JudgeVersion);
    await store.writeFile('judge-j-abababababab.safetensors', new Uint8Array([9, 9, 9]));
    const src = taughtSource(spec, store, (p) => (p === 'models/j' ? parent : memorySource({}, p)));
    expect(src.name).toBe(spec);
    expect([...(await readAllBytes(src, 'model.safetensors'))]).toEqual([9, 9, 9]);
    expect(await src.readJson('config.json')).toEqual({ a: 1 });
    expect(await src.has('report.json')).toBe(false);
    expect((await src.readJson<{ corrections: number }>('taught.json')).corrections).toBe(3);
    await expect(taughtSource('taught:nope-000000000000', store, () => parent).readText('config.json'))
      .rejects.toThrow('taught:nope-000000000000: this browser holds no such taught judge');
  });
});
