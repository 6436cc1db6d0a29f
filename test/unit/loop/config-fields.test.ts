// The one settings table (config-fields.ts) against what uses it: the model's projection names, the
// page's settings drawer, and the labels that replace config paths in what a person reads.
import { describe, expect, it } from 'vitest';
import { PROJECTIONS } from '../../../src/core/engine/model/llama.ts';
import { CONFIG_FIELDS, fieldLabel, fieldSpec, LORA_TARGETS } from '../../../src/core/loop/config-fields.ts';
import { resolveTrainConfig } from '../../../src/core/domains/index.ts';
import * as settings from '../../../src/ui/components/Settings.svelte';

const { GROUPS } = settings as unknown as { GROUPS: { title: string; fields: { path: string }[] }[] };

describe('the settings table', () => {
  it('offers exactly the projections the model adapts, in its order', () => {
    expect([...LORA_TARGETS]).toEqual([...PROJECTIONS]);
    expect(resolveTrainConfig({}).lora.targetModules).toEqual([...LORA_TARGETS]);
  });

  it('holds every setting the page shows, each with a label that is not its path', () => {
    const paths = GROUPS.flatMap((g) => g.fields.map((f) => f.path));
    expect(paths.length).toBeGreaterThan(15);
    for (const p of paths) {
      expect(fieldSpec(p), p).toBeDefined();
      if (p.includes('.')) expect(fieldLabel(p), p).not.toBe(p); // a config path never stands as its own label
    }
  });

  it('labels are unique, so an error banner names one setting', () => {
    const labels = CONFIG_FIELDS.map((f) => f.label);
    expect(new Set(labels).size).toBe(labels.length);
  });
});
