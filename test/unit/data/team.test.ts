/**
 * The data team end to end: the workflow and its config validate, a user's CSV becomes a task, a
 * scripted competent team succeeds through the real rollout (SQL on DuckDB, fit through tfjs, outcome,
 * coach), and the tiny random team model runs the whole plumbing with the rule data coach.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../../src/core/engine/backend.ts';
import { EngineAgents } from '../../../src/core/loop/agents.ts';
import { dataFacts, dataRuleCoach } from '../../../src/core/domains/data/coach.ts';
import { dataOutcome } from '../../../src/core/domains/data/outcome.ts';
import { DATA_CHAIN, DATA_TEAM_SETTINGS, columnProfile, csvTask, dataHeldOut, dataReferenceReplies, profileLine } from '../../../src/core/domains/data/team.ts';
import { DEFAULT_REWARDS, coachTrajectories } from '../../../src/core/loop/rewards.ts';
import { runRollouts } from '../../../src/core/loop/rollout.ts';
import { type Trajectory } from '../../../src/core/loop/trajectory.ts';
import { validateWorkflow, type WorkflowSpec } from '../../../src/core/loop/workflow.ts';
import { teamDomains, resolveTrainConfig } from '../../../src/core/domains/index.ts';
import { createSqlTool } from '../../../src/core/tools/sql.ts';
import { FIT_PREDICT } from '../../../src/core/domains/data/fit.ts';
import type { Sandbox } from '../../../src/core/tools/sandbox.ts';
import { tinyTeamModel } from '../../helpers/tiny-team.ts';
import { Rng } from '../../../src/core/stats/rng.ts';
import { NO_DATA_FLAWS, dataPlan, playDataTeam } from '../../../scripts/pretrain/data-transcripts.ts';

const repoRoot = path.resolve(import.meta.dirname, '../../..');

let sql: Sandbox;
beforeAll(async () => {
  await initBackend({ force: 'wasm' }); // the tiny model's ~1200-token prompts: wasm is ~15x faster than cpu here
  sql = createSqlTool({ functions: [FIT_PREDICT] });
});
afterAll(async () => {
  await sql.dispose();
});

describe('the data team', () => {
  it('validates, and configs/data-tiny.json carries exactly DATA_CHAIN', () => {
    expect(validateWorkflow(DATA_CHAIN, teamDomains())).toBe(DATA_CHAIN);
    expect(DATA_CHAIN.agents.map((a) => [a.id, a.turns, a.tools])).toEqual([
      ['data_engineer', 3, ['sql', 'python']], ['modeler', 2, ['sql', 'python']], ['analyst', 2, ['sql', 'python']],
    ]);
    const config = resolveTrainConfig(JSON.parse(readFileSync(path.join(repoRoot, 'configs/data-tiny.json'), 'utf8')));
    expect(config.workflow).toEqual(DATA_CHAIN);
    expect(config.evalTasks).toBeLessThanOrEqual(dataHeldOut().length);
    // What the page applies (update is merged into the defaults, the rest replaces them).
    for (const [key, value] of Object.entries(DATA_TEAM_SETTINGS)) {
      if (typeof value === 'object') expect(config[key as keyof typeof config], key).toMatchObject(value);
      else expect(config[key as keyof typeof config], key).toBe(value);
    }
  });

  it('takes the held-out kinds in turn, so the first n tables are balanced', () => {
    expect(dataHeldOut().slice(0, 4).map((t) => t.data.kind)).toEqual(['classification', 'regression', 'classification', 'regression']);
    expect(dataHeldOut()).toHaveLength(24);
  });

  it('profiles the columns the Data Engineer is shown: means over filled cells, missing counts, sorted levels', () => {
    const csv = 'id,x,c,y\n1,2,b,0\n2,,a,1\n3,4.5,b,1\n4,3,,0';
    const profile = columnProfile(csv, 'y');
    expect(profile).toEqual([
      { name: 'id', kind: 'id' },
      { name: 'x', kind: 'number', mean: 3.17, missing: 1 }, // (2 + 4.5 + 3) / 3 = 3.1666...
      { name: 'c', kind: 'text', levels: ['a', 'b'], missing: 1 },
      { name: 'y', kind: 'target' },
    ]);
    expect(profileLine(profile, 'y')).toBe('id (id); x (mean 3.17, 1 missing); c (text: a, b, 1 missing); y (target)');
    // Every number the reference Data Engineer writes into its SQL is in the problem text it is given.
    const task = dataHeldOut(['regression'])[0];
    const sqlText = dataReferenceReplies(task.data).data_engineer[0];
    const fills = [...sqlText.matchAll(/COALESCE\((\w+), ([\d.-]+)\)/g)];
    expect(fills.length).toBeGreaterThan(2);
    for (const [, col, mean] of fills) expect(task.problem).toContain(`${col} (mean ${mean}`);
  });

  it('imports a user\'s CSV with a target column', () => {
    const rows = Array.from({ length: 40 }, (_, i) => `${i % 5},${i % 3 ? 'yes' : 'no'},${(i * 7) % 11}`);
    const task = csvTask(['a,label,b', ...rows].join('\n'), 'label', { name: 'mine', seed: 1 });
    expect(task.data.kind).toBe('classification');
    expect(task.files['data.csv'].split('\n')[0]).toBe('id,a,label,b');
    expect(task.files['test.csv'].split('\n')[0]).toBe('id,a,b');
    expect(task.problem).toMatch(/^Predict label \(1 = yes, 0 = no\) from a, b\. data\.csv has 28 rows/);
    const testIds = task.files['test.csv'].trim().split('\n').slice(1).map((l) => Number(l.split(',')[0]));
    const expected = testIds.map((id) => (rows[id - 1].split(',')[1] === 'yes' ? 1 : 0));
    expect((task.data as { testTargets: number[] }).testTargets).toEqual(expected);
    expect(() => csvTask('a,b\n1,2\n', 'c')).toThrow(/no column "c" \(columns: a, b\)/);
    expect(() => csvTask(['a,y', ...rows.map((r, i) => `${i},${['x', 'y', 'z'][i % 3]}`)].join('\n'), 'y')).toThrow(/3 different text values/);
  });

  it('a competent (scripted) team succeeds through the real rollout, and the rule coach agrees', async () => {
    const tasks = [...dataHeldOut(['classification']).slice(0, 1), ...dataHeldOut(['regression']).slice(0, 1), ...dataHeldOut(['table-question']).slice(0, 1)];
    // A generous tool time limit: this checks what the team does, and the fit shares the cores with other test files.
    const trajs = (await playDataTeam(tasks, { rng: new Rng(0), tools: { sql }, rates: NO_DATA_FLAWS, toolTimeoutMs: 60_000 })).map((r) => r.trajectory);
    for (const t of trajs) {
      expect(t.correct, `${t.task.id}: ${t.report}`).toBe(true);
      expect(t.actions.map((a) => `${a.agentId}/${a.turn}`)).toEqual(['data_engineer/1', 'data_engineer/2', 'modeler/1', 'modeler/2', 'analyst/1', ...(t.task.id.includes('question') ? [] : ['analyst/2'])]);
    }
    const [cls, reg] = trajs;
    expect(cls.metrics!.rocAuc).toBeGreaterThan(0.7);
    expect(reg.metrics!.rmseOverIqr).toBeLessThan(0.6);
    const owners = Object.fromEntries(cls.files!.map((f) => [f.path, f.owner]));
    expect(owners).toEqual({ 'data.csv': 'task', 'test.csv': 'task', 'train_features.csv': 'data_engineer', 'test_features.csv': 'data_engineer', 'predictions.csv': 'modeler', 'submission.csv': 'analyst' });
    const { coached } = await coachTrajectories(DATA_CHAIN, trajs, dataRuleCoach(), DEFAULT_REWARDS, (t, id) => dataFacts(t, id));
    for (const c of coached) expect([...c.agentScores.values()].map((r) => r.score)).toEqual([10, 10, 10]);
  }, 300_000);

  it('scripted flaws (the pretraining data) reach the rule coach as blame on the agent that made them', async () => {
    const task = dataHeldOut(['classification'])[0];
    const play = async (rates: Partial<typeof NO_DATA_FLAWS>) => (await playDataTeam([task], { rng: new Rng(1), tools: { sql }, rates: { ...NO_DATA_FLAWS, ...rates }, toolTimeoutMs: 60_000 }))[0];
    const scores = async (t: Trajectory) => {
      const { coached } = await coachTrajectories(DATA_CHAIN, [t], dataRuleCoach(), DEFAULT_REWARDS, (x, id) => dataFacts(x, id));
      return [...coached[0].agentScores.values()].map((r) => r.score);
    };
    const broken = await play({ typo: 1 });
    expect(broken.flaws).toEqual(['engineer-typo']);
    expect(broken.trajectory.actions[0].observation).toMatch(/^Error: .*not found/m);
    expect(await scores(broken.trajectory)).toEqual([1, 7, 7]); // only the Data Engineer is blamed
    const repaired = await play({ typo: 1, repair: 1 });
    expect(repaired.flaws).toEqual(['engineer-typo-repaired']);
    expect(repaired.trajectory.actions[1].text).toBe(dataPlan(task, new Rng(0), NO_DATA_FLAWS).first.data_engineer); // the fix is the clean SQL
    expect(repaired.trajectory.correct).toBe(true);
    expect(await scores(repaired.trajectory)).toEqual([10, 10, 10]);
    const linear = await play({ linearForBinary: 1 });
    expect(linear.flaws).toEqual(['modeler-linear-for-binary']);
    expect(linear.trajectory.correct).toBe(false);
    expect(linear.trajectory.report).toMatch(/predictions\.csv by modeler: 100 rows, 2 columns \(id, prediction\)/);
    expect(await scores(linear.trajectory)).toEqual([10, 4, 7]); // the Modeler's fit has no probabilities; the Analyst is not blamed
    const constant = await play({ constant: 1 });
    expect(constant.flaws).toEqual(['modeler-constant']);
    expect(constant.trajectory.metrics!.rocAuc).toBe(0.5);
    expect(await scores(constant.trajectory)).toEqual([10, 3, 7]); // no fit: 3; the Analyst passed the predictions on, so their ROC-AUC does not cap it
  }, 300_000);

  it('the tiny random team runs the whole plumbing with the rule data coach', async () => {
    const model = await tinyTeamModel(0);
    const small: WorkflowSpec = { ...DATA_CHAIN, agents: DATA_CHAIN.agents.map((a) => ({ ...a, maxTokens: 12 })) };
    const tasks = dataHeldOut(['classification']).slice(0, 1);
    const trajs = await runRollouts(small, tasks, {
      agents: new EngineAgents(model, new Map()), tools: { sql }, samplesPerTask: 2, temperature: 1, seed: 3, outcome: dataOutcome,
    });
    expect(trajs).toHaveLength(2);
    const { coached, stats } = await coachTrajectories(small, trajs, dataRuleCoach(), { ...DEFAULT_REWARDS, shaping: true }, (t, id) => dataFacts(t, id));
    expect(stats.failures).toBe(0);
    for (const [i, t] of trajs.entries()) {
      expect(t.correct).toBe(false);
      expect(t.metrics).toEqual({ coverage: 0, success: 0 });
      expect(t.files!.map((f) => `${f.path}:${f.owner}`)).toEqual(['data.csv:task', 'test.csv:task']);
      expect(t.report).toContain('(no submission.csv)');
      expect(t.actions.every((a) => coached[i].agentScores.has(a.agentId) && a.tokens.length > 0)).toBe(true);
      // Noise writes no code: the Data Engineer gets 0; the others are not blamed for its missing tables.
      expect(coached[i].agentScores.get('data_engineer')!.score).toBe(0);
      expect(coached[i].agentScores.get('modeler')!.score).toBe(7);
      expect(coached[i].agentScores.get('analyst')!.score).toBe(7);
    }
    model.model.dispose?.();
  }, 300_000);
});
