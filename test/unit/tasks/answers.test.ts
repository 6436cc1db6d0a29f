import { describe, expect, it } from 'vitest';
import { answersEqual, extractBoxed, extractGsm8kAnswer, normalizeAnswer } from '../../../src/core/tasks/answers.ts';

describe('extractBoxed', () => {
  it('takes the last box and keeps nested braces', () => {
    expect(extractBoxed('first \\boxed{1}, then \\boxed{\\frac{1}{2}}.')).toBe('\\frac{1}{2}');
    expect(extractBoxed('$\\boxed{\\left( 3, \\frac{\\pi}{2} \\right)}$')).toBe('\\left( 3, \\frac{\\pi}{2} \\right)');
    expect(extractBoxed('\\boxed{\\{1,2\\}}')).toBe('\\{1,2\\}');
  });
  it('accepts \\fbox, \\framebox and the bare "\\boxed 5" form', () => {
    expect(extractBoxed('answer: \\fbox{42}')).toBe('42');
    expect(extractBoxed('or $\\framebox{204}$ minutes')).toBe('204');
    expect(extractBoxed('so $\\boxed 5$.')).toBe('5');
    expect(extractBoxed('\\fbox{1} and later \\boxed{2}')).toBe('2');
  });
  it('returns null without a box or with an unclosed one', () => {
    expect(extractBoxed('the answer is 42')).toBeNull();
    expect(extractBoxed('\\boxed{\\frac{1}{2}')).toBeNull();
  });
});

describe('extractGsm8kAnswer', () => {
  it('takes the text after the last ####', () => {
    expect(extractGsm8kAnswer('16 - 3 - 4 = 9\n9 * 2 = 18\n#### 18')).toBe('18');
    expect(extractGsm8kAnswer('#### 1,000 ')).toBe('1,000');
    expect(extractGsm8kAnswer('no marker')).toBeNull();
    expect(extractGsm8kAnswer('####   ')).toBeNull();
  });
});

describe('answersEqual (hand-worked cases)', () => {
  const equal: [string, string][] = [
    ['\\frac{1}{2}', '0.5'],
    ['\\dfrac{3}{4}', '0.75'],
    ['\\frac 59', '5/9'],
    ['\\frac65', '1.2'],
    ['6/8', '3/4'],
    ['1,000', '1000'],
    ['11,\\! 111,\\! 111,\\! 100', '11111111100'],
    ['\\$42', '42'],
    ['$42', '42'],
    ['\\$18.90', '18.9'],
    ['27.0', '27'],
    ['-3', '-3.00'],
    ['-\\frac{35}{9}', '-35/9'],
    ['30^\\circ', '30'],
    ['30^{\\circ}', '30°'],
    ['50\\%', '50'],
    ['x = 5', '5'],
    ['y = 2x + 3', 'y=2x+3'],
    ['\\left( \\frac{3}{2}, -13 \\right)', '(1.5,-13)'],
    ['\\text{Evelyn}', 'evelyn'],
    ['\\text{(C)}', 'C'],
    ['5.4 \\text{ cents}', '5.4'],
    ['864 \\mbox{ inches}^2', '864'],
    ['42 apples', '42'],
    ['1\\frac{4}{5}', '9/5'],
    ['137 \\frac{1}{2}', '137.5'],
    ['\\sqrt2', '\\sqrt{2}'],
    ['3 \\sqrt{5}', '3\\sqrt{5}'],
    ['\\frac{270}7\\text{ degrees}', '\\frac{270}{7}'],
    ['\\begin{pmatrix} -7 \\\\ 16 \\end{pmatrix}', '\\begin{pmatrix}-7\\\\16\\end{pmatrix}'],
    ['42.', '42'],
    ['\u221212', '-12'],
  ];
  it.each(equal)('%s == %s', (a, b) => {
    expect(answersEqual(a, b)).toBe(true);
  });

  const different: [string, string][] = [
    ['-3', '3'],
    ['\\frac{1}{3}', '0.333'],
    ['14/3', '1 4/3'],
    ['(1,2)', '[1,2]'],
    ['2k', '2'],
    ['\\sqrt{8}', '2\\sqrt{2}'], // no symbolic algebra, by design
    ['12', '121'],
    ['', ''],
  ];
  it.each(different)('%s != %s', (a, b) => {
    expect(answersEqual(a, b)).toBe(false);
  });

  it('accepts numbers and rejects missing answers', () => {
    expect(answersEqual(27, '27.0')).toBe(true);
    expect(answersEqual(null, '1')).toBe(false);
    expect(answersEqual('1', undefined)).toBe(false);
  });

  it('normalises to readable canonical strings', () => {
    expect(normalizeAnswer('\\frac{6}{8}')).toBe('3/4');
    expect(normalizeAnswer('.35625')).toBe('57/160');
    expect(normalizeAnswer('\\left( 3, \\frac{\\pi}{2} \\right)')).toBe('(3,\\frac{\\pi}{2})');
    expect(normalizeAnswer('58,500')).toBe('58500');
  });
});
