/**
 * `npx tsx scripts/build-weak-relay-judge.ts`: builds models/relay-judge-weak, a relay judge of middling
 * quality (ranking about 70 %, below the ~80 % from which relay judges coached) for the page's "correct a weak judge" step and the corrections bench, in one
 * command. It is a checkpoint of the relay judge's own build (scripts/pretrain-relay-judge.ts at its
 * defaults: stage 1 of scripts/build-relay-judge.ts), taken inside the drop from chance to the rater
 * (docs/judges.md, "The plateau and the drop": ranking 50 % until about step 3,300, 99 % by 4,500).
 *
 * Steps:
 *   1. the build, with checkpoints every 100 steps through the drop (--checkpoints 3000-6400:100 into
 *      <work>/ckpt, the final judge into <work>/final; about 38 min on an idle 2-core machine);
 *   2. checkpoints ranked by the build's own held-out check (heldOutCheck: N = 2, 4, 6, 40 held-out tasks each,
 *      480 steps; about 30 s each), by bisection on the step for --target (the ranking rises through the drop), so
 *      about 6 of the 35 are ranked; each ranked one gets its report.json (the build's flags, the step, the check),
 *      reused by a later call, so that it is a judge folder `mappa judge teach` and the corrections bench can read;
 *   3. the ranked checkpoint nearest --target copied to --out, its report.json naming the step, the command and
 *      every ranked checkpoint's ranking.
 * Flags: --out (default models/relay-judge-weak), --work (default /tmp/relay-judge-weak-build), --target (0.7),
 *        --from-checkpoints DIR (skip step 1: rank the checkpoints of a finished run of step 1's command, DIR
 *        holding ckpt/step-<k>/ and final/report.json), --help.
 * The drop is steep: in the build of 2026-12-06 the checkpoints read 50.0 % at step 4,300, 69.6 % at 4,400 and 97.1 %
 * at 4,500, so a judge at 60 % or 80 % falls between two checkpoints 100 steps apart.
 * Example: npx tsx scripts/build-weak-relay-judge.ts --target 0.7
 */
import { spawnSync } from 'node:child_process';
import { copyFile, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { initBackend } from '../src/core/engine/backend.ts';
import { loadModel } from '../src/core/engine/model/load.ts';
import { folderSource } from '../src/core/engine/model/sources.ts';
import { EngineAgents } from '../src/core/loop/agents.ts';
import { failWith, parseScriptFlags } from './pretrain/flags.ts';
import { heldOutCheck, judgeTemplate } from './pretrain-relay-judge.ts';

const DEFAULTS = { out: 'models/relay-judge-weak', work: '/tmp/relay-judge-weak-build', target: 0.7, 'from-checkpoints': '', help: 0 };
/**
 * Through the drop, wherever it falls: one build of the recipe's seed 0 dropped at steps 3,300-3,600 (docs/judges.md:
 * 57.7 % at 3,300, 80.9 % at 3,500), another was still on the plateau at 3,900 (its loss 0.058 there); the time cap
 * (2,300 s) ends the build at about step 6,500 on an idle machine. 35 snapshots of 0.5 MB each.
 */
const CHECKPOINTS = '3000-6400:100';

/** Step 1's command: the relay judge's recipe (the script's defaults), checkpoints through the drop. */
export function buildArgs(work: string): string[] {
  return ['scripts/pretrain-relay-judge.ts', '--seed', '0', '--checkpoints', CHECKPOINTS, '--checkpoint-dir', path.join(work, 'ckpt'), '--out', path.join(work, 'final')];
}

/** The checkpoint whose ranking is nearest the target (the earlier step on a tie). Example: nearest([{step: 1, p: 0.5}, {step: 2, p: 0.62}], 0.6) -> step 2 */
export function nearest<T extends { step: number; p: number }>(ranked: T[], target: number): T {
  return [...ranked].sort((a, b) => Math.abs(a.p - target) - Math.abs(b.p - target) || a.step - b.step)[0];
}

async function main(): Promise<void> {
  const flags = parseScriptFlags('build-weak-relay-judge', DEFAULTS, process.argv.slice(2), ['help']);
  if (flags.help) {
    console.log('npx tsx scripts/build-weak-relay-judge.ts [--out models/relay-judge-weak] [--work DIR] [--target 0.7] [--from-checkpoints DIR]\n'
      + 'Builds the relay judge with checkpoints through its drop (about 38 min on 2 cores), ranks them, keeps the one nearest the target.');
    return;
  }
  if (!(flags.target > 0.5 && flags.target < 1)) throw new Error(`--target is a ranking between 0.5 and 1, got ${flags.target}`);
  const work = flags['from-checkpoints'] || flags.work;
  const command = `npx tsx ${buildArgs(work).join(' ')}`;
  if (!flags['from-checkpoints']) {
    console.error(`[build-weak-relay-judge] step 1: ${command}`);
    const r = spawnSync('npx', ['tsx', ...buildArgs(work)], { stdio: 'inherit' });
    if (r.status !== 0) throw new Error(`step 1 failed (exit ${r.status}); ${flags.out} is untouched`);
  }
  if (!existsSync(path.join(work, 'final', 'report.json'))) {
    throw new Error(`--from-checkpoints ${work}: no final/report.json there; run without --from-checkpoints to build (step 1)`);
  }
  const finalReport = JSON.parse(await readFile(path.join(work, 'final', 'report.json'), 'utf8')) as { flags: Record<string, unknown>; totalSeconds: number };
  const ckptDir = path.join(work, 'ckpt');
  const steps = (await readdir(ckptDir)).map((d) => /^step-(\d+)$/.exec(d)?.[1]).filter((x): x is string => !!x).map(Number).sort((a, b) => a - b);
  if (!steps.length) throw new Error(`${ckptDir} holds no step-<k> checkpoints; run without --from-checkpoints`);
  await initBackend({ force: 'wasm' });
  const relay = await loadModel(folderSource(String(finalReport.flags.relay ?? 'models/relay')), { tokenizer: 'required' });
  const agents = new EngineAgents(relay, new Map(), 64);
  const template = judgeTemplate(String(finalReport.flags.template ?? 'team'));
  const ranked: { step: number; p: number; low: number; high: number; dir: string }[] = [];
  const rank = async (step: number) => {
    const dir = path.join(ckptDir, `step-${step}`);
    const file = path.join(dir, 'report.json');
    type Check = Awaited<ReturnType<typeof heldOutCheck>>;
    let check = existsSync(file) ? (JSON.parse(await readFile(file, 'utf8')) as { check?: Check }).check : undefined;
    if (!check) {
      const judge = await loadModel(folderSource(dir), { tokenizer: 'required' });
      check = await heldOutCheck(agents, judge, template, [2, 4, 6]);
      judge.model.dispose();
      await writeFile(file, JSON.stringify({ flags: finalReport.flags, checkpoint: { step, of: command }, check }, null, 1));
    }
    const { p, low, high } = check.ranking;
    ranked.push({ step, p, low, high, dir });
    console.error(`[build-weak-relay-judge] step ${step}: ranking ${(p * 100).toFixed(1)} % [${(low * 100).toFixed(1)}, ${(high * 100).toFixed(1)}] on ${check.steps} held-out steps`);
    return p;
  };
  // Bisection on the step: below the target, look later; at or above it, earlier.
  let [lo, hi] = [0, steps.length - 1];
  if ((await rank(steps[lo])) < flags.target && (await rank(steps[hi])) > flags.target) {
    while (hi - lo > 1) {
      const mid = (lo + hi) >> 1;
      if ((await rank(steps[mid])) < flags.target) lo = mid;
      else hi = mid;
    }
  }
  // Every checkpoint an earlier call ranked is listed too (its check is read back, not run again).
  for (const step of steps) if (!ranked.some((r) => r.step === step) && existsSync(path.join(ckptDir, `step-${step}`, 'report.json'))) await rank(step);
  ranked.sort((a, b) => a.step - b.step);
  relay.model.dispose();
  const pick = nearest(ranked, flags.target);
  await mkdir(flags.out, { recursive: true });
  for (const f of await readdir(pick.dir)) if (f !== 'README.md') await copyFile(path.join(pick.dir, f), path.join(flags.out, f));
  const report = JSON.parse(await readFile(path.join(pick.dir, 'report.json'), 'utf8')) as Record<string, unknown>;
  const built = { command: 'npx tsx scripts/build-weak-relay-judge.ts' + (flags.target !== DEFAULTS.target ? ` --target ${flags.target}` : ''), step1: command,
    target: flags.target, buildMinutes: finalReport.totalSeconds / 60, checkpoints: ranked.map(({ step, p, low, high }) => ({ step, ranking: { p, low, high } })) };
  await writeFile(path.join(flags.out, 'report.json'), JSON.stringify({ ...report, built }, null, 1));
  const pct = (x: number) => `${(x * 100).toFixed(1)}`;
  await writeFile(path.join(flags.out, 'README.md'), `# relay-judge-weak: a weak relay judge, on purpose

The relay team's judge at step ${pick.step} of its own build (\`${command}\`, the recipe of models/relay-judge), taken
inside the drop from chance to the rater. Built by \`${built.command}\`, which keeps the checkpoint whose ranking
is nearest ${pct(flags.target)} %.

- Ranking of an agent's differently-rated held-out steps as the rater (the relay rubric) orders them:
  **${pct(pick.p)} % [${pct(pick.low)}, ${pct(pick.high)}]** on ${(report.check as { steps: number }).steps} steps (N = 2, 4, 6), report.json \`check\`.
- The ranked checkpoints (bisection on the step, and any an earlier call ranked): ${ranked.map((r) => `step ${r.step}: ${pct(r.p)} %`).join('; ')}.
- For: the page's guided step after the lesson ("this judge is weak; correct 10 of its scores and teach it"), and
  the corrections bench (\`npm run -s bench -- corrections\`). Not a coach to train with: relay judges below
  about 80 % made the team no better than untrained (docs/judges.md).
`);
  console.error(`[build-weak-relay-judge] ${flags.out}: step ${pick.step}, ranking ${pct(pick.p)} % (target ${pct(flags.target)} %)`);
  if (!existsSync(path.join(flags.out, 'model.safetensors'))) throw new Error(`${flags.out}: no model.safetensors was copied`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch(failWith('build-weak-relay-judge'));
}
