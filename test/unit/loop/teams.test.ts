/**
 * The shipped teams and switching between them (src/core/domains/teams.ts), and what a prompt reads
 * (templateSources, src/core/loop/workflow.ts): the page's team menu and diagram take these as they are.
 */
import { describe, expect, it } from 'vitest';
import { switchTeam, teamDomains, teamPresets, teamSettings, resolveTrainConfig } from '../../../src/core/domains/index.ts';
import { DATA_CHAIN, DATA_TEAM_SETTINGS } from '../../../src/core/domains/data/team.ts';
import { relayConfig, relayWorkflow } from '../../../src/core/domains/relay/team.ts';
import { templateSources, validateWorkflow } from '../../../src/core/loop/workflow.ts';
import { MATH_CHAIN } from '../../../src/core/domains/math/index.ts';

describe('teams', () => {
  it('ships the math chain, the data team and relays of 2, 4 and 6, each a valid copy the caller may edit', () => {
    const presets = teamPresets();
    expect(presets.map((p) => p.name)).toEqual([MATH_CHAIN.name, DATA_CHAIN.name, 'relay-2', 'relay-4', 'relay-6']);
    for (const p of presets) expect(() => validateWorkflow(p.workflow, teamDomains())).not.toThrow();
    presets[0].workflow.agents[0].maxTokens = 1;
    expect(teamPresets()[0].workflow.agents[0].maxTokens).toBe(MATH_CHAIN.agents[0].maxTokens);
  });

  it('switching keeps the user\'s settings and drops their values of what either team brings; resolveTrainConfig adds the new team\'s', () => {
    const relay4 = relayWorkflow(4);
    const toRelay = switchTeam({ seed: 3, lr: 0.01 }, MATH_CHAIN, relay4);
    expect(toRelay).toEqual({ seed: 3, workflow: relay4 });
    expect(resolveTrainConfig(toRelay)).toMatchObject({ ...teamSettings(relay4), seed: 3, workflow: { name: 'relay-4' } });
    // Back to math: a learning rate set for the relay goes, the user's seed stays.
    const back = switchTeam({ ...toRelay, lr: 0.01 }, relay4, MATH_CHAIN);
    for (const k of Object.keys(relayConfig(4)).filter((k) => k !== 'workflow')) expect(back).not.toHaveProperty(k);
    expect(back).toEqual({ seed: 3, workflow: MATH_CHAIN });
    // Another relay size keeps every setting; the data team gets its own through resolveTrainConfig.
    expect(switchTeam({ ...toRelay, lr: 0.01 }, relay4, relayWorkflow(6))).toEqual({ seed: 3, lr: 0.01, workflow: relayWorkflow(6) });
    expect(resolveTrainConfig(switchTeam({}, MATH_CHAIN, teamPresets()[1].workflow))).toMatchObject(DATA_TEAM_SETTINGS);
  });

  it('templateSources says what a prompt reads, once each', () => {
    expect(templateSources('Problem: {{problem}}\n{{output:solver}}\n{{tool:executor}}\n{{output:solver}}'))
      .toEqual(['the problem', 'solver', 'executor (tool output)']);
    expect(templateSources('{{part}}')).toEqual(['its part of the task']);
  });
});
