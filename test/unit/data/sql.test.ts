/**
 * The SQL tool on DuckDB-wasm: workspace files are tables, new tables come back as files owned by the
 * agent, fit_predict fits through tfjs, and abuse (a query that never ends, a huge result, reading or
 * writing outside the workspace, extensions) becomes a clear observation after which the next query works.
 */
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../../src/core/engine/backend.ts';
import { createSqlTool } from '../../../src/core/tools/sql.ts';
import { tableNameFor } from '../../../src/core/tools/sql-tables.ts';
import { FIT_PREDICT } from '../../../src/core/domains/data/fit.ts';
import { formatObservation, type Sandbox } from '../../../src/core/tools/sandbox.ts';
import { Workspace } from '../../../src/core/tools/workspace.ts';

let sql: Sandbox;
beforeAll(async () => {
  await initBackend({ force: 'cpu' });
  sql = createSqlTool({ functions: [FIT_PREDICT] });
});
afterAll(async () => {
  await sql.dispose();
});

const DATA = 'id,x,plan,y\n1,1.5,a,0\n2,,b,1\n3,3.5,a,0\n4,4.0,b,1\n5,5.5,a,1\n6,6.0,b,0\n';

function workspace(): Workspace {
  const ws = new Workspace();
  ws.write('data.csv', DATA, 'task');
  ws.write('test.csv', 'id,x,plan\n7,2.0,a\n8,5.0,b\n', 'task');
  return ws;
}

async function run(ws: Workspace, code: string, owner = 'data_engineer', timeoutMs = 20_000) { // 10x a run alone: a busy machine must not turn a result into a timeout
  const r = await sql.run(code, { workspace: ws, owner, timeoutMs });
  return { ...r, text: formatObservation(r) };
}

describe('SQL tool', () => {
  it('names tables after files', () => {
    expect(tableNameFor('data.csv')).toBe('data');
    expect(tableNameFor('out/x-1.csv')).toBe('out_x_1');
    expect(tableNameFor('2024.csv')).toBe('t_2024');
  });

  it('reads workspace CSVs as tables and saves new tables as files owned by the agent', async () => {
    const ws = workspace();
    const r = await run(ws, `-- clean up; keep semicolons in strings: ';'
      CREATE TABLE train_features AS SELECT id, COALESCE(x, 4.1) AS x, CASE WHEN plan = 'b' THEN 1 ELSE 0 END AS plan_b, y FROM data;
      SELECT count(*) AS n, sum(plan_b) AS b, ';' AS s FROM train_features`);
    expect(r.ok).toBe(true);
    expect(r.text).toBe('```output\nn | b | s\n6 | 3 | ;\n(1 row)\nsaved table train_features -> train_features.csv (6 rows, 4 columns)\n```');
    expect(ws.readText('train_features.csv')).toBe('id,x,plan_b,y\n1,1.5,0,0\n2,4.1,1,1\n3,3.5,0,0\n4,4,1,1\n5,5.5,0,1\n6,6,1,0\n');
    const owners = Object.fromEntries(ws.list().map((f) => [f.path, f.owner]));
    expect(owners).toEqual({ 'data.csv': 'task', 'test.csv': 'task', 'train_features.csv': 'data_engineer' });
    // A later agent reading the table does not become its owner; a dropped table deletes its file.
    await run(ws, 'SELECT * FROM train_features; DROP TABLE train_features', 'modeler');
    expect(ws.has('train_features.csv')).toBe(false);
    expect(ws.readText('data.csv')).toBe(DATA);
  });

  it('fits a model with fit_predict and reports unusable features clearly', async () => {
    const ws = workspace();
    const bad = await run(ws, "SELECT * FROM fit_predict('data', 'test', 'y')", 'modeler', 30_000);
    expect(bad.ok).toBe(false);
    expect(bad.text).toMatch(/^Error: fit_predict in statement 1 .*: column "x" of table data has 1 missing value; fill them first/);
    await run(ws, "CREATE TABLE tr AS SELECT id, COALESCE(x, 4) AS x, y FROM data; CREATE TABLE te AS SELECT id, x FROM test");
    const ok = await run(ws, "CREATE TABLE predictions AS SELECT * FROM fit_predict('tr', 'te', 'y', 'logistic'); SELECT id, prediction FROM predictions ORDER BY id", 'modeler', 30_000); // the fit shares the cores with other test files
    expect(ok.ok).toBe(true);
    expect(ok.text).toMatch(/fit_predict: logistic regression of y on 1 feature \(x\), 6 train rows -> 2 predictions/);
    expect(ok.text).toMatch(/id \| prediction\n7 \| [01]\n8 \| [01]\n\(2 rows\)/);
    expect(ws.list().find((f) => f.path === 'predictions.csv')?.owner).toBe('modeler');
    expect(ws.readText('predictions.csv')!.split('\n')[0]).toBe('id,prediction,probability');
  });

  it('stops a query that never ends, then runs the next one', async () => {
    const ws = workspace();
    const r = await run(ws, 'CREATE TABLE keep AS SELECT 1 AS a; WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t) SELECT count(*) FROM t', 'data_engineer', 800);
    expect(r.ok).toBe(false);
    expect(r.error?.kind).toBe('timeout');
    expect(r.text).toBe('Error: execution exceeded the 800 ms time limit and was stopped.');
    expect(ws.has('keep.csv')).toBe(false); // a killed run changes nothing
    const next = await run(ws, 'SELECT 6 * 7 AS answer');
    expect(next.text).toBe('```output\nanswer\n42\n(1 row)\n```');
  }, 300_000);

  it('shows the first rows of a huge result and says it stopped reading', async () => {
    const ws = workspace();
    const r = await run(ws, 'SELECT range AS i FROM range(50000000)');
    expect(r.ok).toBe(true);
    const lines = r.text.split('\n');
    expect(lines.slice(0, 4)).toEqual(['```output', 'i', '0', '1']);
    expect(lines).toHaveLength(24); // fence, header, 20 rows, note, fence
    expect(lines[22]).toMatch(/^\(first 20 rows shown; stopped reading after \d+ rows: add LIMIT or aggregate\)$/);
    expect(r.text.length).toBeLessThan(600);
    expect((await run(ws, 'SELECT count(*) AS n FROM data')).text).toContain('n\n6\n(1 row)');
  });

  it('refuses files outside the workspace, settings and extensions', async () => {
    const ws = workspace();
    const target = `/tmp/mappa-sql-escape-${process.pid}.csv`;
    const cases: [string, RegExp][] = [
      [`COPY data TO '${target}'`, /^Error: forbidden: COPY is not available in statement 1/],
      [`SELECT * FROM read_csv('/etc/passwd')`, /^Error: forbidden: Permission Error: Cannot access file "\/etc\/passwd"/],
      [`CREATE TABLE x AS SELECT * FROM read_csv('${target}')`, /^Error: forbidden: Permission Error/],
      [`SELECT * FROM 'https://example.com/a.csv'`, /^Error: forbidden: Permission Error/],
      [`ATTACH '/tmp/mappa-escape.db'`, /^Error: forbidden: ATTACH is not available/],
      ['INSTALL httpfs', /^Error: forbidden: INSTALL is not available/],
      ['LOAD httpfs', /^Error: forbidden: LOAD is not available/],
      ['SET enable_external_access = true', /^Error: forbidden: SET is not available/],
      [`SELECT * FROM read_csv('data.csv')`, /^Error: forbidden: Permission Error/],
    ];
    for (const [code, expected] of cases) {
      const r = await run(ws, code);
      expect(r.ok, code).toBe(false);
      expect(r.error?.kind, code).toBe('forbidden');
      expect(r.text, code).toMatch(expected);
      expect(r.text, code).toMatch(/only (workspace tables|files in the workspace)/);
    }
    expect(existsSync(target)).toBe(false);
    expect(ws.list().map((f) => f.path)).toEqual(['data.csv', 'test.csv']);
    expect((await run(ws, 'SELECT max(x) AS m FROM data')).text).toContain('m\n6\n(1 row)');
  });

  it('turns SQL errors into one readable line naming the statement and the tables', async () => {
    const ws = workspace();
    const r = await run(ws, 'SELECT 1; SELECT * FROM nope');
    expect(r.error?.kind).toBe('exception');
    expect(r.text).toMatch(/Error: Catalog Error: Table with name nope does not exist!.*\(statement 2 \(SELECT \* FROM nope\)\)\. Tables: data, test\.$/);
  });
});

describe('SQL tool on a Node worker thread', () => {
  // `mappa train --threads N` runs the data team's evaluation passes on worker threads; DuckDB's Node
  // build crashed there at import (its Web Worker polyfill took the thread for one of its own workers).
  it('starts and answers a query there', async () => {
    const { Worker } = await import('node:worker_threads');
    const { tsWorkerBoot } = await import('../../../src/cli/ts-worker.ts');
    const w = new Worker(tsWorkerBoot(new URL('../../helpers/sql-in-thread.ts', import.meta.url).href), { eval: true });
    try {
      const answer = await new Promise<{ ok: boolean; stdout: string; error: string | null }>((resolve, reject) => {
        w.once('message', resolve);
        w.once('error', reject);
      });
      expect(answer.error).toBeNull();
      expect(answer.ok).toBe(true);
      expect(answer.stdout).toMatch(/42/);
    } finally {
      await w.terminate();
    }
  }, 300_000);
});
