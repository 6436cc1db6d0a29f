// Final-answer extraction and comparison for math tasks: the "did the team get it right" check.
//
// extractBoxed pulls the last \boxed{...} (or \fbox / \framebox) out of a model's output,
// extractGsm8kAnswer the text after GSM8K's "####"; normalizeAnswer brings an answer to a
// canonical string and answersEqual compares two answers through it. Numbers are compared
// exactly as rationals (BigInt), so "\frac{1}{2}" == "0.5" but "0.333" != "\frac{1}{3}".
//
// Not for: symbolic equivalence ("2\sqrt{2}" vs "\sqrt{8}", reordered polynomials or sets);
// those compare as normalised strings only. That is the usual MATH-style grading, deliberately
// simple so that every judgement is explainable.
//
// Example:
//   answersEqual(extractBoxed('so the total is $\\boxed{1,000}$.') ?? '', '1000')  // true
//   answersEqual('\\$42', '42')                                                    // true
//   answersEqual('-3', '3')                                                        // false

const BOX_COMMANDS = ['\\boxed', '\\fbox', '\\framebox'];

/** A final agent's answer in its text: the last \boxed{}, else "Answer: x" (or "Result: x"); null when neither.
 *  extractFinalAnswer('so Answer: 42') -> '42'. */
export function extractFinalAnswer(text: string): string | null {
  const boxed = extractBoxed(text);
  if (boxed !== null) return boxed;
  const m = /(?:Answer|Result)\s*:\s*\$?(-?[\d.,/]+)/i.exec(text);
  return m ? m[1] : null;
}

/** Content of the last \boxed{...} / \fbox{...} / \framebox{...} in text (nested braces allowed),
 *  or of the form "\boxed 5" (up to the next space or $). null when there is none or it is
 *  unclosed. Example: extractBoxed('\\boxed{\\frac{1}{2}}') === '\\frac{1}{2}'. */
export function extractBoxed(text: string): string | null {
  let start = -1;
  let command = '';
  for (const cmd of BOX_COMMANDS) {
    let from = text.length;
    while (from >= 0) {
      const at = text.lastIndexOf(cmd, from);
      if (at < 0) break;
      const after = text[at + cmd.length];
      // Skip longer command names that merely start with this one (\fboxsep).
      if (after === undefined || !/[a-zA-Z]/.test(after)) {
        if (at > start) {
          start = at;
          command = cmd;
        }
        break;
      }
      from = at - 1;
    }
  }
  if (start < 0) return null;
  let i = start + command.length;
  while (text[i] === ' ') i++;
  if (text[i] !== '{') {
    // "\boxed 5": one bare token.
    const bare = /^[^\s$]+/.exec(text.slice(i));
    return bare ? bare[0] : null;
  }
  let depth = 0;
  for (let j = i; j < text.length; j++) {
    const ch = text[j];
    if (ch === '\\') {
      j++; // skip escaped characters such as \{ and \}
      continue;
    }
    if (ch === '{') depth++;
    else if (ch === '}') {
      depth--;
      if (depth === 0) return text.slice(i + 1, j);
    }
  }
  return null;
}

/** The final answer of a GSM8K solution: the text after the last "####", trimmed, or null.
 *  Example: extractGsm8kAnswer('3 + 4 = 7\n#### 7') === '7'. */
export function extractGsm8kAnswer(text: string): string | null {
  const at = text.lastIndexOf('####');
  if (at < 0) return null;
  const answer = text.slice(at + 4).split('\n')[0].trim();
  return answer === '' ? null : answer;
}

// ---- exact rationals -------------------------------------------------------------------------

interface Rational {
  num: bigint;
  den: bigint; // > 0, gcd(num, den) == 1
}

function gcd(a: bigint, b: bigint): bigint {
  a = a < 0n ? -a : a;
  b = b < 0n ? -b : b;
  while (b !== 0n) [a, b] = [b, a % b];
  return a;
}

function makeRational(num: bigint, den: bigint): Rational | null {
  if (den === 0n) return null;
  if (den < 0n) {
    num = -num;
    den = -den;
  }
  const g = gcd(num, den) || 1n;
  return { num: num / g, den: den / g };
}

/** "-12", "27.0", ".35625", "1e3" is NOT accepted (too ambiguous in prose). */
function parseDecimal(text: string): Rational | null {
  const m = /^([+-]?)(\d*)(?:\.(\d*))?$/.exec(text);
  if (!m || (m[2] === '' && (m[3] ?? '') === '')) return null;
  const digits = (m[2] || '0') + (m[3] ?? '');
  const den = 10n ** BigInt((m[3] ?? '').length);
  const num = BigInt(digits) * (m[1] === '-' ? -1n : 1n);
  return makeRational(num, den);
}

/** A plain number in canonical form: "-12", "27.0", "3/4", "-6/8", "1 4/5" (mixed), after the
 *  LaTeX clean-up below. */
function parseRational(text: string): Rational | null {
  const simple = parseDecimal(text);
  if (simple) return simple;
  const frac = /^([+-]?)(\d+(?:\.\d+)?)\/(\d+(?:\.\d+)?)$/.exec(text);
  if (frac) {
    const a = parseDecimal(frac[2]);
    const b = parseDecimal(frac[3]);
    if (!a || !b || b.num === 0n) return null;
    return makeRational((frac[1] === '-' ? -1n : 1n) * a.num * b.den, a.den * b.num);
  }
  const mixed = /^([+-]?)(\d+)\+(\d+)\/(\d+)$/.exec(text); // produced from "1\frac{4}{5}"
  if (mixed) {
    const whole = BigInt(mixed[2]);
    const num = BigInt(mixed[3]);
    const den = BigInt(mixed[4]);
    if (den === 0n || num >= den) return null;
    return makeRational((mixed[1] === '-' ? -1n : 1n) * (whole * den + num), den);
  }
  return null;
}

function formatRational(r: Rational): string {
  return r.den === 1n ? r.num.toString() : `${r.num}/${r.den}`;
}

// ---- normalisation ---------------------------------------------------------------------------

const UNIT_WORDS = new Set(
  ('dollars dollar cents cent degrees degree units unit inches inch feet foot ft cm mm m km meters meter ' +
    'miles mile mph hours hour minutes minute seconds second days day weeks week years year kg g grams ' +
    'gram pounds pound lbs liters liter ml percent points point people students apples items sq square')
    .split(' '),
);

/** Replace \frac{a}{b}, \frac ab, \frac{a}b with (a)/(b) markers the rest of the pipeline reads. */
function rewriteFractions(s: string): string {
  const arg = String.raw`(\{(?:[^{}]|\{[^{}]*\})*\}|[0-9a-zA-Z])`;
  const re = new RegExp(String.raw`\\frac\s*${arg}\s*${arg}`, 'g');
  let prev = '';
  while (prev !== s) {
    prev = s;
    s = s.replace(re, (_m, a: string, b: string) => {
      const strip = (x: string) => (x.startsWith('{') ? x.slice(1, -1) : x);
      const na = strip(a).trim();
      const nb = strip(b).trim();
      const simple = /^\d+$/.test(na) && /^\d+$/.test(nb);
      // The leading space keeps "1\frac{4}{5}" readable as the mixed number "1 4/5".
      return simple ? ` ${na}/${nb}` : `\\frac{${na}}{${nb}}`;
    });
  }
  return s;
}

/** Canonical string for an answer, used by answersEqual. Plain numbers become exact rationals
 *  ("27.0" -> "27", "0.5" -> "1/2", "1,000" -> "1000"); LaTeX decoration is removed.
 *  Example: normalizeAnswer('\\left( \\frac{3}{2}, -13 \\right)') === '(3/2,-13)'. */
export function normalizeAnswer(answer: string): string {
  let s = answer.trim();
  // Unicode that models emit.
  s = s.replace(/[\u2212\u2013]/g, '-').replace(/\u00b0/g, '^\\circ').replace(/\u00a0/g, ' ');
  // Math delimiters around the whole answer.
  s = s.replace(/^\\\(|\\\)$/g, '').replace(/^\\\[|\\\]$/g, '');
  s = s.replace(/^\$+|\$+$/g, '');
  // A trailing full stop from prose ("42.").
  s = s.replace(/\.\s*$/, '');
  // Matrix row breaks first, so "\\" is not read as the spacing command "\ ".
  s = s.replace(/\\\\/g, ';');
  // Spacing commands and sizing.
  s = s.replace(/\\[!,;:]|\\ |~/g, ' ').replace(/\\(?:left|right|big|Big|bigg|Bigg)(?![a-zA-Z])/g, '');
  s = s.replace(/\\displaystyle/g, '');
  s = s.replace(/\\[dt]frac/g, '\\frac');
  // Degrees, percent, currency.
  s = s.replace(/\^\s*\{?\s*\\circ\s*\}?/g, '').replace(/\\circ/g, '');
  s = s.replace(/\\%|%/g, '').replace(/\\\$|\$/g, '');
  // Text boxes: a trailing \text{unit} after something numeric is a unit; a lone \text{word} is the answer.
  s = s.replace(/\\(?:text|textbf|textrm|mathrm|mbox|operatorname)\s*\{([^{}]*)\}(?:\s*\^\s*\{?[23]\}?)?/g, (m, inner: string, offset: number) =>
    offset > 0 && /[0-9}]\s*$/.test(s.slice(0, offset)) ? ' ' : inner,
  );
  // Trailing unit words after a number ("42 apples", "864 inches^2", "15 cm^2").
  s = s.replace(/^(.*?[\d}])\s+([a-zA-Z]+(?:\s+[a-zA-Z]+)?)\s*(?:\^\s*\{?[23]\}?)?\s*$/, (m, num: string, words: string) =>
    words.split(/\s+/).every((w) => UNIT_WORDS.has(w.toLowerCase())) ? num : m,
  );
  // "x = 5", "y = 2x + 3": drop a single-letter left-hand side.
  s = s.replace(/^\s*[a-zA-Z]\s*=(?!=)\s*/, '');
  s = s.replace(/\\sqrt\s*([0-9a-zA-Z])/g, '\\sqrt{$1}');
  s = rewriteFractions(s);
  // Mixed numbers: "1 4/5", "137 1/2" (from "1\frac{4}{5}").
  s = s.replace(/^\s*([+-]?\d+)\s+(\d+\/\d+)\s*$/, '$1+$2');
  s = s.replace(/\s+/g, '');
  // Thousands separators: "1,000", "-58,500.5".
  if (/^[+-]?\d{1,3}(,\d{3})+(\.\d+)?$/.test(s)) s = s.replace(/,/g, '');
  // Multiple-choice letters: "(C)" -> "C".
  s = s.replace(/^\(([A-E])\)$/, '$1');
  const number = parseRational(s);
  if (number) return formatRational(number);
  // Tuples and lists: normalise each top-level element ("(0.5, 3)" == "\left(\frac12,3\right)").
  const parts = splitTopLevel(s);
  if (parts.length > 1) {
    return parts.map((p) => {
      const r = parseRational(p);
      return r ? formatRational(r) : p;
    }).join(',');
  }
  // Pure words compare case-insensitively ("Navin" == "navin").
  if (/^[a-zA-Z]+$/.test(s)) return s.toLowerCase();
  return s;
}

/** Split "(a,b,c)" or "a,b" on commas outside any brackets, keeping the outer brackets on the
 *  first and last pieces so "(1,2)" and "[1,2]" stay different. */
function splitTopLevel(s: string): string[] {
  const open = s[0];
  const close = s[s.length - 1];
  const wrapped = /[([{]/.test(open) && /[)\]}]/.test(close);
  const body = wrapped ? s.slice(1, -1) : s;
  const parts: string[] = [];
  let depth = 0;
  let current = '';
  for (const ch of body) {
    if ('([{'.includes(ch)) depth++;
    if (')]}'.includes(ch)) depth--;
    if (ch === ',' && depth === 0) {
      parts.push(current);
      current = '';
    } else current += ch;
    if (depth < 0) return [s];
  }
  parts.push(current);
  if (parts.length === 1) return [s];
  if (wrapped) {
    parts[0] = open + parts[0];
    parts[parts.length - 1] += close;
    return parts.map((p, i) => {
      const inner = i === 0 ? p.slice(1) : i === parts.length - 1 ? p.slice(0, -1) : p;
      const r = parseRational(inner);
      const value = r ? formatRational(r) : inner;
      return i === 0 ? open + value : i === parts.length - 1 ? value + close : value;
    });
  }
  return parts;
}

/** True when two answers are the same after normalizeAnswer (numbers compared exactly).
 *  answersEqual('\\frac{1}{2}', '0.5') === true; answersEqual('-3', '3') === false. */
export function answersEqual(a: string | number | null | undefined, b: string | number | null | undefined): boolean {
  if (a === null || a === undefined || b === null || b === undefined) return false;
  const na = normalizeAnswer(String(a));
  const nb = normalizeAnswer(String(b));
  return na !== '' && na === nb;
}
