// Tables in and out of the SQL tool's database: before a run every workspace `*.csv` file is loaded as
// a table, after it every table or view the run created or changed is written back as CSV and a dropped
// file-backed table deletes its file (sql.ts calls the two around the agent's statements). Also the
// value conversions both sides share: DuckDB's Arrow results as DataTables (the shape a table function reads) and
// cells as CSV values.
//
// For: the workspace <-> database mapping, its naming rule and the change check (an order-free
// fingerprint of each loaded table). Not for: checking or running agents' statements
// (sql-statements.ts), DuckDB's worker and settings (sql.ts, sql-duckdb.ts).
//
// Example (out collects the lines the agent reads):
//   ws.write('out/x-1.csv', 'a\n1\n', 'task');
//   const loaded = await loadWorkspace(duck, conn, ws, out);  // table out_x_1; loaded.get('out_x_1').path = 'out/x-1.csv'
//   await conn.query('CREATE TABLE y AS SELECT a * 2 AS b FROM out_x_1');
//   await saveChanges(conn, ws, loaded, 'modeler', out, 20_000);
//   // ws has y.csv ('b\n2\n') owned by modeler; out ends with 'saved table y -> y.csv (1 row, 1 columns)'

import type { AsyncDuckDB, AsyncDuckDBConnection } from '@duckdb/duckdb-wasm';
import { toCsv } from './csv.ts';
import type { Workspace } from './workspace.ts';

export type Cell = number | string | boolean | null;

/** A table by columns: data[j][i] is row i of column j. */
export interface DataTable {
  name: string;
  columns: string[];
  data: Cell[][];
}

/** What loadWorkspace loaded: table name -> the file it came from and its fingerprint then. */
export type LoadedTables = Map<string, { path: string; print: string }>;

/** The table a workspace CSV becomes. tableNameFor('out/x-1.csv') -> 'out_x_1'. */
export function tableNameFor(path: string): string {
  const base = path.replace(/\.csv$/i, '').replace(/[^A-Za-z0-9_]/g, '_');
  return /^[0-9]/.test(base) ? `t_${base}` : base;
}

/** Every workspace CSV as a table; a file that cannot be read, or whose name is taken, becomes a note in `out`. */
export async function loadWorkspace(duck: AsyncDuckDB, conn: AsyncDuckDBConnection, ws: Workspace | undefined, out: string[]): Promise<LoadedTables> {
  const loaded: LoadedTables = new Map();
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

/**
 * Writes new or changed tables and views back to the workspace (owned by `owner`; booleans as 1/0) and
 * deletes files whose table was dropped; a table over `exportRowLimit` rows is left out with a note.
 */
export async function saveChanges(conn: AsyncDuckDBConnection, ws: Workspace, loaded: LoadedTables, owner: string, out: string[],
  exportRowLimit: number): Promise<void> {
  const names = (await conn.query(
    `SELECT table_name AS name FROM duckdb_tables() WHERE NOT temporary AND schema_name = 'main'
     UNION ALL SELECT view_name FROM duckdb_views() WHERE NOT internal AND NOT temporary AND schema_name = 'main' ORDER BY 1`,
  )).toArray().map((r) => String(r.toJSON().name));
  const changed: { path: string; bytes: Uint8Array }[] = [];
  for (const name of names) {
    const before = loaded.get(name);
    if (before && before.print === (await fingerprint(conn, name))) continue;
    const path = before?.path ?? `${name}.csv`;
    const table = await readTable(conn, name, exportRowLimit);
    const rows = table.data[0]?.length ?? 0;
    if (rows > exportRowLimit) {
      out.push(`table ${name} has more than ${exportRowLimit} rows and was not saved`);
      continue;
    }
    changed.push({ path, bytes: new TextEncoder().encode(tableCsv(table, rows)) });
    out.push(`saved table ${name} -> ${path} (${rows} row${rows === 1 ? '' : 's'}, ${table.columns.length} columns)`);
  }
  const deleted = [...loaded].filter(([name]) => !names.includes(name)).map(([, v]) => v.path);
  for (const path of deleted) out.push(`dropped table ${tableNameFor(path)} -> deleted ${path}`);
  ws.applyChanges(changed, deleted, owner);
}

/** A table's first `rowLimit + 1` rows (one more, so a caller can tell that it is over the limit). */
export async function readTable(conn: AsyncDuckDBConnection, name: string, rowLimit: number): Promise<DataTable> {
  return arrowToTable(name, await conn.query(`SELECT * FROM ${quoteIdent(name)} LIMIT ${rowLimit + 1}`));
}

/** The CSV text of a table's first `rows` rows, header first; booleans saved as 1/0. */
function tableCsv(table: DataTable, rows: number): string {
  const cell = (j: number, i: number) => {
    const v = table.data[j][i];
    return typeof v === 'boolean' ? Number(v) : v;
  };
  return toCsv([table.columns, ...Array.from({ length: rows }, (_, i) => table.columns.map((_, j) => cell(j, i)))]);
}

/** Row count, an order-free hash of the rows, and the column names and types. */
async function fingerprint(conn: AsyncDuckDBConnection, table: string): Promise<string> {
  const q = quoteIdent(table);
  const [row] = (await conn.query(`SELECT count(*) AS n, bit_xor(hash(t))::VARCHAR AS h FROM ${q} AS t`)).toArray().map((r) => r.toJSON());
  const columns = (await conn.query(`DESCRIBE ${q}`)).toArray().map((r) => `${r.toJSON().column_name}:${r.toJSON().column_type}`);
  return `${row.n}:${row.h}:${columns.join(',')}`;
}

/** An Arrow table (DuckDB result) by columns, nulls kept. */
function arrowToTable(name: string,
  result: { schema: { fields: { name: string }[] }; numRows: number; getChildAt(i: number): { get(i: number): unknown } | null }): DataTable {
  const columns = result.schema.fields.map((f) => f.name);
  const data = columns.map((_, j) => {
    const vector = result.getChildAt(j)!;
    return Array.from({ length: result.numRows }, (_, i) => csvCell(vector.get(i)));
  });
  return { name, columns, data };
}

/** A DuckDB value as a CSV cell: numbers, strings and booleans as they are, ISO dates, JSON for nested values. */
export function csvCell(v: unknown): Cell {
  if (v === null || v === undefined) return null;
  if (typeof v === 'number' || typeof v === 'string' || typeof v === 'boolean') return v;
  if (typeof v === 'bigint') return Number(v);
  if (v instanceof Date) return v.toISOString();
  return JSON.stringify(v, (_, x) => (typeof x === 'bigint' ? Number(x) : x));
}

/** A name as a SQL identifier. quoteIdent('a"b') -> '"a""b"'. */
export const quoteIdent = (name: string) => `"${name.replace(/"/g, '""')}"`;

/** The first line of an error's message (DuckDB's errors go on with context lines). */
export function firstLine(e: unknown): string {
  return String((e as Error)?.message ?? e).split('\n')[0];
}
