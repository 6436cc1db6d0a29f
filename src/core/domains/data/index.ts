/**
 * The data-analysis team, as one folder's entry: Data Engineer -> Modeler -> Analyst (team.ts) on
 * seeded tabular tasks, judged by their held-out submission (outcome.ts), coached by its rubric with
 * the files and metrics as facts (coach.ts).
 *
 * For: `DATA_TEAM`, what domains/index.ts registers. Not for: the team's own logic (team.ts, outcome.ts, coach.ts).
 * Example: DATA_TEAM.trainPool(0, 0, 400) -> the 64 seeded training tables of run seed 0.
 */
import type { Team } from '../../loop/team.ts';
import { dataFacts, dataRuleCoach } from './coach.ts';
import { FIT_PREDICT } from './fit.ts';
import { dataOutcome } from './outcome.ts';
import { DATA_CHAIN, DATA_TEAM_SETTINGS, dataHeldOut, dataTrainTasks } from './team.ts';

export const DATA_TEAM: Team = {
  name: 'data',
  // One fixed pool of 64 tables per run seed (no levels).
  trainPool: (seed) => dataTrainTasks(`train:${seed}`, 64),
  // Already unbiased: kinds interleaved (classification, regression, ...), each kind's tasks drawn at random (seeded), not sorted.
  heldOut: (count) => dataHeldOut().slice(0, count),
  outcome: dataOutcome,
  facts: (t, agentId) => dataFacts(t, agentId),
  ruleCoach: dataRuleCoach,
  judgeModel: 'models/judge',
  // coverage (share of test ids predicted; 0 without a submission) is set on every prediction task, the rest only on complete submissions
  metricNames: ['coverage', 'rocAuc', 'accuracy', 'f1', 'rmseOverRange', 'rmseOverIqr'],
  sqlFunctions: [FIT_PREDICT],
  formats: {
    data_engineer: (t, turn) => (turn === 1 ? /```sql\n[\s\S]*CREATE TABLE \w+ AS SELECT/.test(t) : /```sql\n|^Done\.$/.test(t.trim())),
    modeler: (t, turn) => (turn === 1 ? /```sql\n[\s\S]*CREATE TABLE \w+ AS SELECT/.test(t) : /```sql\n|^Done\.$/.test(t.trim())),
    analyst: (t, turn) => (turn === 1 ? /```sql\n[\s\S]*CREATE TABLE submission AS SELECT|\\boxed\{[^}]+\}/.test(t) : /\\boxed\{[^}]+\}|```sql\n/.test(t)),
  },
  presets: () => [{ name: DATA_CHAIN.name, label: 'data analysis (Engineer → Modeler → Analyst)', workflow: structuredClone(DATA_CHAIN) }],
  settings: () => structuredClone(DATA_TEAM_SETTINGS) as Record<string, unknown>,
};
