/**
 * The shipped teams and switching between them (src/core/domains/teams.ts), and what a prompt reads
 * (templateSources, src/core/loop/workflow.ts): the page's team menu and diagram take these as they are.
 */
import { describe, expect, it } from 'vitest';
import {
  namedWorkflow, resolveTrainConfig, sizedTeams, sizedWorkflow, switchTeam, teamDomains, teamLabel, teamPresets, teamSettings, workflowName,
} from '../../../src/core/domains/index.ts';
import { DATA_CHAIN, DATA_TEAM_SETTINGS } from '../../../src/core/domains/data/team.ts';
import { relayConfig, relayWorkflow } from '../../../src/core/domains/relay/team.ts';
import { templateSources, validateWorkflow } from '../../../src/core/loop/workflow.ts';
import { MATH_CHAIN } from '../../../src/core/domains/math/index.ts';

describe('teams', () => {
  it('ships the math chain, the data team and relays of 2 to 128, each a valid copy the caller may edit', () => {
    const presets = teamPresets();
    expect(presets.map((p) => p.name)).toEqual([MATH_CHAIN.name, DATA_CHAIN.name, ...[2, 4, 6, 8, 16, 32, 64, 128].map((n) => `relay-${n}`)]);
    for (const p of presets) expect(() => validateWorkflow(p.workflow, teamDomains())).not.toThrow();
    presets[0].workflow.agents[0].maxTokens = 1;
    expect(teamPresets()[0].workflow.agents[0].maxTokens).toBe(MATH_CHAIN.agents[0].maxTokens);
  });

  it('a sized team takes any size in its range, and a link names a workflow by its team and size or its preset', () => {
    expect(sizedTeams()).toEqual([{ domain: 'relay', min: 1, max: 128 }]);
    expect(sizedWorkflow('relay', 37)).toEqual(relayWorkflow(37));
    expect(sizedWorkflow('relay', 129)).toBe('a relay team has 1 to 128 agents, not 129');
    expect(sizedWorkflow('math', 3)).toMatch(/^no team "math" takes a number of agents/);
    expect(workflowName(relayWorkflow(128))).toEqual({ team: 'relay', agents: 128 });
    expect(workflowName(MATH_CHAIN)).toEqual({ team: MATH_CHAIN.name });
    const edited = relayWorkflow(4);
    edited.agents[0].turns = 2;
    expect(workflowName(edited)).toBeNull();
    expect(namedWorkflow('relay', 5)).toEqual(relayWorkflow(5));
    expect(namedWorkflow(DATA_CHAIN.name)).toEqual(DATA_CHAIN);
  });

  it('a heading names the open team: a preset by its label, a sized team by its size, an edited one by its name', () => {
    expect(teamLabel(relayWorkflow(128))).toEqual({ label: 'relay of 128 agents', sized: true });
    expect(teamLabel(relayWorkflow(4))).toEqual({ label: 'relay of 4 agents', sized: true }); // the menu's aside left out
    expect(teamLabel(relayWorkflow(37))).toEqual({ label: 'relay of 37 agents', sized: true });
    expect(teamLabel(MATH_CHAIN)).toEqual({ label: 'math chain (Solver → Executor → Verifier)', sized: false });
    const edited = relayWorkflow(4);
    edited.agents[0].turns = 2;
    expect(teamLabel(edited)).toEqual({ label: 'relay-4', sized: true });
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
