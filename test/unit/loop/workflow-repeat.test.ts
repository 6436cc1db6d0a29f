// A repeated agent (src/core/loop/workflow-repeat.ts): expanded by hand-worked example, mixed with plain
// agents, and refused by name when its count, "first", "last" or {{previous}} is wrong; through the loader too.
import { describe, expect, it } from 'vitest';
import { expandWorkflow } from '../../../src/core/loop/workflow-repeat.ts';
import { resolveTrainConfig } from '../../../src/core/domains/index.ts';
import { ConfigFileError } from '../../../src/core/loop/config-fields.ts';
import type { WorkflowSpec } from '../../../src/core/loop/workflow.ts';

const worker = {
  id: 'w{{position}}', role: 'Worker {{position}} of {{count}}', system: 'You are worker {{position}}.', user: '{{output:{{previous}}}} {{part}}',
  maxTokens: 4, turns: 1, tools: [], trainable: true,
};
const plain = { id: 'planner', role: 'Planner', system: 's', user: '{{part}}', maxTokens: 4, turns: 1, tools: [], trainable: false };

describe('a repeated agent', () => {
  it('expands into its copies: names filled, prompts left to the renderer, {{previous}} the agent before, first and last overrides', () => {
    const w = expandWorkflow({ name: 't', domain: 'relay', agents: [{ repeat: 3, ...worker, first: { user: '{{part}}' }, last: { final: true } }] }) as WorkflowSpec;
    expect(w.agents.map((a) => a.id)).toEqual(['w1', 'w2', 'w3']);
    expect(w.agents.map((a) => a.role)).toEqual(['Worker 1 of 3', 'Worker 2 of 3', 'Worker 3 of 3']);
    expect(w.agents.map((a) => a.user)).toEqual(['{{part}}', '{{output:w1}} {{part}}', '{{output:w2}} {{part}}']);
    expect(w.agents.every((a) => a.system === 'You are worker {{position}}.')).toBe(true);
    expect(w.agents.map((a) => a.final)).toEqual([undefined, undefined, true]);
    expect(w.agents[0]).not.toHaveProperty('repeat');
  });

  it('counts its place after plain agents, and {{count}} is the whole team', () => {
    const w = expandWorkflow({ name: 't', domain: 'relay', agents: [plain, { repeat: 2, ...worker, last: { final: true } }] }) as WorkflowSpec;
    expect(w.agents.map((a) => `${a.id}:${a.role}:${a.user}`)).toEqual([
      'planner:Planner:{{part}}', 'w2:Worker 2 of 3:{{output:planner}} {{part}}', 'w3:Worker 3 of 3:{{output:w2}} {{part}}',
    ]);
  });

  it('leaves a workflow without one as it is', () => {
    const w = { name: 't', domain: 'relay', agents: [{ ...plain, final: true }] };
    expect(expandWorkflow(w)).toBe(w);
    expect(expandWorkflow('relay')).toBe('relay');
  });

  it('refuses a bad count, a bad first or last, and {{previous}} at the team\'s head, by entry', () => {
    const team = (entry: Record<string, unknown>) => ({ name: 't', domain: 'relay', agents: [entry] });
    expect(() => expandWorkflow(team({ ...worker, repeat: 0 }))).toThrow(/agent entry 1: "repeat" must be a whole number of agents 1..1024, got 0/);
    expect(() => expandWorkflow(team({ ...worker, repeat: '4' }))).toThrow(/"repeat" must be/);
    expect(() => expandWorkflow(team({ ...worker, repeat: 2, first: 'x' }))).toThrow(/"first" must be an object of agent fields/);
    expect(() => expandWorkflow(team({ ...worker, repeat: 2, last: { repeat: 2 } }))).toThrow(/"last" cannot hold "repeat"/);
    expect(() => expandWorkflow(team({ ...worker, repeat: 2 }))).toThrow(/copy 1 \(agent 1\): "user" names \{\{previous\}\}.*give it its own "user" in "first"/);
  });

  it('through the loader: expanded, then validated; a refusal is a config error naming the workflow', () => {
    const c = resolveTrainConfig({ workflow: { name: 'relay-5', domain: 'relay', agents: [{ repeat: 5, ...worker, first: { user: '{{part}}' }, last: { final: true } }] } });
    expect(c.workflow.agents).toHaveLength(5);
    expect(() => resolveTrainConfig({ workflow: { name: 'r', domain: 'relay', agents: [{ repeat: 0, ...worker }] } })).toThrow(ConfigFileError);
    expect(() => resolveTrainConfig({ workflow: { name: 'r', domain: 'relay', agents: [{ repeat: 0, ...worker }] } })).toThrow(/^workflow: /);
    // No "final" anywhere: the expanded team meets the usual check.
    expect(() => resolveTrainConfig({ workflow: { name: 'r', domain: 'relay', agents: [{ repeat: 2, ...worker, first: { user: '{{part}}' } }] } })).toThrow(/exactly one agent must be "final"/);
    // A placeholder in an id outside a repeat: the refusal says where placeholders are filled.
    expect(() => resolveTrainConfig({ workflow: { name: 'r', domain: 'relay', agents: [{ ...worker, user: '{{part}}', final: true }] } })).toThrow(/filled only in a repeated agent/);
  });
});
