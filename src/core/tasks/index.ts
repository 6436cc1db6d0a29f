// The task suites in one place: the Task union every team, coach and UI panel works with,
// plus re-exports of the generators, the dataset importer, answer checking and the seeded RNG.
//
// Task kinds:
//   'math'            MathTask (generated arithmetic chains) or DatasetTask (MATH-500, GSM8K, AIME, AMC)
//   'classification'  TabularTask: fit on csv, predict testCsv, scored against testTargets
//   'regression'      TabularTask, same shape
//   'table-question'  TableQuestionTask: one number computed from a table
//
// Example:
//   function groundTruth(task: Task): string {
//     return task.kind === 'math' || task.kind === 'table-question' ? task.answer : `${task.testTargets.length} targets`;
//   }

import type { MathTask } from '../domains/math/tasks.ts';
import type { DatasetTask } from './dataset.ts';
import type { TabularTask, TableQuestionTask } from './tabular.ts';

export type { MathTask, DatasetTask, TabularTask, TableQuestionTask };

/** Any math problem the math chain can run: generated or imported. Both have id/problem/answer. */
export type MathProblemTask = MathTask | DatasetTask;

/** Every task the sandbox knows; switch on `kind`. */
export type Task = MathTask | DatasetTask | TabularTask | TableQuestionTask;
export type TaskKind = Task['kind'];

export { Rng, hashString, type RngState, type Seed } from './rng.ts';
export {
  MATH_LEVELS,
  HELD_OUT_PER_LEVEL,
  generateMathTasks,
  mathHeldOut,
  isMathHeldOut,
  solutionSteps,
  chainSignature,
  type MathOp,
  type MathChainStep,
  type SolutionStep,
  type LevelSpec,
  type GenerateMathOptions,
} from '../domains/math/tasks.ts';
export { extractBoxed, extractGsm8kAnswer, normalizeAnswer, answersEqual } from './answers.ts';
export { parseJsonlDataset, loadJsonlDatasetFile, formatDatasetErrors, type DatasetError, type ParsedDataset } from './dataset.ts';
export {
  parseCsv,
  parseCsvRecords,
  toCsv,
  aggregate,
  checkTableAnswer,
  generateTabularTasks,
  tabularHeldOut,
  isTabularHeldOut,
  type CsvCell,
  type TabularGenerator,
  type TableAggregate,
  type TabularSuiteTask,
  type TabularKind,
  type GenerateTabularOptions,
} from './tabular.ts';
