/**
 * One origin per setting: a team's own settings (Team.settings: the relay's lr 2e-3 and model, the data
 * team's lr 5e-4 and KL coefficient) are applied in one place, resolveTrainConfig, so a config that names
 * a team and omits them resolves alike wherever it comes from:
 *   - the CLI: `mappa train --config FILE` (readConfig, src/cli/run-setup.ts, on a real file);
 *   - the page's link: `?config=<json>` (readUrl, src/ui/url-config.ts), resolved as the lab does;
 *   - the page's team menu: switchTeam (what App.svelte's applyTeam sends), then the user's own values
 *     (setPath, what the Settings panel sends), resolved as the lab does.
 * The lab's own resolvePageConfig is resolveTrainConfig with the message reworded (src/core/lab/lab.ts);
 * opening a lab needs the models and a store, which this test leaves out.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readConfig } from '../../../src/cli/run-setup.ts';
import { switchTeam, teamPresets, teamSettings, resolveTrainConfig } from '../../../src/core/domains/index.ts';
import { MATH_CHAIN } from '../../../src/core/domains/math/index.ts';
import { DEFAULT_TRAIN_CONFIG } from '../../../src/core/loop/config.ts';
import { readUrl, setPath, urlFor } from '../../../src/ui/url-config.ts';

const dir = mkdtempSync(path.join(os.tmpdir(), 'mappa-team-defaults-'));

/** The config as each path resolves it: CLI file, page link, page team menu (from the math chain). */
async function throughEachPath(partial: Record<string, unknown>) {
  const file = path.join(dir, `${String((partial.workflow as { name: string }).name)}.json`);
  writeFileSync(file, JSON.stringify(partial));
  const cli = await readConfig(file, {});
  const link = resolveTrainConfig(readUrl(urlFor('http://localhost:5173/', { config: partial })).config);
  // The menu: the user picks the team on the math chain's page, then sets their own values (Settings' setPath).
  const { workflow, ...own } = partial;
  const picked = switchTeam({}, MATH_CHAIN, workflow as typeof MATH_CHAIN);
  const menu = resolveTrainConfig(Object.entries(own).reduce((patch, [k, v]) => setPath(patch, k, v), picked));
  return { cli, link, menu };
}

describe('a team\'s settings have one origin', () => {
  it('a config naming the relay team and omitting lr gets the relay\'s 2e-3 in the CLI and on the page', async () => {
    const relay4 = teamPresets().find((p) => p.name === 'relay-4')!.workflow;
    const { cli, link, menu } = await throughEachPath({ workflow: relay4, seed: 3 });
    expect(DEFAULT_TRAIN_CONFIG.lr).toBe(1e-3);
    expect(cli.lr).toBe(2e-3);
    expect(link).toEqual(cli);
    expect(menu).toEqual(cli);
    expect(cli).toMatchObject({ ...teamSettings(relay4), seed: 3 });
  });

  it('every shipped team, with and without the user\'s own values: the three paths agree', async () => {
    for (const preset of teamPresets()) {
      for (const own of [{}, { lr: 0.003 }, { update: { microBatchSize: 2 }, temperature: 0.8 }]) {
        const { cli, link, menu } = await throughEachPath({ workflow: preset.workflow, ...own });
        expect(link).toEqual(cli);
        expect(menu).toEqual(cli);
        // The user's own value wins over the team's; the team's wins over the default.
        expect(cli.lr).toBe('lr' in own ? own.lr : ((teamSettings(preset.workflow).lr as number | undefined) ?? DEFAULT_TRAIN_CONFIG.lr));
      }
    }
  });

  it('a nested team setting merges with the user\'s: the data team\'s KL coefficient stays beside a micro-batch size', () => {
    const data = teamPresets().find((p) => p.workflow.domain === 'data')!.workflow;
    const c = resolveTrainConfig({ workflow: data, update: { microBatchSize: 2 } });
    expect(c.update).toEqual({ ...DEFAULT_TRAIN_CONFIG.update, ...(teamSettings(data).update as object), microBatchSize: 2 });
    expect(c.lr).toBe(5e-4);
  });

  it('the math chain brings no settings: its configs resolve to the defaults', () => {
    expect(teamSettings(MATH_CHAIN)).toEqual({});
    expect(resolveTrainConfig({ workflow: MATH_CHAIN })).toEqual(resolveTrainConfig({}));
  });
});
