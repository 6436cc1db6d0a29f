/**
 * The `mappa` command line: one file per subcommand, all thin shells over src/core.
 *
 *   mappa forward  --model DIR --ids 1,2,3 [--adapter DIR] [--backend cpu|wasm|webgpu]
 *   mappa generate --model DIR --prompt TEXT [--chat] [--max-tokens N] [--temperature T] ...
 *   mappa train [--config FILE] [--reward process|outcome|mixed|counterfactual|groups] [--seed S] [--out DIR] [--resume]
 *   mappa eval [--config FILE] [--adapters DIR]
 *   mappa compare DIR DIR... [--target X] [--svg FILE]
 *   mappa export --target marti [DIR] [--config FILE] [--out DIR]
 *   mappa bench [--backend NAME] [--shapes smollm2-135m,qwen2.5-0.5b] [--quick]
 *   mappa judge teach|ask|rank --judge DIR ...   (a person corrects a judge: src/cli/judge.ts)
 *   mappa plan --model DIR [--rows N --prompt-tokens N --action-tokens N --rank R ...]
 *
 * Results go to stdout; progress, notices and errors to stderr; errors exit non-zero.
 */
import { forwardCommand } from './forward.ts';
import { generateCommand } from './generate.ts';
import { trainCommand } from './train.ts';
import { evalCommand } from './eval.ts';
import { mergeCommand } from './merge.ts';
import { compareCommand } from './compare.ts';
import { exportCommand } from './export.ts';
import { planCommand } from './plan.ts';
import { benchCommand } from './bench.ts';
import { judgeCommand } from './judge.ts';
import { CliError } from './common.ts';

const COMMANDS: Record<string, { run: (argv: string[]) => Promise<void>; help: string }> = {
  forward: { run: forwardCommand, help: 'print the logits of every position as JSON' },
  generate: { run: generateCommand, help: 'stream a completion of a prompt' },
  merge: { run: mergeCommand, help: 'fold a PEFT adapter into the base weights and write a full model folder' },
  train: { run: trainCommand, help: 'train a team with MAPPA (default: the embedded tiny math team)' },
  eval: { run: evalCommand, help: 'held-out accuracy of a team, with or without trained adapters' },
  compare: { run: compareCommand, help: 'runs side by side: table of accuracies and rollouts to a target, SVG of the curves' },
  export: { run: exportCommand, help: 'write a run as a config for the reference trainer (--target marti)' },
  bench: { run: benchCommand, help: 'measure this machine: decode and update tokens/s at a real shape vs the backend\'s own rates' },
  judge: { run: judgeCommand, help: 'a person corrects a judge: ask (what to rate), teach (a new version), rank (on held-out ratings)' },
  plan: { run: planCommand, help: 'memory plan of a run from config.json: weights, KV cache, activations, logits; fits the limits?' },
};

function usage(): string {
  const lines = Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(10)} ${c.help}`);
  return `usage: mappa <command> [options]\n\ncommands:\n${lines.join('\n')}\n\nRun "mappa <command> --help" for a command's options.\n`;
}

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(usage());
    return name ? 0 : 2;
  }
  const command = COMMANDS[name];
  if (!command) {
    process.stderr.write(`mappa: unknown command "${name}"\n\n${usage()}`);
    return 2;
  }
  try {
    await command.run(rest);
    return 0;
  } catch (err) {
    const e = err as Error;
    const detail = err instanceof CliError || process.env.MAPPA_DEBUG !== '1' ? e.message : (e.stack ?? e.message);
    process.stderr.write(`mappa ${name}: ${detail}\n`);
    return err instanceof CliError ? err.exitCode : 1;
  }
}
