/**
 * `npx tsx scripts/pretrain-relay-judge.ts --seed 0`: builds models/relay-judge, the relay team's own
 * judge (a tiny causal LM the size of models/relay), from this repository and models/relay alone, in
 * about 38 minutes on a 2-core machine (wasm, one thread; docs/judges.md has the measured build).
 *
 * Data: the real relay team's actions. models/relay (no adapter) plays the relay workflow of every
 * team size 1..6 on training tasks (never the held-out ones) at temperature 1, so the mix of right /
 * passed-on / other replies is the one the coach meets in training; each action is turned into the
 * coach prompt exactly as ModelCoach builds it at coaching time (agentContext -> coachPrompt with the
 * relay team's own template, RELAY_COACH_TEMPLATE: the verdict first, the agent's input last, so the
 * prompt ends as the relay prompt does; --template generic for the generic one), and labelled by the
 * relay rubric (relayRuleScore), which plays the human
 * rater: "PROCESS_SCORE: 10|0|5" (+ "ANSWER_CORRECT: 0|1" for the final agent). Balanced by score:
 * the larger of the 0 / 10 classes is subsampled to the size of the other (5s all kept).
 *
 * Pipeline: rated steps -> a byte-level BPE learnt on the rendered chats (digits single tokens) -> a
 * tied Llama (2 layers, hidden 64) trained on the answer tokens (trainModel, as scripts/pretrain-relay.ts)
 * -> checkpoints at --checkpoints steps (to --checkpoint-dir, not shipped: judges of several measured
 * qualities) -> a quick check on held-out steps -> a Hugging Face folder with a card (writeModelFolder).
 *
 * The recipe (the defaults; docs/judges.md has the ablation): the judge starts from models/relay's
 * weights (--init; it already reads "x + k" at the end of a prompt and works the sum out), its tokenizer
 * grown by the coach prompt's words; its answer first names the digit the step should give and copies
 * the digit the agent gave (--scratchpad 2: "2 7\nPROCESS_SCORE: 0"), so the score is a comparison of
 * two adjacent tokens; every step is also added as its counterfactual twin (--pairs 1: the same input
 * with another reply, re-rated), so only the reply decides the score. With the team's template the loss
 * sits on a plateau (about 0.06 per answer token, ranking at chance) for some 3,500 steps, then falls
 * within about 1,000 steps to under 0.01: the default runs 7,000 steps (or --max-seconds) so that it is
 * past the drop, and the checkpoints through the drop are judges of every quality in between.
 *
 * Flags: --seed, --out (default models/relay-judge), --tasks (per team size), --samples, --steps, --lr,
 *        --hidden, --layers, --vocab, --tokens-per-batch, --max-seconds (training stops there; the
 *        schedule decays by time), --checkpoints (steps and ranges, e.g. 50,150 or 3000-4500:100),
 *        --checkpoint-dir (default /tmp/relay-judge-ckpt), --relay (the team's model), --init (warm start;
 *        '' = random), --scratchpad 0|1|2, --pairs 0|1 (add each step's counterfactual twin: the same
 *        context with another reply, re-rated), --template team|generic (the coach template it learns),
 *        --sizes (the team sizes played, e.g. 1-6 or 1-6,7-128:11; default 1-6), --large-steps (a size above 6
 *        plays ceil(large-steps / n) tasks, so each such size gives about large-steps x samples steps and the
 *        sizes 1..6, at --tasks each, keep their weight).
 * Larger teams: the recipe's judge, trained on 1..6, copies the agent's reply from a fixed distance before the
 * prompt's end, and every prompt of 1..6 has the same length; "of 16" adds a token and it reads the wrong one.
 * Continuing it on teams up to 128 (docs/judges.md, "The relay judge at any team size"):
 *   npx tsx scripts/pretrain-relay-judge.ts --seed 0 --init models/relay-judge --sizes 1-6,7-128:11 --steps 3000 ...
 * Measured fully by: npm run bench -- judge --relay (bench/judge.ts).
 * Example: npx tsx scripts/pretrain-relay-judge.ts --seed 0 --steps 100 --out /tmp/rj   (a quick trial)
 */
import * as tf from '@tensorflow/tfjs-core';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { initBackend, describeBackend } from '../src/core/engine/backend.ts';
import { parameterCount, parseConfig } from '../src/core/engine/model/config.ts';
import { loadModel, type LoadedModel } from '../src/core/engine/model/load.ts';
import { folderSource } from '../src/core/engine/model/sources.ts';
import { EngineAgents } from '../src/core/loop/agents.ts';
import { ModelCoach } from '../src/core/coach/coach.ts';
import { coachPrompt, DEFAULT_COACH_TEMPLATE, formatCoachAnswer } from '../src/core/coach/coach-format.ts';
import { RELAY_MAX_AGENTS, RELAY_MIN_AGENTS, RELAY_PRETRAINED_AGENTS, relayHeldOut, relayTasks } from '../src/core/domains/relay/tasks.ts';
import { baselineScores, judgeVsRater, relayRatedSteps, type RatedStep } from '../src/core/domains/relay/judge.ts';
import { Rng } from '../src/core/stats/rng.ts';
import { TextTokenizer } from '../src/core/engine/tokenizer/tokenizer.ts';
import { type ChatMessage } from '../src/core/engine/tokenizer/chat.ts';
import { readFile } from 'node:fs/promises';
import { bpeFromJson, tokenizerConfig, tokenizerJson, trainBpe } from './pretrain/bpe.ts';
import { llamaConfigJson, readModelFolder, writeModelFolder } from './pretrain/folder.ts';
import { extendEmbeddings, initWeights, trainModel } from './pretrain/train.ts';
import { relayStep } from '../src/core/domains/relay/tasks.ts';
import { RELAY_COACH_TEMPLATE, relayDigit, relayRuleScore } from '../src/core/domains/relay/team.ts';
import { chatExample } from './pretrain/transcripts.ts';
import { checkpointList, failWith, parseScriptFlags } from './pretrain/flags.ts';

const DEFAULTS = {
  seed: 0, out: 'models/relay-judge', tasks: 300, samples: 2, steps: 7000, lr: 3e-3, hidden: 64, layers: 2, vocab: 640,
  'tokens-per-batch': 4096, 'max-seconds': 2300, checkpoints: '2000-6000:100', 'checkpoint-dir': '/tmp/relay-judge-ckpt', relay: 'models/relay',
  scratchpad: 2, init: 'models/relay', pairs: 1, template: 'team', sizes: '1-6', 'large-steps': 400,
};
type Flags = typeof DEFAULTS;

const log = (msg: string) => console.log(`[pretrain-relay-judge ${new Date().toISOString().slice(11, 19)}] ${msg}`);

/** The "x + k" a relay step was given, read from the last line of its input; null when it holds no digit. */
function relayParts(input: string): { x: number; k: number } | null {
  const m = /(-?\d+)\s*\+\s*(\d+)\s*$/.exec(input.split('\n').pop()!.trim());
  return m ? { x: Number(m[1]), k: Number(m[2]) } : null;
}

/** The digit a relay step should give, read from the last line of its input ("7 + 5" -> 2); null when it holds no digit. */
export function relayWant(input: string): number | null {
  const p = relayParts(input);
  return p ? relayStep(p.x, p.k) : null;
}

/**
 * The judge's chat for one rated step: the coach prompt as the user turn, the rater's answer as the reply.
 * With `scratchpad`, the answer first names the digit the step should give, then the score
 * ("2\nPROCESS_SCORE: 10"): the judge works the sum out before comparing (parseCoachAnswer reads the
 * PROCESS_SCORE line wherever it stands; 16 tokens still hold the final agent's two lines).
 */
export function judgeChat(s: RatedStep, scratchpad: 0 | 1 | 2 = 1, template = RELAY_COACH_TEMPLATE): ChatMessage[] {
  const want = relayWant(s.context.input);
  const got = relayDigit(s.context.output);
  const answer = formatCoachAnswer(s.rating.score, s.rating.correct);
  const pad = scratchpad === 2 ? `${want ?? '-'} ${got ?? '-'}\n` : scratchpad === 1 ? `${want ?? '-'}\n` : '';
  return [{ role: 'user', content: coachPrompt(s.context, template) }, { role: 'assistant', content: `${pad}${answer}` }];
}

/**
 * A rated step's counterfactual twin: the same context with another reply, rated by the rubric. A right
 * step gets a wrong digit (the input passed on half the time, the commonest failure, else a random other
 * digit); any other step gets the right digit. Null when the input holds no digit to judge against.
 * Twins make the reply the only thing that differs within a pair, so the score can only be learnt by
 * comparing the reply with the step's result (no shortcut through the task's look).
 * Example: input "...\n7 + 5", output "2" (10) -> output "7" (0, passed on) or a random wrong digit.
 */
export function counterfactualTwin(s: RatedStep, rng: Rng): RatedStep | null {
  const p = relayParts(s.context.input);
  if (!p) return null;
  const want = relayStep(p.x, p.k);
  const passed = relayStep(p.x, 0);
  const reply = s.rating.score !== 10 ? want : passed !== want && rng.next() < 0.5 ? passed : (want + 1 + Math.floor(rng.next() * 9)) % 10;
  const context = { ...s.context, output: String(reply) };
  const r = relayRuleScore(context);
  const kind = r.score === 10 ? 'right' : reply === passed ? 'passed-on' : 'other';
  return { ...s, context, rating: { score: r.score, correct: context.final ? r.correct : undefined }, kind };
}

/** The coach template a judge learns: 'team' (the relay's own, RELAY_COACH_TEMPLATE) or 'generic' (DEFAULT_COACH_TEMPLATE). */
export function judgeTemplate(name: string): string {
  if (name === 'team') return RELAY_COACH_TEMPLATE;
  if (name === 'generic') return DEFAULT_COACH_TEMPLATE;
  throw new Error(`--template: "team" (the relay's own) or "generic", got "${name}"`);
}

/**
 * The team sizes of a --sizes spec: sizes and ranges FROM-TO or FROM-TO:BY, each within 1..RELAY_MAX_AGENTS.
 * Example: teamSizes('1-6,7-128:11') -> [1, 2, 3, 4, 5, 6, 7, 18, 29, ..., 117, 128]
 */
export function teamSizes(spec: string): number[] {
  const out = spec.split(',').filter(Boolean).flatMap((part) => {
    const m = /^(\d+)(?:-(\d+)(?::(\d+))?)?$/.exec(part.trim());
    if (!m) throw new Error(`--sizes: team sizes like 1-6,8,16 or 7-128:11, got "${part}"`);
    const [a, b, by] = [Number(m[1]), Number(m[2] ?? m[1]), Number(m[3] ?? 1)];
    if (by < 1 || b < a) throw new Error(`--sizes: a range runs FROM-TO:BY with TO >= FROM and BY >= 1, got "${part}"`);
    return Array.from({ length: Math.floor((b - a) / by) + 1 }, (_, i) => a + i * by);
  });
  const bad = out.find((n) => n < RELAY_MIN_AGENTS || n > RELAY_MAX_AGENTS);
  if (bad !== undefined) throw new Error(`--sizes: a relay team has ${RELAY_MIN_AGENTS}..${RELAY_MAX_AGENTS} agents, got ${bad}`);
  return [...new Set(out)].sort((x, y) => x - y);
}

/**
 * Training tasks a team of n plays: --tasks for the sizes the recipe knows (1..6), else ceil(largeSteps / n),
 * so every larger size adds about largeSteps steps a sample and the small sizes are not outweighed.
 * Example: tasksFor(4, 300, 400) -> 300; tasksFor(128, 300, 400) -> 4
 */
export function tasksFor(n: number, tasks: number, largeSteps: number): number {
  return n <= RELAY_PRETRAINED_AGENTS ? tasks : Math.max(1, Math.ceil(largeSteps / n));
}

/** Equal numbers of 0s and 10s (the larger class subsampled, seeded); every other score kept. */
export function balanceRated(steps: RatedStep[], rng: Rng): RatedStep[] {
  const zeros = steps.filter((s) => s.rating.score === 0).length;
  const tens = steps.filter((s) => s.rating.score === 10).length;
  const keep = Math.min(zeros, tens);
  return steps.filter((s) => (s.rating.score === 0 ? rng.next() < keep / zeros : s.rating.score === 10 ? rng.next() < keep / tens : true));
}

function histogram(steps: RatedStep[]): Record<string, number> {
  const h: Record<string, number> = {};
  for (const s of steps) h[s.kind] = (h[s.kind] ?? 0) + 1;
  return h;
}

async function main(): Promise<void> {
  const flags: Flags = parseScriptFlags('pretrain-relay-judge', DEFAULTS, process.argv.slice(2));
  const started = performance.now();
  const backend = await initBackend({ force: 'wasm' });
  log(`backend ${describeBackend(backend)}; flags ${JSON.stringify(flags)}`);

  // 1. The real relay team's actions on training tasks, every size, rated by the rubric.
  const relay = await loadModel(folderSource(flags.relay), { tokenizer: 'required' });
  const agents = new EngineAgents(relay, new Map(), 64);
  const rated: RatedStep[] = [];
  const sizes = teamSizes(String(flags.sizes));
  for (const n of sizes) {
    const count = tasksFor(n, flags.tasks, flags['large-steps']);
    rated.push(...(await relayRatedSteps(agents, n, relayTasks(n, `judge-${flags.seed}`, count), { seed: 1000 * flags.seed + n, samples: flags.samples })));
  }
  // --pairs 1: every step with a digit input also as its counterfactual twin (another reply, re-rated).
  if (flags.pairs) {
    const twinRng = new Rng(`relay-judge-twins/${flags.seed}`);
    rated.push(...rated.map((s) => counterfactualTwin(s, twinRng)).filter((s): s is RatedStep => s !== null));
  }
  const balanced = balanceRated(rated, new Rng(`relay-judge-balance/${flags.seed}`));
  const playSeconds = (performance.now() - started) / 1000;
  log(`${rated.length} rated steps ${JSON.stringify(histogram(rated))} in ${playSeconds.toFixed(0)} s; balanced: ${balanced.length} ${JSON.stringify(histogram(balanced))}`);

  // 2. Tokenizer on the rendered chats.
  const template = judgeTemplate(flags.template);
  const chats = balanced.map((s) => judgeChat(s, Math.max(0, Math.min(2, Math.round(flags.scratchpad))) as 0 | 1 | 2, template));
  const render = (m: ChatMessage[]) => m.map((x) => `<|im_start|>${x.role}\n${x.content}<|im_end|>\n`).join('');
  // Warm start (--init, default models/relay): its tokenizer grown by the coach prompt's words, its weights
  // (it already reads "x + k" and works the sum out in the relay prompt), new rows = mean of the merged pair.
  const init = flags.init ? await readModelFolder(flags.init, 256) : null;
  const baseBpe = init ? bpeFromJson(JSON.parse(await readFile(`${flags.init}/tokenizer.json`, 'utf8'))) : undefined;
  const bpe = trainBpe(new Rng(`relay-judge-bpe/${flags.seed}`).shuffle(chats.map(render)).slice(0, 1500), { vocabSize: flags.vocab, ...(baseBpe ? { base: baseBpe } : {}) });
  const tokJson = tokenizerJson(bpe);
  const positions = 256;
  const tokConfig = tokenizerConfig(bpe, positions);
  const tok = TextTokenizer.fromJson(tokJson, tokConfig);
  const examples = chats.map((m) => chatExample(tok, m));
  const longest = Math.max(...examples.map((e) => e.ids.length));
  if (longest > positions) throw new Error(`pretrain-relay-judge: an example has ${longest} tokens, over ${positions} positions; raise --vocab`);
  const meanLength = examples.reduce((s, e) => s + e.ids.length, 0) / examples.length;
  log(`${examples.length} examples, vocabulary ${bpe.vocab.size}, ${meanLength.toFixed(1)} tokens each (longest ${longest})`);

  // 3. The model, with checkpoints on the way.
  const eos = tok.tokenToId('<|im_end|>')!;
  const configJson = llamaConfigJson({
    vocabSize: bpe.vocab.size, hidden: flags.hidden, layers: flags.layers, heads: 4, kvHeads: 2, intermediate: flags.hidden * 3,
    positions, eosTokenId: eos, padTokenId: tok.tokenToId('<|endoftext|>')!,
  });
  const config = parseConfig(configJson);
  const weights = init ? init.weights : initWeights(config, new Rng(`relay-judge-init/${flags.seed}`));
  if (init && baseBpe) extendEmbeddings(weights, baseBpe, bpe);
  // The answer's length: the score lines (and ANSWER_CORRECT for the final agent) after the scratchpad; ModelCoach reads it.
  const generation = { eos_token_id: [eos, 0], pad_token_id: 0, do_sample: false, max_new_tokens: flags.scratchpad === 2 ? 24 : 16 };
  const checkpointSteps = new Set(checkpointList(String(flags.checkpoints)));
  const snapshots: { step: number; weights: Map<string, tf.Tensor> }[] = [];
  const report = await trainModel(config, weights, examples, {
    steps: flags.steps, tokensPerBatch: flags['tokens-per-batch'], lr: flags.lr, seed: flags.seed + 1, maxSeconds: flags['max-seconds'],
    log: ({ step, loss, seconds }) => {
      if (step % 25 === 0) log(`step ${step}: loss ${loss.toFixed(4)} (${seconds.toFixed(0)} s)`);
      if (checkpointSteps.has(step)) snapshots.push({ step, weights: new Map([...weights].map(([k, v]) => [k, tf.clone(v)])) });
    },
  });
  const trainSeconds = report.seconds;
  log(`trained ${report.steps} steps in ${trainSeconds.toFixed(0)} s: loss ${report.firstLoss.toFixed(3)} -> ${report.finalLoss.toFixed(3)}`);
  const files = (extra: Record<string, unknown>) => ({ 'config.json': configJson, 'tokenizer.json': tokJson, 'tokenizer_config.json': tokConfig, 'generation_config.json': generation, ...extra });
  for (const s of snapshots) {
    const dir = `${flags['checkpoint-dir']}/step-${s.step}`;
    await writeModelFolder(dir, files({ 'README.md': `relay judge checkpoint at step ${s.step} of ${flags.steps} (seed ${flags.seed}); not shipped.\n` }), s.weights);
    tf.dispose([...s.weights.values()]);
    log(`checkpoint ${dir}`);
  }

  // 4. A quick check on held-out steps of the real team (the full measurement: npm run bench -- judge --relay).
  await writeModelFolder(flags.out, files({ 'README.md': '(being written)\n' }), weights as Map<string, tf.Tensor>);
  const judge = await loadModel(folderSource(flags.out), { tokenizer: 'required' });
  const checkSizes = sizes.some((n) => n > RELAY_PRETRAINED_AGENTS) ? [2, 4, 6, 16, 128] : [2, 4, 6];
  const check = await heldOutCheck(agents, judge, template, checkSizes);
  log(`held-out check (${check.steps} steps, N = ${checkSizes.join('/')}): ranking ${(check.ranking.p * 100).toFixed(1)} %, MAE ${check.mae.p.toFixed(2)} `
    + `(mean baseline ${check.meanMae.p.toFixed(2)}), agreement ${(check.agreement.p * 100).toFixed(1)} %, unparsed ${check.failures}`);
  judge.model.dispose();
  relay.model.dispose();

  const totalSeconds = (performance.now() - started) / 1000;
  const summary = {
    seed: flags.seed, flags, backend: describeBackend(backend), parameters: parameterCount(config), vocabSize: bpe.vocab.size,
    rated: histogram(rated), balanced: histogram(balanced), examples: examples.length, meanTokens: meanLength, longest, playSeconds,
    train: report, check,
    checkpoints: snapshots.map((s) => `${flags['checkpoint-dir']}/step-${s.step}`), totalSeconds,
  };
  await writeModelFolder(flags.out, files({ 'README.md': judgeCard(summary), 'report.json': summary }), weights as Map<string, tf.Tensor>);
  log(`${flags.out}/model.safetensors: ${((await stat(`${flags.out}/model.safetensors`)).size / 1024).toFixed(0)} KiB; done in ${(totalSeconds / 60).toFixed(1)} min`);
}

/**
 * The build's quick check of a judge on held-out steps of the real team: N = 2/4/6 (40 held-out tasks each;
 * with larger sizes trained, also 16 and 128, about 240 steps each), the within-agent ranking, MAE and
 * agreement against the rater, and the mean-score baseline. The report.json `check` of every relay judge
 * (and what the page shows as its ranking), in that report's shape. Example: await heldOutCheck(agents, judge, RELAY_COACH_TEMPLATE, [2, 4, 6])
 *   -> { steps: 480, vs: { ranking: { p: 0.617, ... }, ... }, ... }
 */
export async function heldOutCheck(agents: EngineAgents, judge: LoadedModel, template: string, checkSizes: number[]) {
  const held: RatedStep[] = [];
  for (const n of checkSizes) {
    const count = n <= RELAY_PRETRAINED_AGENTS ? 40 : Math.ceil(240 / n);
    held.push(...(await relayRatedSteps(agents, n, relayHeldOut(n).slice(0, count), { seed: 77 + n })));
  }
  const scored = await new ModelCoach(judge, template).scoreBatch(held.map((s) => s.context));
  const rater = held.map((s) => s.rating.score);
  const vs = judgeVsRater(rater, scored.map((r) => r.score), held.map((s) => s.group));
  const meanVs = judgeVsRater(rater, baselineScores(rater).mean, held.map((s) => s.group));
  return { sizes: checkSizes, steps: held.length, ranking: vs.ranking, mae: vs.mae, agreement: vs.agreement, meanMae: meanVs.mae,
    failures: scored.filter((r) => !r.ok).length };
}

export function judgeCard(s: {
  seed: number; flags: Flags; backend: string; parameters: number; vocabSize: number; rated: Record<string, number>; balanced: Record<string, number>;
  examples: number; meanTokens: number; longest: number; playSeconds: number;
  train: { steps: number; seconds: number; firstLoss: number; finalLoss: number };
  check: { sizes?: number[]; steps: number; ranking: { p: number }; mae: { p: number }; agreement: { p: number }; meanMae: { p: number }; failures: number }; totalSeconds: number;
}): string {
  const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
  return `---
license: apache-2.0
library_name: transformers
pipeline_tag: text-generation
tags: [mappa-sandbox, relay, judge, coach, tiny, synthetic]
---
# relay-judge: the relay team's own coach model

A ${(s.parameters / 1000).toFixed(0)}k-parameter Llama (${s.flags.layers} layers, hidden ${s.flags.hidden}, byte-level BPE of ${s.vocabSize} tokens,
ChatML) made by \`npx tsx scripts/pretrain-relay-judge.ts --seed ${s.seed}\`. It reads the coach prompt exactly as
ModelCoach formats it for one relay action, with ${s.flags.template === 'team' ? 'the relay team\'s own template (RELAY_COACH_TEMPLATE, src/core/domains/relay/team.ts:\n\`<role> replied "<reply>".\` then the agent\'s input, which ends with the step, e.g. \`7 + 5\`)' : 'the generic template (DEFAULT_COACH_TEMPLATE, src/core/coach/coach-format.ts)'}, and answers
\`PROCESS_SCORE: <0-10>\` (and \`ANSWER_CORRECT: <0|1>\` for the final agent). It is the relay team's own judge: what
\`coach.model: "team"\` names for the relay team (src/core/domains/relay/index.ts), read with \`coach.template: "team"\`.

## Recipe
- Data: models/relay (no adapter) played the relay workflow of the team sizes ${s.flags.sizes ?? '1-6'} on ${s.flags.tasks} training tasks
  per size up to 6${Number(s.flags['large-steps']) ? ` and ceil(${s.flags['large-steps']} / n) for a larger size n` : ''} (never held-out ones), ${s.flags.samples} samples each at temperature 1: ${JSON.stringify(s.rated)} steps
  (${s.playSeconds.toFixed(0)} s). The relay rubric (relayRuleScore) is the rater. Balanced to equal 0s and 10s:
  ${JSON.stringify(s.balanced)}; ${s.examples} examples, ${s.meanTokens.toFixed(0)} tokens on average (longest ${s.longest}).
- Counterfactual twins: ${s.flags.pairs ? 'every step with a digit input is also added with another reply, re-rated (the reply alone decides the score)' : 'none'}.
- Start: ${s.flags.init ? `warm from ${s.flags.init}'s weights, its tokenizer grown by the coach prompt's words` : 'random weights'}; scratchpad ${s.flags.scratchpad === 2 ? 'on: the digit the step should give and the digit given, then the score (\`2 2\\nPROCESS_SCORE: 10\`)' : s.flags.scratchpad ? 'on: the digit the step should give, then the score (\`2\\nPROCESS_SCORE: 10\`)' : 'off'}.
- Training: Adam, lr ${s.flags.lr}, ${s.flags['tokens-per-batch']} tokens a batch, loss on the answer tokens, ${s.train.steps} steps
  (loss ${s.train.firstLoss.toFixed(3)} -> ${s.train.finalLoss.toFixed(3)}) in ${s.train.seconds.toFixed(0)} s on ${s.backend}; the learning rate decays
  by steps or by the time cap (${s.flags['max-seconds']} s), whichever is further along.
- Wall time: ${(s.totalSeconds / 60).toFixed(1)} min in all (playing, training, checkpoints, the check below).

## Quick check on held-out steps (N = ${(s.check.sizes ?? [2, 4, 6]).join(', ')}; 40 held-out tasks each up to 6, ceil(240 / N) above, T = 1)
${s.check.steps} steps: within-agent ranking accuracy ${pct(s.check.ranking.p)}, MAE ${s.check.mae.p.toFixed(2)} (always-the-mean: ${s.check.meanMae.p.toFixed(2)}),
agreement at the pass line (score >= 5) ${pct(s.check.agreement.p)}, ${s.check.failures} unparsed answers.
The measurement with intervals and baselines: \`npm run bench -- judge --relay\` (docs/judges.md).
`;
}

// Run when invoked as a script (tests import counterfactualTwin and the chat format without running it).
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch(failWith('pretrain-relay-judge'));
}
