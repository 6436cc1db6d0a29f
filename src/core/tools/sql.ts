// The SQL tool: agents' ```sql blocks run on DuckDB (compiled to WebAssembly, in a worker) over the
// trajectory's Workspace, in Node and in the browser alike, offline.
//
// For: short analytical scripts (CREATE TABLE ... AS SELECT, aggregates, joins) that hand tables from
// agent to agent, plus the table functions a team brings (model fitting through `fit_predict(...)`,
// for one). Not for: persistent databases, extensions, files outside the workspace.
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
// Where the pieces are: this file holds DuckDB's worker (started by sql-duckdb.ts) and the steps of one
// run; sql-tables.ts moves tables between the workspace and the database; sql-statements.ts checks and
// runs each statement, the table functions included, and words its errors.
//
// Example:
//   const sql = createSqlTool({ functions: [FIT_PREDICT] });
//   ws.write('data.csv', 'id,x\n1,2\n2,5\n', 'task');
//   const r = await sql.run('CREATE TABLE big AS SELECT * FROM data WHERE x > 3; SELECT count(*) AS n FROM big', { workspace: ws, owner: 'data_engineer' });
//   formatObservation(r) -> "```output\nn\n1\n(1 row)\nsaved table big -> big.csv (1 row, 2 columns)\n```";  ws.list() now has big.csv owned by data_engineer

import type { AsyncDuckDB } from '@duckdb/duckdb-wasm';
import {
  DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT_MS, clipOutput, describeError, serialSandbox, type RunErrorKind, type RunOptions, type RunResult, type Sandbox,
} from './sandbox.ts';
import { startDuckDb, type DuckDbUrls } from './sql-duckdb.ts';
import { Killed, splitStatements, StatementRunner, withDeadline, type SqlFunction, type SqlLimits, type StatementFailure } from './sql-statements.ts';
import { loadWorkspace, saveChanges } from './sql-tables.ts';


export interface SqlToolConfig {
  /** Browser: where DuckDB's worker and wasm are served (default: the bundled assets). */
  urls?: DuckDbUrls;
  rowsShown?: number; // rows printed per result, default 20
  rowsRead?: number; // rows read per result before stopping, default 1000
  exportRowLimit?: number; // tables bigger than this are not written back, default 20000
  /** Table functions agents may call in a statement (a team's: Team.sqlFunctions); none by default. */
  functions?: readonly SqlFunction[];
}

export function createSqlTool(config: SqlToolConfig = {}): Sandbox {
  const tool = new SqlTool(config);
  return serialSandbox((code, opts) => tool.run(code, opts), () => tool.kill());
}

/**
 * DuckDB's worker, started on first use and killed after a timeout or a crash (the next run starts a
 * fresh one), and each run on it: a fresh in-memory database, the workspace loaded, the settings
 * locked, the statements run until one fails (sql-statements.ts), the changes written back
 * (sql-tables.ts). Runs never overlap: createSqlTool queues them (serialSandbox).
 */
class SqlTool {
  private db: Promise<AsyncDuckDB> | undefined;
  private readonly limits: SqlLimits;

  constructor(private readonly config: SqlToolConfig) {
    this.limits = { rowsShown: config.rowsShown ?? 20, rowsRead: config.rowsRead ?? 1000, exportRowLimit: config.exportRowLimit ?? 20_000 };
  }

  /** Terminates the worker, if any; the next run starts a new one. */
  async kill(): Promise<void> {
    const old = this.db;
    this.db = undefined;
    await (await old?.catch(() => undefined))?.terminate().catch(() => undefined);
  }

  /** One script as a RunResult: what it printed, and the first failure (or timeout, or crash) as its error. */
  async run(code: string, opts: RunOptions): Promise<RunResult> {
    const started = Date.now();
    const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const memoryMb = opts.memoryMb ?? DEFAULT_MEMORY_MB;
    const out: string[] = [];
    const fail = (kind: RunErrorKind, message: string): RunResult => ({
      ok: false, stdout: clipOutput(out.join('\n')), stderr: '',
      error: { kind, message: describeError(kind, message, { timeoutMs, memoryMb }) }, durationMs: Date.now() - started,
    });
    this.db ??= startDuckDb(this.config.urls);
    let duck: AsyncDuckDB;
    try {
      duck = await this.db;
    } catch (e) {
      this.db = undefined;
      return fail('crash', (e as Error).message);
    }
    try {
      const failure = await this.runScript(duck, code, opts, { timeoutMs, memoryMb }, out);
      return failure ? fail(failure.kind, failure.message) : { ok: true, stdout: clipOutput(out.join('\n')), stderr: '', durationMs: Date.now() - started };
    } catch (e) {
      await this.kill(); // timed out, or an unknown state: start clean next time
      return e instanceof Killed ? fail('timeout', 'killed') : fail('crash', (e as Error).message);
    }
  }

  /**
   * The script on a fresh in-memory database, printing into `out`: returns the statement failure that
   * stopped it, if any. The time limit starts once the workspace is loaded; past it, Killed is thrown.
   */
  private async runScript(duck: AsyncDuckDB, code: string, opts: RunOptions, limits: { timeoutMs: number; memoryMb: number },
    out: string[]): Promise<StatementFailure | undefined> {
    await duck.open({ path: ':memory:', query: { castBigIntToDouble: true, castDecimalToDouble: true } });
    const conn = await duck.connect();
    const loaded = await loadWorkspace(duck, conn, opts.workspace, out);
    for (const s of [`SET max_memory = '${limits.memoryMb}MB'`, 'SET threads = 1', 'SET enable_external_access = false', 'SET lock_configuration = true']) {
      await conn.query(s);
    }

    const timed = withDeadline(limits.timeoutMs);
    const statements = await splitStatements(duck, code);
    const runner = new StatementRunner(conn, this.limits, [...loaded.keys()], out, timed, this.config.functions);
    let failure: StatementFailure | undefined;
    for (const [k, statement] of statements.entries()) {
      failure = await runner.run(statement, k);
      if (failure) break;
    }
    if (opts.workspace) await timed(saveChanges(conn, opts.workspace, loaded, opts.owner ?? 'unknown', out, this.limits.exportRowLimit));
    if (statements.length === 0) out.push('(no SQL statement found)');
    await conn.close();
    await duck.dropFiles();
    return failure;
  }
}
