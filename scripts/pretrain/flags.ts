/**
 * The build scripts' flags: `--name value` or `--name=value` for every key of a defaults object, typed by
 * the default (a number default takes a number). Unknown flags and non-numbers throw, naming the script
 * and listing the flags; `bare` names flags that may stand alone, meaning 1 (e.g. --skip-eval).
 *
 * For: scripts/pretrain.ts (pretrain/run.ts), pretrain-relay.ts, pretrain-relay-judge.ts, pretrain-team-judge.ts.
 * Example: parseScriptFlags('pretrain-relay', {seed: 0, out: 'models/relay'}, ['--seed', '3']) -> {seed: 3, out: 'models/relay'}
 *          parseScriptFlags('x', {lr: 1e-3}, ['--lr=abc'])  throws 'x: --lr needs a number, got "abc"'
 */
export function parseScriptFlags<T extends Record<string, number | string>>(script: string, defaults: T, argv: string[], bare: readonly string[] = []): T {
  const flags: Record<string, number | string> = { ...defaults };
  for (let i = 0; i < argv.length; i++) {
    const m = /^--([\w-]+)(?:=(.*))?$/.exec(argv[i]);
    if (!m || !(m[1] in defaults)) throw new Error(`${script}: unknown argument "${argv[i]}" (flags: ${Object.keys(defaults).map((k) => '--' + k).join(' ')})`);
    const raw = m[2] ?? (bare.includes(m[1]) ? '1' : argv[++i]);
    if (raw === undefined) throw new Error(`${script}: --${m[1]} needs a value`);
    flags[m[1]] = typeof defaults[m[1]] === 'number' ? Number(raw) : raw;
    if (typeof flags[m[1]] === 'number' && !Number.isFinite(flags[m[1]])) throw new Error(`${script}: --${m[1]} needs a number, got "${raw}"`);
  }
  return flags as T;
}

/**
 * How a build script ends on an error: one line on stderr, "<script>: <what went wrong>", and exit 1
 * (the message is not prefixed twice when it already names the script).
 * Example: main().catch(failWith('pretrain-relay'))
 */
export function failWith(script: string): (e: unknown) => never {
  return (e) => {
    const message = e instanceof Error ? e.message : String(e);
    console.error(message.startsWith(`${script}:`) ? message : `${script}: ${message}`);
    process.exit(1);
  };
}

/** Checkpoint steps from a list of steps and ranges: "50,150" -> [50, 150]; "3000-3400:200" -> [3000, 3200, 3400]. */
export function checkpointList(spec: string): number[] {
  return spec.split(',').filter(Boolean).flatMap((part) => {
    const m = /^(\d+)-(\d+):(\d+)$/.exec(part.trim());
    if (!m) {
      const n = Number(part);
      if (!Number.isInteger(n) || n < 1) throw new Error(`--checkpoints: steps like 50,150 or ranges like 3000-4000:100, got "${part}"`);
      return [n];
    }
    const [a, b, by] = [Number(m[1]), Number(m[2]), Number(m[3])];
    if (by < 1 || b < a) throw new Error(`--checkpoints: a range runs FROM-TO:BY with TO >= FROM and BY >= 1, got "${part}"`);
    return Array.from({ length: Math.floor((b - a) / by) + 1 }, (_, i) => a + i * by);
  });
}
