/**
 * Synthetic data-team transcripts: a scripted Data Engineer -> Modeler -> Analyst play the real
 * DATA_CHAIN workflow through the real rollout runner (src/core/loop/rollout.ts), so their SQL runs
 * on the real DuckDB tool over a real per-trajectory workspace, the outcome and metrics come from
 * dataOutcome, and the coach facts from dataFacts: the transcripts are exactly what a trained team
 * would produce, flaws included.
 *
 * For: scripts/pretrain.ts (agent examples for the data roles, judge examples labelled by the rule
 * data coach). Not for: real model rollouts (a ScriptedAgents backend replaces the model).
 *
 * Each task draws a plan of flaws (rates in DATA_FLAW_RATES); a flawed first turn may be repaired on
 * the next turn after the error is seen, as a competent agent would:
 *   Data Engineer  a misspelled column (SQL error; repaired with p = 0.6), a numeric column left
 *                  without COALESCE (missing cells: fit_predict refuses them), test_features forgotten
 *   Modeler        a misspelled target (error; repaired with p = 0.6), 'linear' for a 0/1 target
 *                  (a habit, at 0.6: its predictions have no probability column, the Analyst's
 *                  submission fails, and the coach blames the Modeler), 'logistic' for a number,
 *                  constant predictions instead of a fit
 *   Analyst        hard 0/1 labels instead of probabilities, a LIMIT that drops test ids, no \boxed{}
 *   Table questions: the wrong aggregate (Modeler), the Analyst boxing another number.
 * Example:
 *   const [t] = await playDataTeam(dataTrainTasks(0, 8), { rng, tools: { sql, python: sandbox } });
 *   t.trajectory.actions.map((a) => `${a.agentId}#${a.turn}`)  // ['data_engineer#1', 'data_engineer#2', 'modeler#1', ...]
 */
import type { AgentBackend, GenerationRequest, GenerationResult } from '../../src/core/loop/agents.ts';
import { dataFacts, dataRuleScore } from '../../src/core/domains/data/coach.ts';
import { dataOutcome } from '../../src/core/domains/data/outcome.ts';
import { DATA_CHAIN, dataReferenceReplies, type DataRolloutTask } from '../../src/core/domains/data/team.ts';
import { agentContext } from '../../src/core/loop/rewards.ts';
import { runRollouts } from '../../src/core/loop/rollout.ts';
import { type Trajectory } from '../../src/core/loop/trajectory.ts';
import type { ActionContext } from '../../src/core/coach/coach-format.ts';
import type { Rng } from '../../src/core/stats/rng.ts';
import type { ToolRunners } from '../../src/core/tools/runners.ts';
import type { TextTokenizer } from '../../src/core/engine/tokenizer/tokenizer.ts';
import { judgeItem, type JudgeItem } from './transcripts.ts';

export type DataFlawRates = Record<'typo' | 'noCoalesce' | 'noTest' | 'repair' | 'wrongTarget' | 'linearForBinary' | 'wrongModel' | 'constant' | 'hardLabels' | 'limit' | 'noBoxed' | 'wrongAggregate' | 'wrongNumber', number>;

/** No flaws at all: the reference team (tests). */
export const NO_DATA_FLAWS: DataFlawRates = {
  typo: 0, noCoalesce: 0, noTest: 0, repair: 0, wrongTarget: 0, linearForBinary: 0, wrongModel: 0, constant: 0, hardLabels: 0, limit: 0, noBoxed: 0, wrongAggregate: 0, wrongNumber: 0,
};

export const DATA_FLAW_RATES: DataFlawRates = {
  typo: 0.2, noCoalesce: 0.1, noTest: 0.06, repair: 0.6,
  wrongTarget: 0.1, linearForBinary: 0.6, wrongModel: 0.08, constant: 0.05,
  hardLabels: 0.1, limit: 0.05, noBoxed: 0.08,
  wrongAggregate: 0.15, wrongNumber: 0.1,
};

/** One task's scripted replies: per agent, turn 1, the repair turn, and whether the repair happens. */
interface DataPlan {
  flaws: string[];
  first: Record<string, string>;
  fixed: Record<string, string>;
  repairs: Record<string, boolean>;
}

const sqlBlock = (code: string) => '```sql\n' + code + '\n```';
const codeOf = (reply: string) => /```sql\n([\s\S]*?)\n```/.exec(reply)?.[1] ?? '';

function misspell(word: string): string {
  return word.length > 3 ? word.slice(0, -2) + word.slice(-1) : word + 'x';
}

export function dataPlan(task: DataRolloutTask, rng: Rng, rates: DataFlawRates = DATA_FLAW_RATES): DataPlan {
  const ref = dataReferenceReplies(task.data);
  const flaws: string[] = [];
  const first: Record<string, string> = { data_engineer: ref.data_engineer[0], modeler: ref.modeler[0], analyst: ref.analyst[0] };
  const fixed = { ...first };
  const repairs: Record<string, boolean> = {};
  const d = task.data;
  if (d.kind === 'table-question') {
    if (rng.bernoulli(rates.wrongAggregate)) {
      const swap: Record<string, string> = { avg: 'sum', sum: 'avg', min: 'max', max: 'min', count: 'sum' };
      first.modeler = ref.modeler[0].replace(/round\((\w+)\(/, (_, agg: string) => `round(${swap[agg] ?? 'avg'}(`);
      flaws.push('modeler-aggregate');
    }
    if (rng.bernoulli(rates.wrongNumber)) {
      const n = Number(d.answer);
      first.analyst = ref.analyst[0].replace(/\\boxed\{[^}]*\}/, `\\boxed{${Number.isFinite(n) ? Math.round(n + rng.pick([-3, -1, 1, 2, 10])) : 0}}`);
      flaws.push('analyst-number');
    }
    return { flaws, first, fixed, repairs };
  }
  const de = codeOf(ref.data_engineer[0]);
  const numeric = [...de.matchAll(/COALESCE\((\w+), ([\d.-]+)\) AS \w+/g)];
  if (rng.bernoulli(rates.typo) && numeric.length) {
    const col = rng.pick(numeric)[1];
    first.data_engineer = sqlBlock(de.replace(`COALESCE(${col},`, `COALESCE(${misspell(col)},`));
    repairs.data_engineer = rng.bernoulli(rates.repair);
    flaws.push(repairs.data_engineer ? 'engineer-typo-repaired' : 'engineer-typo');
  } else if (rng.bernoulli(rates.noCoalesce) && numeric.length) {
    const m = rng.pick(numeric);
    first.data_engineer = sqlBlock(de.split(m[0]).join(`${m[1]} AS ${m[1]}`));
    flaws.push('engineer-missing-cells');
  } else if (rng.bernoulli(rates.noTest)) {
    first.data_engineer = sqlBlock(de.split('\n')[0]);
    flaws.push('engineer-no-test-features');
  }
  const mo = codeOf(ref.modeler[0]);
  const target = d.target;
  if (rng.bernoulli(rates.wrongTarget)) {
    first.modeler = sqlBlock(mo.replace(`'${target}'`, `'${misspell(target)}'`));
    repairs.modeler = rng.bernoulli(rates.repair);
    flaws.push(repairs.modeler ? 'modeler-target-repaired' : 'modeler-target');
  } else if (d.kind === 'classification' && rng.bernoulli(rates.linearForBinary)) {
    first.modeler = sqlBlock(mo.replace("'logistic')", "'linear')"));
    flaws.push('modeler-linear-for-binary');
  } else if (d.kind === 'regression' && rng.bernoulli(rates.wrongModel)) {
    first.modeler = sqlBlock(mo.replace("'linear')", "'logistic')"));
    flaws.push('modeler-wrong-model');
  } else if (rng.bernoulli(rates.constant)) {
    const cols = d.kind === 'classification' ? '0.5 AS probability, 0 AS prediction' : `${rng.int(1, 100)} AS prediction`;
    first.modeler = sqlBlock(`CREATE TABLE predictions AS SELECT id, ${cols} FROM test_features;`);
    flaws.push('modeler-constant');
  }
  let an = codeOf(ref.analyst[0]);
  if (d.kind === 'classification' && rng.bernoulli(rates.hardLabels)) {
    an = an.replace('probability AS prediction', 'prediction AS prediction');
    flaws.push('analyst-hard-labels');
  }
  if (rng.bernoulli(rates.limit)) {
    an = an.replace('FROM predictions;', `FROM predictions LIMIT ${rng.int(5, 50)};`);
    flaws.push('analyst-limit');
  }
  first.analyst = sqlBlock(an);
  fixed.analyst = rng.bernoulli(rates.noBoxed) ? 'Submission written.' : ref.analyst[1];
  if (fixed.analyst !== ref.analyst[1]) flaws.push('analyst-no-boxed');
  return { flaws, first, fixed, repairs };
}

/**
 * An AgentBackend that answers from plans instead of a model. Turn 1 is the plan's first reply; a
 * later turn repairs an error (when the plan says so) or says "Done.", as the prompt asks; the
 * Analyst's second turn is its closing line.
 */
export class ScriptedAgents implements AgentBackend {
  readonly trainable = false;
  constructor(private readonly plan: DataPlan) {}

  async generate(agentId: string, requests: GenerationRequest[]): Promise<GenerationResult[]> {
    const plan = this.plan;
    return requests.map((r) => {
      const turn = r.messages.filter((m) => m.role === 'assistant').length + 1;
      const lastOutput = r.messages[r.messages.length - 1].content;
      let text = plan.first[agentId];
      if (turn > 1) {
        const failed = /^Error:/m.test(lastOutput);
        text = failed && plan.repairs[agentId] ? plan.fixed[agentId] : agentId === 'analyst' ? plan.fixed.analyst : 'Done.';
      }
      return { promptText: '', promptTokens: [], tokens: [], logprobs: [], text, truncated: false };
    });
  }
}

export interface DataTranscript {
  trajectory: Trajectory;
  flaws: string[];
}

/**
 * Play the scripted data team on each task (one rollout per task, each with its own workspace).
 * `toolTimeoutMs` (default 5 s): a test on a loaded machine gives the fit more room.
 */
export async function playDataTeam(tasks: DataRolloutTask[], opts: { rng: Rng; tools: ToolRunners; rates?: DataFlawRates; toolTimeoutMs?: number }): Promise<DataTranscript[]> {
  const out: DataTranscript[] = [];
  for (const task of tasks) {
    const plan = dataPlan(task, opts.rng, opts.rates);
    const [trajectory] = await runRollouts(DATA_CHAIN, [task], {
      agents: new ScriptedAgents(plan), tools: opts.tools, samplesPerTask: 1, temperature: 0, seed: 0,
      toolTimeoutMs: opts.toolTimeoutMs ?? 5000, outcome: dataOutcome,
    });
    out.push({ trajectory, flaws: plan.flaws });
  }
  return out;
}

/** The coach's view of each agent of a data trajectory, exactly as training builds it (facts included). */
export function dataCoachContexts(t: Trajectory): ActionContext[] {
  return DATA_CHAIN.agents.map((a) => agentContext(DATA_CHAIN, t, a.id, dataFacts(t, a.id))).filter((c): c is ActionContext => c !== null);
}

/** Judge examples of a data trajectory, labelled by the rule data coach (facts: files, owners, metrics). */
export function dataJudgeItems(t: Trajectory, tok: TextTokenizer): JudgeItem[] {
  return dataCoachContexts(t).map((c) => judgeItem(tok, c, dataRuleScore(c)));
}
