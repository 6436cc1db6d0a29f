/**
 * A new team is one folder: a toy team ("echo": one agent that should repeat the task's digit) written
 * into a temporary folder as an index.ts exporting a Team (src/core/loop/team.ts), registered at
 * run time, validated by the config, and trained one iteration by the real loop (rollouts, its own
 * rubric as the coach, rewards, the update) and evaluated on its own held-out tasks. Nothing of the
 * loop, the coach or the registry's file is edited for it.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../../src/core/engine/backend.ts';
import type { LoadedModel } from '../../../src/core/engine/model/load.ts';
import { registerTeam, teamDomains, teamPresets, resolveTrainConfig } from '../../../src/core/domains/index.ts';
import type { Team } from '../../../src/core/loop/team.ts';
import { buildCoach } from '../../../src/core/coach/coaches.ts';
import { teamOf } from '../../../src/core/domains/index.ts';
import { LocalCompute } from '../../../src/core/compute/local.ts';
import { RunSession } from '../../../src/core/loop/session.ts';
import { tinyTeamModel } from '../../helpers/tiny-team.ts';
import { MemoryStore } from '../../helpers/loop.ts';

const src = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../../../src/core');
const at = (f: string) => pathToFileURL(path.join(src, f)).href;

/** The toy team's folder: one file, importing the project's types and its rule-coach class by absolute URL. */
const ECHO_INDEX = `
import { RuleCoach } from '${at('coach/coach.ts')}';

const tasks = (tag) => Array.from({ length: 12 }, (_, i) => ({ id: tag + i, problem: String(i % 10), answer: String(i % 10) }));
const workflow = {
  name: 'echo-1', domain: 'echo',
  agents: [{ id: 'echo', role: 'Echo', system: 'Repeat the digit.', user: '{{problem}}', maxTokens: 3, turns: 1, tools: [], trainable: true, final: true }],
};
export const ECHO_TEAM = {
  name: 'echo',
  trainPool: () => tasks('train'),
  heldOut: (count) => tasks('held').slice(0, count),
  outcome: (t) => ({ correct: t.actions.at(-1)?.text.trim() === t.task.answer, finalAnswer: t.actions.at(-1)?.text.trim() ?? null }),
  ruleCoach: () => new RuleCoach('rule:echo', (a) => ({ score: a.output.trim() === a.task?.answer ? 10 : 0 })),
  metricNames: [],
  presets: () => [{ name: workflow.name, label: 'echo (a toy team)', workflow: structuredClone(workflow) }],
};
`;

describe('a new team is one folder', () => {
  let dir: string;
  let model: LoadedModel;
  beforeAll(async () => {
    await initBackend({ force: 'cpu' });
    model = await tinyTeamModel(3);
    dir = mkdtempSync(path.join(os.tmpdir(), 'mappa-toy-team-'));
    writeFileSync(path.join(dir, 'index.ts'), ECHO_INDEX);
  });
  afterAll(() => {
    model.model.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  it('is registered from its folder, validated by the config, and trains one iteration', async () => {
    expect(() => resolveTrainConfig({ workflow: { name: 'echo-1', domain: 'echo', agents: [] } })).toThrow(/"domain" must be math, data, relay/);
    const { ECHO_TEAM } = (await import(pathToFileURL(path.join(dir, 'index.ts')).href)) as { ECHO_TEAM: Team };
    registerTeam(ECHO_TEAM);
    expect(teamDomains()).toContain('echo');
    expect(teamPresets().map((p) => p.name)).toContain('echo-1');

    const workflow = teamPresets().find((p) => p.name === 'echo-1')!.workflow;
    const config = resolveTrainConfig({
      workflow, iterations: 1, promptsPerIteration: 2, samplesPerPrompt: 2, evalEvery: 1, evalTasks: 4, checkpointEvery: 1,
      lora: { rank: 2, targetModules: ['q_proj', 'v_proj'] }, update: { microBatchSize: 4 }, curriculum: { startLevel: 0 },
    });
    const coach = await buildCoach(config.coach, () => Promise.reject(new Error('no judge')), teamOf(config.workflow));
    expect(coach.name).toBe('rule:echo'); // the team's own rubric is its rule coach
    const tools = {};
    const store = new MemoryStore();
    const team = teamOf(config.workflow);
    const session = await RunSession.open(config, { team, agentModel: model, coach, tools, compute: LocalCompute.forTeam({ team, agentModel: model, tools }) }, {
      store, emit: () => undefined,
    });
    expect(await session.run()).toBe('done');
    const [m] = session.trainer.metrics;
    expect(m.trajectories).toBe(4);
    expect(m.perAgent.echo.samples).toBe(4);
    expect(m.coach.calls).toBeGreaterThan(0);
    expect(m.eval?.tasks).toBe(4); // its own held-out tasks
    session.dispose();
  }, 300_000);
});
