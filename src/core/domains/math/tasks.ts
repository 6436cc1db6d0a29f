// Generated arithmetic word problems for the MAPPA math chain (Solver -> Executor -> Verifier).
//
// Each problem is a chain of 1-4 integer operations (+ - * /, division always exact) told as a
// short story: a running total (shopping, a bus route, sharing sweets, a bakery) or a chain of
// relations (ages, prices, road lengths). The answer is the final integer. solutionSteps()
// gives every intermediate result so a rule-based coach can check a Solver's steps.
//
// Levels (steps, largest number anywhere in the problem or its solution, operations):
//   1: 1 step,  <= 20,   + -          3: 3 steps, <= 100,  + - * /      5: 4 steps, <= 1000, + - * /
//   2: 2 steps, <= 50,   + - *        4: 4 steps, <= 200,  + - * /
// Multipliers are 2..9, divisors 2..12, added/subtracted amounts at least 2, and every value in
// the chain stays >= 2, so the size of the numbers, not the tables, grows with the level.
//
// Held-out set: mathHeldOut() is a fixed list of 200 problems (40 per level) built from a reserved
// seed. generateMathTasks() never returns a problem whose arithmetic (start number and every
// operation with its operand) equals a held-out one, in any wording: candidates are rejected
// against the held-out signatures, so the guarantee is structural, not a matter of luck.
//
// Not for: real benchmark data (see dataset.ts) or answer checking (see answers.ts).
//
// Example:
//   const [task] = generateMathTasks({ seed: 1, count: 1, level: 2 });
//   task.problem   // "Sofia has $41. She spends $37 on lunch. She earns $24 walking dogs.
//                  //  How many dollars does Sofia have now?"
//   task.answer    // "28"
//   solutionSteps(task).map((s) => s.expression)   // ["41 - 37 = 4", "4 + 24 = 28"]

import { Rng, type Seed } from '../../stats/rng.ts';

export type MathOp = '+' | '-' | '*' | '/';

/** One operation of the chain: value_{i+1} = value_i op operand. */
export interface MathChainStep {
  op: MathOp;
  operand: number;
}

export interface MathTask {
  kind: 'math';
  id: string;
  problem: string;
  /** The final integer, as a string ("42"). */
  answer: string;
  /** steps: operations in the chain; maxNumber: largest number in the problem or its solution. */
  difficulty: { steps: number; maxNumber: number };
  level: number;
  source: 'generated' | 'generated-heldout';
  /** The arithmetic behind the story; solutionSteps() reads it. */
  chain: { start: number; steps: MathChainStep[] };
}

export interface SolutionStep {
  index: number; // 1-based
  op: MathOp;
  left: number;
  right: number;
  result: number;
  expression: string; // "12 - 5 = 7"
}

export interface LevelSpec {
  steps: number;
  maxNumber: number;
  ops: readonly MathOp[];
}

export const MATH_LEVELS: Readonly<Record<number, LevelSpec>> = {
  1: { steps: 1, maxNumber: 20, ops: ['+', '-'] },
  2: { steps: 2, maxNumber: 50, ops: ['+', '-', '*'] },
  3: { steps: 3, maxNumber: 100, ops: ['+', '-', '*', '/'] },
  4: { steps: 4, maxNumber: 200, ops: ['+', '-', '*', '/'] },
  5: { steps: 4, maxNumber: 1000, ops: ['+', '-', '*', '/'] },
};

const MAX_MULTIPLIER = 9;
const MAX_DIVISOR = 12;
const HELD_OUT_PER_LEVEL = 40;
const HELD_OUT_SEED = 'mappa-math-heldout-v1';

// ---- arithmetic chains -----------------------------------------------------------------------

function applyOp(value: number, step: MathChainStep): number {
  switch (step.op) {
    case '+': return value + step.operand;
    case '-': return value - step.operand;
    case '*': return value * step.operand;
    case '/': return value / step.operand;
  }
}

/** An operand for op at the current value that keeps every value in [2, max], or null.
 *  Values never drop to 1 or 0 (trivial chains), and operands are at least 2 (no "1 muffins"). */
function chooseOperand(rng: Rng, op: MathOp, value: number, max: number): number | null {
  if (op === '+') return value <= max - 2 ? rng.int(2, max - value) : null;
  if (op === '-') return value >= 4 ? rng.int(2, value - 2) : null;
  if (op === '*') {
    const hi = Math.min(MAX_MULTIPLIER, Math.floor(max / value));
    return hi >= 2 ? rng.int(2, hi) : null;
  }
  const divisors: number[] = [];
  for (let d = 2; d <= Math.min(MAX_DIVISOR, value / 2); d++) if (value % d === 0) divisors.push(d);
  return divisors.length ? rng.pick(divisors) : null;
}

function randomChain(rng: Rng, spec: LevelSpec): MathTask['chain'] {
  for (;;) {
    const start = rng.int(2, spec.maxNumber);
    const steps: MathChainStep[] = [];
    let value = start;
    while (steps.length < spec.steps) {
      // Try the operations in random order, the previous one last, so chains mix operations.
      const previous = steps[steps.length - 1];
      const ops = rng.shuffle([...spec.ops]).sort((a, b) => Number(a === previous?.op) - Number(b === previous?.op));
      let chosen: MathChainStep | null = null;
      for (const op of ops) {
        const operand = chooseOperand(rng, op, value, spec.maxNumber);
        if (operand !== null && !(previous && undoes(previous, { op, operand }))) {
          chosen = { op, operand };
          break;
        }
      }
      if (!chosen) break; // dead end (e.g. value 1 with only '-' left): draw a new start
      steps.push(chosen);
      value = applyOp(value, chosen);
    }
    if (steps.length === spec.steps) return { start, steps };
  }
}

/** True when b cancels a (x / 3 then * 3, x + 5 then - 5). */
function undoes(a: MathChainStep, b: MathChainStep): boolean {
  const inverse: Record<MathOp, MathOp> = { '+': '-', '-': '+', '*': '/', '/': '*' };
  return inverse[a.op] === b.op && a.operand === b.operand;
}

/** Arithmetic identity of a problem, independent of its wording: "12|-5|*3". */
export function chainSignature(chain: MathTask['chain']): string {
  return [chain.start, ...chain.steps.map((s) => `${s.op}${s.operand}`)].join('|');
}

/** Every intermediate result: one entry per operation, in order. */
export function solutionSteps(task: Pick<MathTask, 'chain'>): SolutionStep[] {
  const out: SolutionStep[] = [];
  let value = task.chain.start;
  task.chain.steps.forEach((step, i) => {
    const result = applyOp(value, step);
    out.push({ index: i + 1, op: step.op, left: value, right: step.operand, result, expression: `${value} ${step.op} ${step.operand} = ${result}` });
    value = result;
  });
  return out;
}

// ---- stories ---------------------------------------------------------------------------------

interface Person {
  name: string;
  subj: string; // she / he
  obj: string; // her / him
  pos: string; // her / his
}

const PEOPLE: Person[] = [
  ...['Maya', 'Aisha', 'Lena', 'Sofia', 'Priya', 'Chloe', 'Hana', 'Zoe', 'Ines', 'Grace'].map((name) => ({ name, subj: 'she', obj: 'her', pos: 'her' })),
  ...['Omar', 'Lucas', 'Kenji', 'Tom', 'Diego', 'Ravi', 'Noah', 'Felix', 'Sam', 'Jonas'].map((name) => ({ name, subj: 'he', obj: 'him', pos: 'his' })),
];

const ORDINALS = ['first', 'second', 'third', 'fourth', 'fifth'];
const PARTS: Record<number, string> = {
  2: 'half', 3: 'one third', 4: 'one quarter', 5: 'one fifth', 6: 'one sixth', 7: 'one seventh',
  8: 'one eighth', 9: 'one ninth', 10: 'one tenth', 11: 'one eleventh', 12: 'one twelfth',
};

const cap = (s: string) => s[0].toUpperCase() + s.slice(1);

/** A story renders the intro sentence, one sentence per step, and the question. */
interface Story {
  intro(start: number): string;
  step(step: MathChainStep, index: number): string;
  question(): string;
}

interface Theme {
  name: string;
  /** Largest number this story stays believable with. */
  maxNumber: number;
  make(rng: Rng, steps: number): Story;
}

const THEMES: Theme[] = [
  {
    name: 'shopping',
    maxNumber: Infinity,
    make(rng) {
      const p = rng.pick(PEOPLE);
      return {
        intro: (a) => rng.pick([`${p.name} has $${a}.`, `${p.name} starts the day with $${a} in ${p.pos} wallet.`]),
        step: ({ op, operand: b }) => {
          if (op === '+') return `${cap(p.subj)} earns $${b} ${rng.pick(['walking dogs', 'washing cars', 'selling lemonade', 'helping a neighbour'])}.`;
          if (op === '-') return `${cap(p.subj)} spends $${b} on ${rng.pick(['a book', 'lunch', 'a scarf', 'a board game', 'bus tickets'])}.`;
          if (op === '*') return `${cap(p.subj)} sells some old toys and afterwards has ${b} times as much money as before.`;
          return `${cap(p.subj)} splits all of ${p.pos} money equally into ${b} envelopes and keeps just one envelope.`;
        },
        question: () => `How many dollars does ${p.name} have now?`,
      };
    },
  },
  {
    name: 'bus',
    maxNumber: Infinity,
    make(rng) {
      const vehicle = rng.pick(['bus', 'train', 'ferry']);
      return {
        intro: (a) => `A ${vehicle} leaves the depot with ${a} passengers on board.`,
        step: ({ op, operand: b }, i) => {
          const at = `At the ${ORDINALS[i]} stop`;
          const people = b === 1 ? '1 person gets' : `${b} people get`;
          if (op === '+') return `${at}, ${people} on.`;
          if (op === '-') return `${at}, ${people} off.`;
          if (op === '*') return `${at}, a festival crowd boards and the number of passengers becomes ${b} times what it was.`;
          return `${at}, the passengers form ${b} equal groups and every group but one gets off.`;
        },
        question: () => `How many passengers are on the ${vehicle} after the last stop?`,
      };
    },
  },
  {
    name: 'sharing',
    maxNumber: Infinity,
    make(rng) {
      const [p, friend] = rng.shuffle([...PEOPLE]);
      const sweet = rng.pick(['marbles', 'stickers', 'sweets', 'cards', 'shells']);
      return {
        intro: (a) => `${p.name} has ${a} ${sweet}.`,
        step: ({ op, operand: b }) => {
          if (op === '+') return `${cap(p.subj)} gets ${b} more ${sweet} from ${friend.name}.`;
          if (op === '-') return `${cap(p.subj)} gives ${b} ${sweet} to ${friend.name}.`;
          if (op === '*') return `${cap(p.subj)} buys more until ${p.subj} has ${b} times as many ${sweet} as before.`;
          return `${cap(p.subj)} shares all ${p.pos} ${sweet} equally among ${b} children, ${p.obj}self included, and keeps ${p.pos} share.`;
        },
        question: () => `How many ${sweet} does ${p.name} have at the end?`,
      };
    },
  },
  {
    name: 'bakery',
    maxNumber: Infinity,
    make(rng) {
      const good = rng.pick(['loaves', 'muffins', 'bagels', 'croissants']);
      return {
        intro: (a) => `A bakery has ${a} ${good} on its shelves in the morning.`,
        step: ({ op, operand: b }) => {
          if (op === '+') return `The bakers take ${b} more ${good} out of the oven.`;
          if (op === '-') return `Customers buy ${b} ${good}.`;
          if (op === '*') return `For a street party the bakers keep baking until there are ${b} times as many ${good} as before.`;
          return `All the ${good} are packed equally into ${b} boxes, and only one box stays in the shop.`;
        },
        question: () => `How many ${good} are in the shop at the end?`,
      };
    },
  },
  {
    name: 'ages',
    maxNumber: 100,
    make(rng, steps) {
      const people = rng.shuffle([...PEOPLE]).slice(0, steps + 1).map((p) => p.name);
      return {
        intro: (a) => `${people[0]} is ${a} years old.`,
        step: ({ op, operand: b }, i) => {
          const [older, younger] = [people[i + 1], people[i]];
          if (op === '+') return `${older} is ${b} years older than ${younger}.`;
          if (op === '-') return `${older} is ${b} years younger than ${younger}.`;
          if (op === '*') return `${older} is ${b} times as old as ${younger}.`;
          return `${older}'s age is ${PARTS[b]} of ${younger}'s age.`;
        },
        question: () => `How old is ${people[steps]}?`,
      };
    },
  },
  {
    name: 'prices',
    maxNumber: Infinity,
    make(rng, steps) {
      const items = rng.shuffle(['pencil case', 'notebook', 'ruler', 'backpack', 'lamp', 'calculator', 'poster', 'mug']).slice(0, steps + 1);
      return {
        intro: (a) => `At a shop, a ${items[0]} costs ${a} dollars.`,
        step: ({ op, operand: b }, i) => {
          const [item, prev] = [items[i + 1], items[i]];
          if (op === '+') return `A ${item} costs ${b} dollars more than the ${prev}.`;
          if (op === '-') return `A ${item} costs ${b} dollars less than the ${prev}.`;
          if (op === '*') return `A ${item} costs ${b} times as much as the ${prev}.`;
          return `A ${item} costs ${PARTS[b]} of the price of the ${prev}.`;
        },
        question: () => `How many dollars does the ${items[steps]} cost?`,
      };
    },
  },
  {
    name: 'roads',
    maxNumber: Infinity,
    make(rng, steps) {
      const towns = rng.shuffle(['Ashford', 'Brookvale', 'Cedarton', 'Dunmore', 'Elmwood', 'Fairhaven', 'Glenrock']).slice(0, steps + 2);
      const leg = (i: number) => `the road from ${towns[i]} to ${towns[i + 1]}`;
      return {
        intro: (a) => `${cap(leg(0))} is ${a} km long.`,
        step: ({ op, operand: b }, i) => {
          if (op === '+') return `${cap(leg(i + 1))} is ${b} km longer than ${leg(i)}.`;
          if (op === '-') return `${cap(leg(i + 1))} is ${b} km shorter than ${leg(i)}.`;
          if (op === '*') return `${cap(leg(i + 1))} is ${b} times as long as ${leg(i)}.`;
          return `${cap(leg(i + 1))} is ${PARTS[b]} as long as ${leg(i)}.`;
        },
        question: () => `How many km long is ${leg(steps)}?`,
      };
    },
  },
];

function buildTask(rng: Rng, level: number, id: string, source: MathTask['source'], chain: MathTask['chain']): MathTask {
  const spec = MATH_LEVELS[level];
  const themes = THEMES.filter((t) => t.maxNumber >= spec.maxNumber);
  const story = rng.pick(themes).make(rng, spec.steps);
  const sentences = [story.intro(chain.start), ...chain.steps.map((s, i) => story.step(s, i)), story.question()];
  const results = solutionSteps({ chain });
  const numbers = [chain.start, ...chain.steps.map((s) => s.operand), ...results.map((r) => r.result)];
  return {
    kind: 'math',
    id,
    problem: sentences.join(' '),
    answer: String(results[results.length - 1].result),
    difficulty: { steps: chain.steps.length, maxNumber: Math.max(...numbers) },
    level,
    source,
    chain,
  };
}

function checkLevel(level: number): void {
  if (!MATH_LEVELS[level]) throw new Error(`math tasks: level must be one of 1..5, got ${level}`);
}

// ---- held-out set and training generator -----------------------------------------------------

let heldOutCache: MathTask[] | null = null;
let heldOutKeys: { signatures: Set<string>; problems: Set<string> } | null = null;

function heldOutAll(): MathTask[] {
  if (heldOutCache) return heldOutCache;
  const tasks: MathTask[] = [];
  for (const level of Object.keys(MATH_LEVELS).map(Number)) {
    const rng = new Rng(`${HELD_OUT_SEED}/level-${level}`);
    const seen = new Set<string>();
    while (seen.size < HELD_OUT_PER_LEVEL) {
      const chain = randomChain(rng, MATH_LEVELS[level]);
      const signature = chainSignature(chain);
      if (seen.has(signature)) continue;
      seen.add(signature);
      tasks.push(buildTask(rng, level, `math-heldout-L${level}-${seen.size - 1}`, 'generated-heldout', chain));
    }
  }
  heldOutCache = tasks;
  heldOutKeys = { signatures: new Set(tasks.map((t) => chainSignature(t.chain))), problems: new Set(tasks.map((t) => t.problem)) };
  return tasks;
}

/** The fixed held-out set: 200 problems, 40 per level, or the 40 of one level. Same on every
 *  machine and every run; deep copies, so callers may mutate them. */
export function mathHeldOut(level?: number): MathTask[] {
  if (level !== undefined) checkLevel(level);
  const all = heldOutAll().filter((t) => level === undefined || t.level === level);
  return structuredClone(all);
}

/** True when a problem's arithmetic or text belongs to the held-out set. */
export function isMathHeldOut(task: Pick<MathTask, 'chain' | 'problem'>): boolean {
  heldOutAll();
  return heldOutKeys!.signatures.has(chainSignature(task.chain)) || heldOutKeys!.problems.has(task.problem);
}

export interface GenerateMathOptions {
  seed: Seed;
  count: number;
  /** 1..5; omitted: each task draws its level uniformly. */
  level?: number;
}

/** Training problems, deterministic per (seed, level); a longer count extends a shorter one
 *  (the first 10 of count 20 equal count 10). Never returns a held-out problem. */
export function generateMathTasks({ seed, count, level }: GenerateMathOptions): MathTask[] {
  if (level !== undefined) checkLevel(level);
  if (!Number.isInteger(count) || count < 0) throw new Error(`generateMathTasks: count must be a non-negative integer, got ${count}`);
  heldOutAll();
  const rng = new Rng(`mappa-math-train/${String(seed)}/${level ?? 'mixed'}`);
  const tasks: MathTask[] = [];
  while (tasks.length < count) {
    const taskLevel = level ?? rng.int(1, 5);
    const chain = randomChain(rng, MATH_LEVELS[taskLevel]);
    if (heldOutKeys!.signatures.has(chainSignature(chain))) continue;
    const task = buildTask(rng, taskLevel, `math-L${taskLevel}-s${String(seed)}-${tasks.length}`, 'generated', chain);
    if (heldOutKeys!.problems.has(task.problem)) continue;
    tasks.push(task);
  }
  return tasks;
}
