// The SQL tool: agents' ```sql blocks run on DuckDB (compiled to WebAssembly, in a worker) over the
// trajectory's Workspace, in Node and in the browser alike, offline.
//
// For: short analytical scripts (CREATE TABLE ... AS SELECT, aggregates, joins) that hand tables from
// agent to agent, plus model fitting through the `fit_predict(...)` table function (see
// tasks/fit.ts). Not for: persistent databases, extensions, files outside the workspace.
//
// The workspace IS the database: before each run every `*.csv` file becomes a table named after it
// (`data.csv` -> data, `out/x-1.csv` -> out_x_1); after the run every table or view the script created
// or changed is written back as `<name>.csv` (owned by the agent that ran the script; booleans as 1/0), and a dropped
// file-backed table deletes its file. So Python, SQL and later agents all see the same files, and the
// coach sees who produced what. Each run starts from a fresh in-memory database.
//
// Limits, each turned into a clear observation (the next run works as usual):
//   time     the run's statements must finish within timeoutMs; otherwise the worker is killed
//            (a recursive CTE that never ends) and the next run starts a fresh one (~1 s)
//   size     a result is read in streamed batches and only the first 20 rows are shown; reading stops
//            after 1000 rows with a note; tables over 20000 rows are not written back
//   memory   DuckDB's max_memory (RunOptions.memoryMb)
//   access   after loading, `enable_external_access = false` and `lock_configuration = true`: no file
//            reads or writes (read_csv on a host path, COPY ... TO, ATTACH), no INSTALL/LOAD, no httpfs,
//            and the settings cannot be changed back; statements that only touch files, settings or
//            extensions are refused up front with an explanation.
//
// Example:
//   const sql = createSqlTool();
//   ws.write('data.csv', 'id,x\n1,2\n2,5\n', 'task');
//   const r = await sql.run('CREATE TABLE big AS SELECT * FROM data WHERE x > 3; SELECT count(*) AS n FROM big', { workspace: ws, owner: 'data_engineer' });
//   formatObservation(r) -> "```output\nn\n1\n(1 row)\nsaved table big -> big.csv (1 row, 2 columns)\n```";  ws.list() now has big.csv owned by data_engineer

import type { AsyncDuckDB, AsyncDuckDBConnection } from '@duckdb/duckdb-wasm';
import { FitError, fitPredict, FIT_MODELS, type Cell, type DataTable, type FitModel } from '../tasks/fit.ts';
import { toCsv } from '../tasks/tabular.ts';
import { DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT_MS, clipOutput, describeError, serialSandbox, type RunErrorKind, type RunOptions, type RunResult, type Sandbox } from './sandbox.ts';
import { startDuckDb, type DuckDbUrls } from './sql-duckdb.ts';
import type { Workspace } from './workspace.ts';

export interface SqlToolConfig {
  /** Browser: where DuckDB's worker and wasm are served (default: the bundled assets). */
  urls?: DuckDbUrls;
  rowsShown?: number; // rows printed per result, default 20
  rowsRead?: number; // rows read per result before stopping, default 1000
  exportRowLimit?: number; // tables bigger than this are not written back, default 20000
}

const ROW_KEYWORDS = new Set(['select', 'with', 'from', 'values', 'table', 'describe', 'desc', 'show', 'summarize', 'explain', 'pragma']);
const FORBIDDEN_KEYWORDS = new Set(['install', 'load', 'attach', 'detach', 'copy', 'export', 'import', 'set', 'reset', 'checkpoint', 'force', 'use', 'call', 'vacuum']);

class Killed extends Error {}

/** The table a workspace CSV becomes. tableNameFor('out/x-1.csv') -> 'out_x_1'. */
export function tableNameFor(path: string): string {
  const base = path.replace(/\.csv$/i, '').replace(/[^A-Za-z0-9_]/g, '_');
  return /^[0-9]/.test(base) ? `t_${base}` : base;
}

const quoteIdent = (name: string) => `"${name.replace(/"/g, '""')}"`;
const firstKeyword = (statement: string) => /^(?:\s|--[^\n]*\n?|\/\*[\s\S]*?\*\/)*([A-Za-z_]+)/.exec(statement)?.[1].toLowerCase() ?? '';

/** A cell as agents read it: short numbers, ISO dates, JSON for nested values. */
function displayCell(v: unknown): string {
  if (v === null || v === undefined) return 'NULL';
  if (typeof v === 'number') return Number.isInteger(v) ? String(v) : String(Number(v.toPrecision(6)));
  return String(csvCell(v)).slice(0, 40);
}

function csvCell(v: unknown): Cell {
  if (v === null || v === undefined) return null;
  if (typeof v === 'number' || typeof v === 'string' || typeof v === 'boolean') return v;
  if (typeof v === 'bigint') return Number(v);
  if (v instanceof Date) return v.toISOString();
  return JSON.stringify(v, (_, x) => (typeof x === 'bigint' ? Number(x) : x));
}

/** An Arrow table (DuckDB result) by columns, nulls kept. */
function arrowToTable(name: string, result: { schema: { fields: { name: string }[] }; numRows: number; getChildAt(i: number): { get(i: number): unknown } | null }): DataTable {
  const columns = result.schema.fields.map((f) => f.name);
  const data = columns.map((_, j) => {
    const vector = result.getChildAt(j)!;
    return Array.from({ length: result.numRows }, (_, i) => csvCell(vector.get(i)));
  });
  return { name, columns, data };
}

function sqlLiteral(v: Cell): string {
  if (v === null || (typeof v === 'number' && !Number.isFinite(v))) return 'NULL';
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return `'${v.replace(/'/g, "''")}'`;
}

export function createSqlTool(config: SqlToolConfig = {}): Sandbox {
  const rowsShown = config.rowsShown ?? 20;
  const rowsRead = config.rowsRead ?? 1000;
  const exportRowLimit = config.exportRowLimit ?? 20_000;
  let db: Promise<AsyncDuckDB> | undefined;

  async function kill(): Promise<void> {
    const old = db;
    db = undefined;
    await (await old?.catch(() => undefined))?.terminate().catch(() => undefined);
  }

  async function runNow(code: string, opts: RunOptions): Promise<RunResult> {
    const started = Date.now();
    const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const memoryMb = opts.memoryMb ?? DEFAULT_MEMORY_MB;
    const out: string[] = [];
    const fail = (kind: RunErrorKind, message: string): RunResult => ({
      ok: false, stdout: clipOutput(out.join('\n')), stderr: '', error: { kind, message: describeError(kind, message, { timeoutMs, memoryMb }) }, durationMs: Date.now() - started,
    });
    db ??= startDuckDb(config.urls);
    let duck: AsyncDuckDB;
    try {
      duck = await db;
    } catch (e) {
      db = undefined;
      return fail('crash', (e as Error).message);
    }
    let conn: AsyncDuckDBConnection | undefined;
    try {
      await duck.open({ path: ':memory:', query: { castBigIntToDouble: true, castDecimalToDouble: true } });
      conn = await duck.connect();
      const loaded = await loadWorkspace(duck, conn, opts.workspace, out);
      for (const s of [`SET max_memory = '${memoryMb}MB'`, 'SET threads = 1', 'SET enable_external_access = false', 'SET lock_configuration = true']) await conn.query(s);

      const deadline = Date.now() + timeoutMs;
      const timed = <T>(p: Promise<T>): Promise<T> => {
        let timer: ReturnType<typeof setTimeout>;
        const expire = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Killed()), Math.max(0, deadline - Date.now()))));
        return Promise.race([p, expire]).finally(() => clearTimeout(timer));
      };
      const statements = await splitStatements(duck, code);
      let failure: { kind: RunErrorKind; message: string } | undefined;
      for (const [k, statement] of statements.entries()) {
        failure = await runStatement(conn, statement, k, loaded, out, timed);
        if (failure) break;
      }
      if (opts.workspace) await timed(saveChanges(conn, opts.workspace, loaded, opts.owner ?? 'unknown', out));
      if (statements.length === 0) out.push('(no SQL statement found)');
      await conn.close();
      await duck.dropFiles();
      return failure ? fail(failure.kind, failure.message) : { ok: true, stdout: clipOutput(out.join('\n')), stderr: '', durationMs: Date.now() - started };
    } catch (e) {
      if (e instanceof Killed) {
        await kill();
        return fail('timeout', 'killed');
      }
      await kill(); // unknown state: start clean next time
      return fail('crash', (e as Error).message);
    }
  }

  /** Every workspace CSV as a table; returns table name -> {path, fingerprint}. */
  async function loadWorkspace(duck: AsyncDuckDB, conn: AsyncDuckDBConnection, ws: Workspace | undefined, out: string[]): Promise<Map<string, { path: string; print: string }>> {
    const loaded = new Map<string, { path: string; print: string }>();
    const files = (ws?.list() ?? []).filter((f) => /\.csv$/i.test(f.path));
    for (const [i, f] of files.entries()) {
      const table = tableNameFor(f.path);
      if (loaded.has(table)) {
        out.push(`(note: ${f.path} is not a table: ${loaded.get(table)!.path} already gives the name ${table})`);
        continue;
      }
      const buffer = `mappa-ws-${i}.csv`;
      await duck.registerFileText(buffer, ws!.readText(f.path) ?? '');
      try {
        await conn.query(`CREATE TABLE ${quoteIdent(table)} AS SELECT * FROM read_csv('${buffer}', header = true, sample_size = -1)`);
        loaded.set(table, { path: f.path, print: await fingerprint(conn, table) });
      } catch (e) {
        out.push(`(note: ${f.path} could not be read as a table: ${firstLine(e)})`);
      }
    }
    return loaded;
  }

  async function runStatement(conn: AsyncDuckDBConnection, statement: string, index: number, loaded: Map<string, unknown>,
    out: string[], timed: <T>(p: Promise<T>) => Promise<T>): Promise<{ kind: RunErrorKind; message: string } | undefined> {
    const keyword = firstKeyword(statement);
    const where = `statement ${index + 1} (${statement.replace(/\s+/g, ' ').trim().slice(0, 60)})`;
    if (FORBIDDEN_KEYWORDS.has(keyword)) {
      return { kind: 'forbidden', message: `${keyword.toUpperCase()} is not available in ${where}: files, settings and extensions are off limits. Every workspace CSV is already a table (${[...loaded.keys()].join(', ') || 'none'}); CREATE TABLE name AS SELECT ... saves name.csv` };
    }
    try {
      const rewritten = await expandFitPredict(conn, statement, index, out, timed);
      if (ROW_KEYWORDS.has(keyword)) await timed(streamRows(conn, rewritten, out));
      else await timed(conn.query(rewritten));
      return undefined;
    } catch (e) {
      if (e instanceof Killed) throw e;
      const text = (e as Error).message ?? String(e);
      if (e instanceof FitError) return { kind: 'exception', message: `fit_predict in ${where}: ${text}` };
      if (/Permission Error|external access|disabled by configuration/i.test(text)) return { kind: 'forbidden', message: `${firstLine(e)} in ${where}; only workspace tables (${[...loaded.keys()].join(', ') || 'none'}) can be read` };
      if (/Out of Memory/i.test(text)) return { kind: 'memory', message: firstLine(e) };
      const hint = /Catalog Error/.test(text) ? ` Tables: ${[...loaded.keys()].join(', ') || 'none'}.` : '';
      return { kind: 'exception', message: `${text.split('\n').filter((l) => l.trim()).slice(0, 3).join(' ')} (${where}).${hint}` };
    }
  }

  /** Runs a row-returning statement, printing the first rows and stopping after `rowsRead`. */
  async function streamRows(conn: AsyncDuckDBConnection, statement: string, out: string[]): Promise<void> {
    const reader = await conn.send(statement, true);
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
    out.push(columns.join(' | '), ...shown);
    if (stopped) out.push(`(first ${shown.length} rows shown; stopped reading after ${rows} rows: add LIMIT or aggregate)`);
    else out.push(rows > shown.length ? `(first ${shown.length} of ${rows} rows)` : `(${rows} row${rows === 1 ? '' : 's'})`);
  }

  /** Replaces fit_predict('train', 'test', 'target'[, 'model']) by a temporary table of predictions. */
  async function expandFitPredict(conn: AsyncDuckDBConnection, statement: string, index: number, out: string[], timed: <T>(p: Promise<T>) => Promise<T>): Promise<string> {
    const call = /\bfit_predict\s*\(([^()]*)\)/i.exec(statement);
    if (!call) return statement;
    const args = call[1].split(',').map((a) => a.trim().replace(/^(['"])(.*)\1$/, '$2')).filter((a) => a !== '');
    if (args.length < 3 || args.length > 4) throw new FitError(`takes 3 or 4 arguments: fit_predict('train_table', 'test_table', 'target_column'[, 'linear' | 'logistic' | 'mlp']), got ${args.length}`);
    const [trainName, testName, target, model] = args;
    if (model !== undefined && !FIT_MODELS.includes(model as FitModel)) throw new FitError(`model '${model}' is unknown; use one of ${FIT_MODELS.join(', ')}`);
    const read = async (name: string) => {
      try {
        return arrowToTable(name, await timed(conn.query(`SELECT * FROM ${quoteIdent(name)} LIMIT ${exportRowLimit + 1}`)));
      } catch (e) {
        if (e instanceof Killed) throw e;
        throw new FitError(`cannot read table ${name}: ${firstLine(e)}`);
      }
    };
    const result = fitPredict(await read(trainName), await read(testName), target, model as FitModel | undefined, { maxRows: exportRowLimit });
    out.push(result.summary);
    const temp = `__fit_predict_${index + 1}`;
    const p = result.predictions;
    const rows = p.data[0].map((_, i) => `(${p.columns.map((_, j) => sqlLiteral(p.data[j][i])).join(', ')})`);
    await timed(conn.query(`CREATE OR REPLACE TEMP TABLE ${temp} AS SELECT * FROM (VALUES ${rows.join(', ')}) AS v(${p.columns.map(quoteIdent).join(', ')})`));
    return statement.slice(0, call.index) + temp + statement.slice(call.index + call[0].length);
  }

  /** Writes new or changed tables back to the workspace and deletes files whose table was dropped. */
  async function saveChanges(conn: AsyncDuckDBConnection, ws: Workspace, loaded: Map<string, { path: string; print: string }>, owner: string, out: string[]): Promise<void> {
    const names = (await conn.query(
      `SELECT table_name AS name FROM duckdb_tables() WHERE NOT temporary AND schema_name = 'main'
       UNION ALL SELECT view_name FROM duckdb_views() WHERE NOT internal AND NOT temporary AND schema_name = 'main' ORDER BY 1`,
    )).toArray().map((r) => String(r.toJSON().name));
    const changed: { path: string; bytes: Uint8Array }[] = [];
    for (const name of names) {
      const before = loaded.get(name);
      if (before && before.print === (await fingerprint(conn, name))) continue;
      const path = before?.path ?? `${name}.csv`;
      const table = arrowToTable(name, await conn.query(`SELECT * FROM ${quoteIdent(name)} LIMIT ${exportRowLimit + 1}`));
      const rows = table.data[0]?.length ?? 0;
      if (rows > exportRowLimit) {
        out.push(`table ${name} has more than ${exportRowLimit} rows and was not saved`);
        continue;
      }
      const cell = (j: number, i: number) => {
        const v = table.data[j][i];
        return typeof v === 'boolean' ? Number(v) : v; // booleans saved as 1/0
      };
      const csv = toCsv([table.columns, ...Array.from({ length: rows }, (_, i) => table.columns.map((_, j) => cell(j, i)))]);
      changed.push({ path, bytes: new TextEncoder().encode(csv) });
      out.push(`saved table ${name} -> ${path} (${rows} row${rows === 1 ? '' : 's'}, ${table.columns.length} columns)`);
    }
    const deleted = [...loaded].filter(([name]) => !names.includes(name)).map(([, v]) => v.path);
    for (const path of deleted) out.push(`dropped table ${tableNameFor(path)} -> deleted ${path}`);
    ws.applyChanges(changed, deleted, owner);
  }

  return serialSandbox(runNow, kill);
}

/** Row count, an order-free hash of the rows, and the column names and types. */
async function fingerprint(conn: AsyncDuckDBConnection, table: string): Promise<string> {
  const q = quoteIdent(table);
  const [row] = (await conn.query(`SELECT count(*) AS n, bit_xor(hash(t))::VARCHAR AS h FROM ${q} AS t`)).toArray().map((r) => r.toJSON());
  const columns = (await conn.query(`DESCRIBE ${q}`)).toArray().map((r) => `${r.toJSON().column_name}:${r.toJSON().column_type}`);
  return `${row.n}:${row.h}:${columns.join(',')}`;
}

/** Statements split at top-level semicolons, using DuckDB's own tokenizer (strings and comments are safe). */
async function splitStatements(duck: AsyncDuckDB, code: string): Promise<string[]> {
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

function firstLine(e: unknown): string {
  return String((e as Error)?.message ?? e).split('\n')[0];
}
