/**
 * `npx tsx scripts/build-relay-judge.ts`: builds the shipped relay judge (models/relay-judge, teams of
 * 1..128) in one command: the three stages its report.json `lineage` records, each a run of
 * scripts/pretrain-relay-judge.ts continuing the last, then the folder copied to --out and the lineage
 * (each stage's command, start, sizes, examples, steps and minutes) written into its report.json.
 *
 * Stages (docs/judges.md, "The relay judge at any team size"; about 38 + 32 + 12 min on an idle 2-core machine):
 *   1. the recipe on teams of 1..6, from models/relay's weights;
 *   2. continued on 1..6 and 11 larger sizes up to 128 (--large-steps 400), 4,000 steps or 1,800 s;
 *   3. continued again (seed 1, a third of the learning rate), 1,500 steps or 780 s.
 * Each stage writes its folder under --work (default /tmp/relay-judge-build/stage-<k>); --out (default
 * models/relay-judge) is written only when all three have finished. Checkpoints are not kept (they do not
 * change the weights; pretrain-relay-judge.ts --checkpoints writes them). Stages 2 and 3 stop at their time
 * caps on a slow or shared machine, so a rebuild matches the shipped judge's recipe, not its bytes.
 * Flags: --out DIR, --work DIR, --from-stage K (start at stage K, taking stage K-1's folder from --work),
 *        --dry-run (print the stages' commands and the lineage, run nothing), --help.
 * Example: npx tsx scripts/build-relay-judge.ts --dry-run
 */
import { spawnSync } from 'node:child_process';
import { copyFile, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { failWith, parseScriptFlags } from './pretrain/flags.ts';

const SCRIPT = 'scripts/pretrain-relay-judge.ts';
const DEFAULTS = { out: 'models/relay-judge', work: '/tmp/relay-judge-build', 'from-stage': 1, 'dry-run': 0, help: 0 };
const LARGE = ['--sizes', '1-6,7-128:11', '--large-steps', '400'];

export interface Stage {
  stage: number;
  /** The start as the lineage names it. */
  init: string;
  sizes: string;
  args: string[];
}

/** The three stages, each writing <work>/stage-<k> and starting from the one before. */
export function relayJudgeStages(work: string): Stage[] {
  const dir = (k: number) => path.join(work, `stage-${k}`);
  return [
    { stage: 1, init: 'models/relay', sizes: '1-6', args: ['--seed', '0'] },
    { stage: 2, init: 'stage 1', sizes: '1-6,7-128:11', args: ['--seed', '0', '--init', dir(1), ...LARGE, '--steps', '4000', '--max-seconds', '1800'] },
    { stage: 3, init: 'stage 2', sizes: '1-6,7-128:11', args: ['--seed', '1', '--init', dir(2), ...LARGE, '--lr', '0.001', '--steps', '1500', '--max-seconds', '780'] },
  ].map((s) => ({ ...s, args: [...s.args, '--checkpoints=', '--out', dir(s.stage)] }));
}

const command = (s: Stage) => `npx tsx ${SCRIPT} ${s.args.join(' ')}`;

async function main(): Promise<void> {
  const flags = parseScriptFlags('build-relay-judge', DEFAULTS, process.argv.slice(2), ['dry-run', 'help']);
  if (flags.help) {
    console.log('npx tsx scripts/build-relay-judge.ts [--out models/relay-judge] [--work /tmp/relay-judge-build] [--from-stage 1|2|3] [--dry-run]\n'
      + 'Builds the relay judge for teams of 1..128 in its three stages (about 80 min on 2 cores); --dry-run prints the commands.');
    return;
  }
  const from = flags['from-stage'];
  if (![1, 2, 3].includes(from)) throw new Error(`--from-stage takes 1, 2 or 3, got ${from}`);
  const stages = relayJudgeStages(flags.work);
  if (from > 1 && !flags['dry-run'] && !existsSync(path.join(flags.work, `stage-${from - 1}`, 'report.json'))) {
    throw new Error(`--from-stage ${from} needs stage ${from - 1}'s folder ${path.join(flags.work, `stage-${from - 1}`)}; run from an earlier stage`);
  }
  for (const s of stages) console.log(`${s.stage < from ? '(done) ' : ''}stage ${s.stage}: ${command(s)}`);
  console.log(`then: the stage-3 folder copied to ${flags.out}, its report.json given the lineage of the three stages`);
  if (flags['dry-run']) return;
  for (const s of stages.filter((x) => x.stage >= from)) {
    const started = Date.now();
    const r = spawnSync(process.execPath, ['--import', 'tsx', SCRIPT, ...s.args], { stdio: 'inherit' });
    if (r.status !== 0) throw new Error(`stage ${s.stage} failed (exit ${r.status ?? r.signal}); its command: ${command(s)}`);
    console.log(`[build-relay-judge] stage ${s.stage} done in ${((Date.now() - started) / 60000).toFixed(1)} min`);
  }
  const lineage = [];
  for (const s of stages) {
    const rep = JSON.parse(await readFile(path.join(flags.work, `stage-${s.stage}`, 'report.json'), 'utf8')) as {
      examples: number; train: { steps: number }; totalSeconds: number;
    };
    lineage.push({ stage: s.stage, command: command(s), init: s.init, sizes: s.sizes, examples: rep.examples, steps: rep.train.steps,
      minutes: Math.round(rep.totalSeconds / 6) / 10 });
  }
  const last = path.join(flags.work, 'stage-3');
  await mkdir(flags.out, { recursive: true });
  for (const f of await readdir(last)) await copyFile(path.join(last, f), path.join(flags.out, f));
  const report = JSON.parse(await readFile(path.join(flags.out, 'report.json'), 'utf8')) as Record<string, unknown>;
  await writeFile(path.join(flags.out, 'report.json'), JSON.stringify({ ...report, lineage }, null, 2) + '\n');
  console.log(`[build-relay-judge] ${flags.out}: the three stages' judge, lineage in report.json`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch(failWith('build-relay-judge'));
}
