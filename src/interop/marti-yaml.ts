/**
 * YAML text for the MARTI export, written by the `yaml` library (npm, YAML 1.2 core schema), with
 * what a Hydra config read by PyYAML (YAML 1.1) and OmegaConf needs on top:
 * - strings PyYAML would read as booleans or numbers (yes, on, 1_000, 12:30) quoted (`compat`);
 * - floats that stay floats: `yfloat(1)` is written "1.0" and `yfloat(1e-7)` "1.0e-7" (PyYAML reads
 *   "1e-7", without a dot, as a string);
 * - "${" in strings written as "\${", so that OmegaConf keeps it literal instead of interpolating;
 * - comments attached by key path: a trailing one after a value, or lines before a key.
 *
 * For: src/interop/marti.ts. Not for: reading YAML (tests use `yaml`'s parse directly).
 *
 * Example: martiYaml({ a: yfloat(1), b: 'x' }, [{ path: ['a'], after: 'one' }], ['head'])
 *          -> '# head\n\na: 1.0 # one\nb: x\n'
 */
import { Document, isMap, isScalar, type Pair, type Scalar, type ScalarTag } from 'yaml';

/** A number always written as a float ("1.0", not "1"), as the reference configs write weights. */
export class YamlFloat {
  constructor(readonly value: number) {}
}
export const yfloat = (value: number): YamlFloat => new YamlFloat(value);

/** A comment by key path: `after` on the value's line, `before` as lines above the key. */
export interface YamlNote {
  path: (string | number)[];
  after?: string;
  before?: string;
}

/**
 * The float text PyYAML and every YAML 1.2 reader take as a float.
 * Example: floatText(1) -> '1.0'; floatText(1e-6) -> '1.0e-6'; floatText(0.25) -> '0.25'.
 */
export function floatText(v: number): string {
  if (!Number.isFinite(v)) throw new Error(`YAML: cannot write the float ${v}`);
  const s = v !== 0 && Math.abs(v) < 1e-4 ? v.toExponential() : String(v);
  if (!/[.e]/.test(s)) return `${s}.0`;
  const [mantissa, exponent] = s.split('e');
  return exponent === undefined || mantissa.includes('.') ? s : `${mantissa}.0e${exponent}`;
}

const floatTag: ScalarTag = {
  tag: 'tag:yaml.org,2002:float',
  default: true,
  identify: (v) => v instanceof YamlFloat,
  resolve: (s) => parseFloat(s),
  stringify: (item) => floatText((item as Scalar).value instanceof YamlFloat ? ((item as Scalar).value as YamlFloat).value : Number((item as Scalar).value)),
};

/** Every string with "${" made literal for OmegaConf; YamlFloat kept for the float tag. */
function escapeInterpolation(v: unknown): unknown {
  if (typeof v === 'string') return v.replace(/\$\{/g, '\\${');
  if (Array.isArray(v)) return v.map(escapeInterpolation);
  if (v && typeof v === 'object' && !(v instanceof YamlFloat)) {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, escapeInterpolation(x)]));
  }
  return v;
}

/** The key of `path`'s last step and whether it is its map's first (undefined for a list item). */
function keyAt(doc: Document, path: (string | number)[]): { key: Scalar; first: boolean } | undefined {
  const parent = path.length > 1 ? doc.getIn(path.slice(0, -1), true) : doc.contents;
  if (!isMap(parent)) return undefined;
  const i = parent.items.findIndex((p: Pair) => isScalar(p.key) && p.key.value === path[path.length - 1]);
  return i < 0 ? undefined : { key: parent.items[i].key as Scalar, first: i === 0 };
}

/** Comment lines as the library wants them (a space after each "#"). */
const commentText = (s: string) => s.split('\n').map((l) => (l ? ` ${l}` : '')).join('\n');

function attach(doc: Document, note: YamlNote): void {
  const node = doc.getIn(note.path, true) as Scalar | undefined;
  if (!node) throw new Error(`YAML: no value at ${note.path.join('.')} to comment on`);
  const at = keyAt(doc, note.path);
  // A map's or list's comment goes on its key's line ("key: # comment"), a scalar's after the value.
  if (note.after) (isScalar(node) || !at ? node : at.key).comment = commentText(note.after);
  if (note.before) {
    const target = at?.key ?? node;
    target.commentBefore = commentText(note.before);
    target.spaceBefore = !at?.first; // no blank line right under the parent's key
  }
}

/** The YAML text of `value` (plain objects keep their key order), with comments and a header. */
export function martiYaml(value: Record<string, unknown>, notes: YamlNote[], header: string[]): string {
  const doc = new Document(escapeInterpolation(value), {
    customTags: (tags) => [floatTag, ...tags],
    compat: 'yaml-1.1', // quote what PyYAML would read as something else: yes, on, 1_000, 12:30
  });
  doc.commentBefore = commentText(header.join('\n'));
  for (const note of notes) attach(doc, note);
  return doc.toString({ lineWidth: 0, indentSeq: true });
}
