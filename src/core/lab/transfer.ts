/**
 * What the page can download, built in the worker: adapters (one PEFT folder per agent, zipped)
 * and metrics (CSV, one row per iteration); what it uploads (a PEFT folder or its zip); and the
 * inspector's light view of a trajectory. (Trajectories download as the run's trajectories.jsonl,
 * the same lines as `mappa train`'s.)
 *
 * For: the lab's `export` and `import` requests and its trajectory views (lab.ts, runs.ts).
 * Not for: the files' formats themselves (lora/peft.ts writes PEFT; this only arranges and zips).
 *
 * Example: zipAdapters({solver: {'adapter_config.json': …, 'adapter_model.safetensors': …}})
 *          -> zip with solver/adapter_config.json, solver/adapter_model.safetensors
 */
import { unzipSync, zipSync } from 'fflate';
import { importPeft } from '../engine/lora/peft.ts';
import { memorySource } from '../engine/model/sources.ts';
import { teamOf } from '../domains/index.ts';
import { TRAJECTORIES } from '../loop/checkpoint.ts';
import type { IterationMetrics } from '../loop/records.ts';
import type { RunSession } from '../loop/session.ts';
import { agentContext } from '../loop/rewards.ts';
import type { Trajectory } from '../loop/trajectory.ts';
import type { WorkflowSpec } from '../loop/workflow.ts';
import type { ExportKind, Requests } from './protocol.ts';
import type { LabStore } from './shelf.ts';
import type { TrajectoryView } from './views.ts';

function zipAdapters(perAgent: Record<string, Record<string, Uint8Array>>): Uint8Array {
  const tree: Record<string, Record<string, Uint8Array>> = {};
  for (const [agent, files] of Object.entries(perAgent)) tree[agent] = { ...files };
  return zipSync(tree, { level: 0 }); // safetensors do not compress; store them as they are
}

/**
 * Files of one PEFT adapter from an upload: a zip (its adapter_config.json may sit in a folder) or
 * loose files. Returns name -> bytes with the folder stripped.
 */
export function adapterFiles(upload: Record<string, Uint8Array>): Record<string, Uint8Array> {
  let files = upload;
  const zipName = Object.keys(upload).find((n) => n.endsWith('.zip'));
  if (zipName) {
    try {
      files = unzipSync(upload[zipName]);
    } catch (e) {
      throw new Error(`adapter upload: "${zipName}" is not a readable zip (${(e as Error).message}); it may be cut short or not a zip: ` +
        'export the adapters again, or upload the PEFT folder\'s files (adapter_config.json, adapter_model.safetensors)');
    }
  }
  const config = Object.keys(files).find((n) => n.endsWith('adapter_config.json'));
  if (!config) throw new Error('adapter upload: no adapter_config.json found (upload a PEFT folder\'s files or a zip of it)');
  const dir = config.slice(0, -'adapter_config.json'.length);
  const out: Record<string, Uint8Array> = {};
  for (const [name, bytes] of Object.entries(files)) if (name.startsWith(dir) && !name.endsWith('/')) out[name.slice(dir.length)] = bytes;
  return out;
}

/** The inspector's light copy of a trajectory (no token ids or log-probs). */
function trajectoryView(t: Trajectory): TrajectoryView {
  return {
    task: { id: t.task.id, problem: t.task.problem, answer: t.task.answer },
    sample: t.sample,
    ...(t.branch ? { branch: [...t.branch] } : {}),
    finalAnswer: t.finalAnswer,
    correct: t.correct,
    actions: t.actions.map((a) => ({
      agentId: a.agentId, role: a.role, turn: a.turn, messages: a.messages.map((m) => ({ role: m.role, content: m.content })),
      text: a.text, tokens: a.tokens.length, truncated: a.truncated, observation: a.observation, coach: a.coach, reward: a.reward, advantage: a.advantage,
    })),
  };
}

/** The file a run keeps its last batch's views in (what the inspector shows when the run is opened again). */
export const LAST_TRAJECTORIES = 'last-trajectories.json';

/**
 * The views of a batch. When an AI coach scored it (a judge model, WebLLM), each action also carries
 * the rater's verdict on the same context: the team's rubric, which a judge is trained and measured
 * against, so the inspector can show the two side by side. A rubric-scored batch needs no second view.
 * Example: relay, coach "model:models/relay-judge": action.coach.score 10, action.rater {score: 0, reason: "passed its input on"}.
 */
export async function trajectoryViews(w: WorkflowSpec, trajs: Trajectory[], coachName: string): Promise<TrajectoryView[]> {
  const views = trajs.map(trajectoryView);
  if (!/^(model|webllm):/.test(coachName)) return views;
  const domain = teamOf(w);
  const jobs = trajs.flatMap((t, i) => w.agents.flatMap((spec) => {
    const ctx = agentContext(w, t, spec.id, domain.facts?.(t, spec.id));
    return ctx ? [{ i, agentId: spec.id, ctx }] : [];
  }));
  const verdicts = await domain.ruleCoach().scoreBatch(jobs.map((j) => j.ctx));
  verdicts.forEach((r, k) => {
    for (const a of views[jobs[k].i].actions) if (a.agentId === jobs[k].agentId) a.rater = { score: r.score, reason: r.reason };
  });
  return views;
}

const csvCell = (v: unknown) => (v === undefined || v === null ? '' : typeof v === 'number' ? String(+v.toPrecision(6)) : JSON.stringify(String(v)));

/** metrics.csv: iteration, accuracy, reward, KL, eval, tokens/s, seconds per phase, then per agent score/reward/loss/kl. */
export function metricsCsv(records: (IterationMetrics | { iteration: number; eval?: IterationMetrics['eval'] })[]): string {
  const agents = [...new Set(records.flatMap((r) => ('perAgent' in r ? Object.keys(r.perAgent) : [])))];
  const header = ['iteration', 'train_accuracy', 'mean_reward', 'kl', 'eval_greedy', 'eval_sampled', 'trajectories',
    'rollout_tokens_per_s', 'update_tokens_per_s', 's_rollout', 's_coach', 's_update', 's_eval', 's_checkpoint',
    ...agents.flatMap((a) => [`${a}_score`, `${a}_reward`, `${a}_loss`, `${a}_kl`])];
  const rows = records.map((r) => {
    const m = r as Partial<IterationMetrics> & { iteration: number };
    return [m.iteration, m.trainAccuracy, m.meanReward, m.kl, m.eval?.greedy, m.eval?.sampled, m.trajectories,
      m.rolloutTokensPerSecond, m.updateTokensPerSecond, m.seconds?.rollout, m.seconds?.coach, m.seconds?.update, m.seconds?.eval, m.seconds?.checkpoint,
      ...agents.flatMap((a) => { const p = m.perAgent?.[a]; return [p?.meanScore, p?.reward, p?.loss, p?.kl]; })].map(csvCell).join(',');
  });
  return [header.join(','), ...rows].join('\n') + '\n';
}

/** The open run's file of kind `what`, as the page downloads it (the `export` request). */
export async function exportFile(run: { runId: string; store: LabStore; session: RunSession }, what: ExportKind): Promise<Requests['export']['value']> {
  const { store, runId } = run;
  if (what === 'adapters') return { name: `${runId}-adapters.zip`, mime: 'application/zip', bytes: zipAdapters(await run.session.adapterFiles()) };
  if (what === 'trajectories') {
    const text = (await store.readFile(TRAJECTORIES)) ?? '';
    return { name: `${runId}-trajectories.jsonl`, mime: 'application/x-ndjson', bytes: new TextEncoder().encode(String(text)) };
  }
  return { name: `${runId}-metrics.csv`, mime: 'text/csv', bytes: new TextEncoder().encode(metricsCsv(await store.metrics())) };
}

/** Replaces agent `agentId`'s adapter in the open run by an uploaded PEFT folder (or its zip), and checkpoints (the `import` request). */
export async function importAdapter(session: RunSession, agentId: string, files: Record<string, Uint8Array>, allow: () => Promise<void>): Promise<{ agentId: string }> {
  const trainer = session.trainer;
  if (!trainer.policies.get(agentId)) throw new Error(`no trainable agent "${agentId}" in this team (${[...trainer.policies.keys()].join(', ')})`);
  await allow();
  trainer.replaceAdapter(agentId, await importPeft(memorySource(adapterFiles(files), 'uploaded adapter'), trainer.parts.agentModel.config, agentId));
  await trainer.checkpoint();
  return { agentId };
}
