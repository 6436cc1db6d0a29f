// Worker-thread side of test/unit/data/sql.test.ts' "in a worker thread" test: starts the SQL tool on a
// Node worker thread (as `mappa train --threads` workers do) and posts what one query printed.
import { isMainThread, parentPort } from 'node:worker_threads';

if (!isMainThread) {
  try {
    const { createSqlTool } = await import('../../src/core/tools/sql.ts');
    const sql = createSqlTool();
    const r = await sql.run('SELECT 6 * 7 AS x', { language: 'sql' } as never);
    await sql.dispose();
    parentPort!.postMessage({ ok: r.ok, stdout: r.stdout, error: r.error?.message ?? null });
  } catch (e) {
    parentPort!.postMessage({ ok: false, stdout: '', error: (e as Error).stack ?? String(e) });
  }
}
