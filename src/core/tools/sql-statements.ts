// Running an agent's SQL script on the SQL tool's connection, one statement at a time: splitting the
// script with DuckDB's own tokenizer, refusing statements that only touch files, settings or
// extensions, expanding a table function (the data team's fit_predict) into a temporary table, printing the first rows
// of a result, and turning DuckDB's errors into one agent-readable line each. Every query runs under
// the run's deadline (`withDeadline`); when it passes the promise rejects with `Killed`, which
// StatementRunner passes on, and sql.ts kills DuckDB's worker.
//
// For: what happens between loading the workspace and saving it back (sql-tables.ts). Not for:
// DuckDB's worker, its settings or the run's result (sql.ts).
//
// Example (a workspace with data.csv loaded as table data, 6 rows):
//   const runner = new StatementRunner(conn, { rowsShown: 20, rowsRead: 1000, exportRowLimit: 20_000 }, ['data'], out, withDeadline(2000));
//   const [a, b] = await splitStatements(duck, 'SELECT count(*) AS n FROM data; ATTACH x');
//   await runner.run(a, 0)  // undefined; out gets 'n', '6', '(1 row)'
//   await runner.run(b, 1)  // {kind: 'forbidden', message: 'ATTACH is not available in statement 2 (ATTACH x): files, ...'}

import type { AsyncDuckDB, AsyncDuckDBConnection } from '@duckdb/duckdb-wasm';
import type { RunErrorKind } from './sandbox.ts';
import { csvCell, firstLine, quoteIdent, readTable, type Cell, type DataTable } from './sql-tables.ts';

/**
 * A table function agents may call inside a statement (the data team's fit_predict, domains/data/fit.ts):
 * the first call, its arguments unquoted, becomes a temporary table of what `run` returns, and its
 * summary is printed. `read` gives a table of the database (at most `maxRows` rows).
 */
export interface SqlFunction {
  name: string;
  run(args: string[], read: (table: string) => Promise<DataTable>, maxRows: number): Promise<{ summary: string; table: DataTable }>;
}

/** A table function's call that cannot run (bad arguments, a table it cannot read): told to the agent as `<name> in <statement>: <message>`. */
export class SqlFunctionError extends Error {
  /** The function that threw (set by the runner). */
  fn = '';
}

/** How much of a result is shown and read, and the largest table that is read or saved. */
export interface SqlLimits {
  rowsShown: number; // rows printed per result
  rowsRead: number; // rows read per result before stopping
  exportRowLimit: number; // tables bigger than this are not written back (nor fitted on)
}

/** A statement that failed: the RunResult error it becomes (before describeError). */
export interface StatementFailure {
  kind: RunErrorKind;
  message: string;
}

/** Thrown when the run's deadline passes: the worker is in an unknown state and must be killed. */
export class Killed extends Error {}

/** Wraps a promise so it rejects with Killed once the deadline passes. */
export type Timed = <T>(p: Promise<T>) => Promise<T>;

/** A Timed whose deadline is `timeoutMs` from now, shared by every promise it wraps. */
export function withDeadline(timeoutMs: number): Timed {
  const deadline = Date.now() + timeoutMs;
  return <T>(p: Promise<T>): Promise<T> => {
    let timer: ReturnType<typeof setTimeout>;
    const expire = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Killed()), Math.max(0, deadline - Date.now()))));
    return Promise.race([p, expire]).finally(() => clearTimeout(timer));
  };
}

/** Statements split at top-level semicolons, using DuckDB's own tokenizer (strings and comments are safe). */
export async function splitStatements(duck: AsyncDuckDB, code: string): Promise<string[]> {
  const tokens = await duck.tokenize(code);
  const cuts = tokens.offsets.filter((offset, i) => tokens.types[i] === 3 /* OPERATOR */ && code[offset] === ';');
  const statements: string[] = [];
  let start = 0;
  for (const cut of [...cuts, code.length]) {
    const text = code.slice(start, cut);
    const hasToken = tokens.offsets.some((o, i) => o >= start && o < cut && tokens.types[i] !== 5 /* COMMENT */);
    if (hasToken && text.trim()) statements.push(text.trim());
    start = cut + 1;
  }
  return statements;
}

const ROW_KEYWORDS = new Set(['select', 'with', 'from', 'values', 'table', 'describe', 'desc', 'show', 'summarize', 'explain', 'pragma']);
const FORBIDDEN_KEYWORDS = new Set([
  'install', 'load', 'attach', 'detach', 'copy', 'export', 'import', 'set', 'reset', 'checkpoint', 'force', 'use', 'call', 'vacuum',
]);

const firstKeyword = (statement: string) => /^(?:\s|--[^\n]*\n?|\/\*[\s\S]*?\*\/)*([A-Za-z_]+)/.exec(statement)?.[1].toLowerCase() ?? '';

/**
 * One run's statements on one connection. `tables` are the workspace tables, named in refusals and
 * errors so the agent knows what it can read; `out` collects what the agent reads; `timed` holds the
 * run's deadline.
 */
export class StatementRunner {
  private readonly tableList: string;

  constructor(
    private readonly conn: AsyncDuckDBConnection,
    private readonly limits: SqlLimits,
    tables: string[],
    private readonly out: string[],
    private readonly timed: Timed,
    private readonly functions: readonly SqlFunction[] = [],
  ) {
    this.tableList = tables.join(', ') || 'none';
  }

  /** Runs statement `index` (0-based); undefined when it worked. Throws Killed past the deadline. */
  async run(statement: string, index: number): Promise<StatementFailure | undefined> {
    const keyword = firstKeyword(statement);
    const where = `statement ${index + 1} (${statement.replace(/\s+/g, ' ').trim().slice(0, 60)})`;
    if (FORBIDDEN_KEYWORDS.has(keyword)) {
      return {
        kind: 'forbidden',
        message: `${keyword.toUpperCase()} is not available in ${where}: files, settings and extensions are off limits. ` +
          `Every workspace CSV is already a table (${this.tableList}); CREATE TABLE name AS SELECT ... saves name.csv`,
      };
    }
    try {
      const rewritten = await this.expandFunctions(statement, index);
      if (ROW_KEYWORDS.has(keyword)) await this.timed(this.streamRows(rewritten));
      else await this.timed(this.conn.query(rewritten));
      return undefined;
    } catch (e) {
      if (e instanceof Killed) throw e;
      return this.explain(e, where);
    }
  }

  /** A failed statement's error as one line naming the statement (and, where it helps, the tables). */
  private explain(e: unknown, where: string): StatementFailure {
    const text = (e as Error).message ?? String(e);
    if (e instanceof SqlFunctionError) return { kind: 'exception', message: `${e.fn} in ${where}: ${text}` };
    if (/Permission Error|external access|disabled by configuration/i.test(text)) {
      return { kind: 'forbidden', message: `${firstLine(e)} in ${where}; only workspace tables (${this.tableList}) can be read` };
    }
    if (/Out of Memory/i.test(text)) return { kind: 'memory', message: firstLine(e) };
    const hint = /Catalog Error/.test(text) ? ` Tables: ${this.tableList}.` : '';
    return { kind: 'exception', message: `${text.split('\n').filter((l) => l.trim()).slice(0, 3).join(' ')} (${where}).${hint}` };
  }

  /** Runs a row-returning statement, printing the first `rowsShown` rows and stopping after `rowsRead`. */
  private async streamRows(statement: string): Promise<void> {
    const { rowsShown, rowsRead } = this.limits;
    const reader = await this.conn.send(statement, true);
    const iterator = reader[Symbol.asyncIterator]();
    let columns: string[] = [];
    const shown: string[] = [];
    let rows = 0;
    let stopped = false;
    for (;;) {
      const next = await iterator.next();
      if (next.done) break;
      const batch = next.value;
      columns = batch.schema.fields.map((f) => f.name);
      for (let i = 0; i < batch.numRows && shown.length < rowsShown; i++) {
        const row = batch.get(i)?.toJSON() ?? {};
        shown.push(columns.map((c) => displayCell((row as Record<string, unknown>)[c])).join(' | '));
      }
      rows += batch.numRows;
      if (rows >= rowsRead) {
        stopped = true;
        break;
      }
    }
    if (columns.length === 0) return;
    this.out.push(columns.join(' | '), ...shown);
    if (stopped) this.out.push(`(first ${shown.length} rows shown; stopped reading after ${rows} rows: add LIMIT or aggregate)`);
    else this.out.push(rows > shown.length ? `(first ${shown.length} of ${rows} rows)` : `(${rows} row${rows === 1 ? '' : 's'})`);
  }

  /** Each table function's first call in the statement replaced by a temporary table of its result, its summary printed. */
  private async expandFunctions(statement: string, index: number): Promise<string> {
    let text = statement;
    for (const fn of this.functions) {
      try {
        text = await this.expandCall(fn, text, index);
      } catch (e) {
        if (e instanceof SqlFunctionError) e.fn = fn.name;
        throw e;
      }
    }
    return text;
  }

  /** Replaces `fn(...)` by a temporary table of its result, printing its summary. Bad arguments throw SqlFunctionError. */
  private async expandCall(fn: SqlFunction, statement: string, index: number): Promise<string> {
    const call = new RegExp(`\\b${fn.name}\\s*\\(([^()]*)\\)`, 'i').exec(statement);
    if (!call) return statement;
    const args = call[1].split(',').map((a) => a.trim().replace(/^(['"])(.*)\1$/, '$2')).filter((a) => a !== '');
    const { exportRowLimit } = this.limits;
    const read = async (name: string) => {
      try {
        return await this.timed(readTable(this.conn, name, exportRowLimit));
      } catch (e) {
        if (e instanceof Killed) throw e;
        throw new SqlFunctionError(`cannot read table ${name}: ${firstLine(e)}`);
      }
    };
    const result = await fn.run(args, read, exportRowLimit);
    this.out.push(result.summary);
    const temp = `__${fn.name}_${index + 1}`;
    const p = result.table;
    const rows = p.data[0].map((_, i) => `(${p.columns.map((_, j) => sqlLiteral(p.data[j][i])).join(', ')})`);
    await this.timed(this.conn.query(
      `CREATE OR REPLACE TEMP TABLE ${temp} AS SELECT * FROM (VALUES ${rows.join(', ')}) AS v(${p.columns.map(quoteIdent).join(', ')})`));
    return statement.slice(0, call.index) + temp + statement.slice(call.index + call[0].length);
  }
}

/** A cell as agents read it: short numbers, ISO dates, JSON for nested values. */
function displayCell(v: unknown): string {
  if (v === null || v === undefined) return 'NULL';
  if (typeof v === 'number') return Number.isInteger(v) ? String(v) : String(Number(v.toPrecision(6)));
  return String(csvCell(v)).slice(0, 40);
}

/** A predicted value as a SQL literal; NaN and infinities become NULL. */
function sqlLiteral(v: Cell): string {
  if (v === null || (typeof v === 'number' && !Number.isFinite(v))) return 'NULL';
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return `'${v.replace(/'/g, "''")}'`;
}
