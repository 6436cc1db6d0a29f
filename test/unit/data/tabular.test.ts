import { describe, expect, it } from 'vitest';
import {
  aggregate,
  checkTableAnswer,
  generateTabularTasks,
  isTabularHeldOut,
  tabularHeldOut,
  type TableQuestionTask,
  type TabularTask,
} from '../../../src/core/domains/data/tabular.ts';
import { parseCsv, parseCsvRecords, toCsv } from '../../../src/core/tools/csv.ts';

describe('CSV helpers', () => {
  it('parses quoted fields, doubled quotes, embedded line breaks and CRLF (hand-made)', () => {
    const text = 'name,note,n\r\n"Smith, J","said ""hi""",3\r\nplain,"two\nlines",\r\n';
    expect(parseCsv(text)).toEqual([
      ['name', 'note', 'n'],
      ['Smith, J', 'said "hi"', '3'],
      ['plain', 'two\nlines', ''],
    ]);
    expect(parseCsv('a,b')).toEqual([['a', 'b']]);
    expect(parseCsv('')).toEqual([]);
    expect(() => parseCsv('a,"b\n')).toThrow(/unclosed/);
  });

  it('writes what it reads back (round trip) and quotes only when needed', () => {
    const rows = [['id', 'text', 'value'], ['1', 'a,b', '2.5'], ['2', 'quote " here', ''], ['3', ' padded ', 'x\ny']];
    const csv = toCsv(rows);
    expect(csv).toBe('id,text,value\n1,"a,b",2.5\n2,"quote "" here",\n3," padded ","x\ny"\n');
    expect(parseCsv(csv)).toEqual(rows);
    expect(toCsv([[1, null, undefined, 'z']])).toBe('1,,,z\n');
    expect(parseCsvRecords('a,b\n1,2\n3\n').records).toEqual([{ a: '1', b: '2' }, { a: '3', b: '' }]);
  });
});

describe('aggregate and checkTableAnswer', () => {
  it('computes hand-worked aggregates', () => {
    const xs = [4, 1, 3, 2];
    expect(aggregate('sum', xs)).toBe(10);
    expect(aggregate('mean', xs)).toBe(2.5);
    expect(aggregate('median', xs)).toBe(2.5);
    expect(aggregate('median', [5, 1, 3])).toBe(3);
    expect(aggregate('min', xs)).toBe(1);
    expect(aggregate('max', xs)).toBe(4);
    expect(aggregate('count', xs)).toBe(4);
    expect(aggregate('mean', [])).toBeNaN();
  });
});

const isModel = (t: { kind: string }): t is TabularTask => t.kind === 'classification' || t.kind === 'regression';
const isQuestion = (t: { kind: string }): t is TableQuestionTask => t.kind === 'table-question';

describe('generateTabularTasks', () => {
  const tasks = generateTabularTasks({ seed: 1, count: 12 });

  it('is deterministic per seed', () => {
    expect(generateTabularTasks({ seed: 1, count: 12 })).toEqual(tasks);
    expect(generateTabularTasks({ seed: 2, count: 12 }).map((t) => t.csv)).not.toEqual(tasks.map((t) => t.csv));
    expect(new Set(tasks.map((t) => t.kind))).toEqual(new Set(['classification', 'regression', 'table-question']));
  });

  it('builds train/test splits with matching columns, ids and targets', () => {
    for (const task of tasks.filter(isModel)) {
      const train = parseCsv(task.csv);
      const test = parseCsv(task.testCsv);
      const g = task.generator;
      expect(train[0][0]).toBe('id');
      expect(train[0][train[0].length - 1]).toBe(task.target);
      expect(test[0]).toEqual(train[0].slice(0, -1));
      expect(train).toHaveLength(g.nTrain + 1);
      expect(test).toHaveLength(g.nTest + 1);
      expect(task.testTargets).toHaveLength(g.nTest);
      expect(test.slice(1).map((r) => r[0])).toEqual(Array.from({ length: g.nTest }, (_, i) => String(g.nTrain + 1 + i)));
      expect(task.description).toContain(task.target);
      // Some values are missing, the target never is.
      const blanks = train.slice(1).flat().filter((c) => c === '').length;
      expect(blanks).toBeGreaterThan(0);
      expect(train.slice(1).every((r) => r[r.length - 1] !== '')).toBe(true);
      if (task.kind === 'classification') expect(new Set(task.testTargets)).toEqual(new Set([0, 1]));
    }
  });

  it('follows its documented generator: regression residuals have sd ~ noiseSd', () => {
    for (const task of tasks.filter((t): t is TabularTask => t.kind === 'regression')) {
      const { header, records } = parseCsvRecords(task.csv);
      const g = task.generator;
      const residuals: number[] = [];
      for (const r of records) {
        if (header.some((h) => r[h] === '')) continue; // a masked value hides part of the signal
        let pred = g.intercept + g.categorical.effects[r[g.categorical.name]];
        for (const f of g.numeric) pred += f.coefficient * ((Number(r[f.name]) - f.mean) / f.sd);
        const nl = g.nonlinear!;
        const f = g.numeric.find((x) => x.name === nl.feature)!;
        pred += nl.coefficient * ((Number(r[f.name]) - f.mean) / f.sd) ** 2;
        residuals.push(Number(r[task.target]) - pred);
      }
      const mean = residuals.reduce((a, b) => a + b, 0) / residuals.length;
      const sd = Math.sqrt(residuals.reduce((a, b) => a + (b - mean) ** 2, 0) / residuals.length);
      expect(residuals.length).toBeGreaterThan(150);
      expect(Math.abs(mean)).toBeLessThan(0.25 * g.noiseSd!);
      expect(sd / g.noiseSd!).toBeGreaterThan(0.8);
      expect(sd / g.noiseSd!).toBeLessThan(1.2);
      expect(g.numeric.filter((f) => f.coefficient === 0)).toHaveLength(1);
    }
  });

  it('follows its documented generator: classification labels track the logistic probability', () => {
    for (const task of tasks.filter((t): t is TabularTask => t.kind === 'classification')) {
      const { header, records } = parseCsvRecords(task.csv);
      const g = task.generator;
      let sumP = 0;
      let sumY = 0;
      let n = 0;
      const high: number[] = [];
      const low: number[] = [];
      for (const r of records) {
        if (header.some((h) => r[h] === '')) continue;
        let eta = g.intercept + g.categorical.effects[r[g.categorical.name]];
        for (const f of g.numeric) eta += f.coefficient * ((Number(r[f.name]) - f.mean) / f.sd);
        const p = 1 / (1 + Math.exp(-eta));
        const y = Number(r[task.target]);
        sumP += p;
        sumY += y;
        n++;
        (p > 0.5 ? high : low).push(y);
      }
      const rate = (ys: number[]) => ys.reduce((a, b) => a + b, 0) / ys.length;
      expect(Math.abs(sumP / n - sumY / n)).toBeLessThan(0.1);
      expect(rate(high) - rate(low)).toBeGreaterThan(0.3);
    }
  });

  it('answers table questions exactly as a fresh computation on the CSV text does', () => {
    const questions = generateTabularTasks({ seed: 5, count: 30, kinds: ['table-question'] }).filter(isQuestion);
    expect(questions).toHaveLength(30);
    for (const q of questions) {
      const { records } = parseCsvRecords(q.csv);
      const { column, filter, aggregate: op } = q.generator;
      const matching = records.filter((r) => {
        const v = r[filter.column];
        if (v === '') return false;
        if (filter.op === '==') return v === filter.value;
        return filter.op === '>' ? Number(v) > Number(filter.value) : Number(v) < Number(filter.value);
      });
      const values = matching.map((r) => r[column]).filter((v) => v !== '').map(Number);
      let expected: number;
      if (op === 'count') expected = values.length;
      else if (op === 'sum') expected = values.reduce((a, b) => a + b, 0);
      else if (op === 'mean') expected = values.reduce((a, b) => a + b, 0) / values.length;
      else if (op === 'min') expected = Math.min(...values);
      else if (op === 'max') expected = Math.max(...values);
      else {
        const s = [...values].sort((a, b) => a - b);
        expected = s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
      }
      expect(values.length).toBeGreaterThanOrEqual(3);
      expect(Math.abs(q.answerValue - expected)).toBeLessThanOrEqual(0.005 + 1e-9);
      expect(q.question).toContain(column);
      expect(checkTableAnswer(q, expected)).toBe(true);
      expect(checkTableAnswer(q, q.answer)).toBe(true);
      expect(checkTableAnswer(q, expected + 1)).toBe(false);
      expect(checkTableAnswer(q, 'no idea')).toBe(false);
    }
  });
});

describe('tabularHeldOut', () => {
  it('is fixed: 12 classification, 12 regression, 12 questions, identical on every call', () => {
    const held = tabularHeldOut();
    expect(held).toHaveLength(36);
    expect(tabularHeldOut('classification')).toHaveLength(12);
    expect(tabularHeldOut('regression')).toHaveLength(12);
    expect(tabularHeldOut('table-question')).toHaveLength(12);
    expect(tabularHeldOut()).toEqual(held);
    expect(held.every((t) => t.source === 'generated-heldout' && isTabularHeldOut(t))).toBe(true);
  });

  it('never appears among training tasks', () => {
    const heldCsv = new Set(tabularHeldOut().map((t) => t.csv));
    for (let seed = 0; seed < 5; seed++) {
      for (const task of generateTabularTasks({ seed, count: 12 })) {
        expect(heldCsv.has(task.csv)).toBe(false);
        expect(isTabularHeldOut(task)).toBe(false);
      }
    }
  });
});
