// The worker thread behind pg-connection.ts: one PostgreSQL connection (node-postgres) that
// runs the queries the catalog's thread posts, one at a time, and answers each on the port
// before waking the waiting thread through the shared flag. Nothing here knows SQL beyond
// passing it on.
import { type MessagePort, workerData } from 'node:worker_threads';
import pg from 'pg';

export interface PgRequest {
  kind: 'query' | 'close';
  text?: string;
  values?: unknown[];
}

export type PgReply =
  | { ok: true; rows: Record<string, unknown>[]; rowCount: number }
  | { ok: false; message: string; code: string | undefined; detail: string | undefined; position: string | undefined };

interface PgWorkerData {
  url: string;
  flag: SharedArrayBuffer;
  port: MessagePort;
  statementTimeoutMs: number;
  applicationName: string;
  schema: string | undefined;
  extraWakes: boolean;
}

const { url, flag, port, statementTimeoutMs, applicationName, schema, extraWakes } = workerData as PgWorkerData;
const signal = new Int32Array(flag);

// BIGINT (COUNT, ids) and NUMERIC (SUM) as numbers, as SQLite gives them: every integer the
// catalog keeps is far below 2^53 (byte counts of an archive included).
// JSON as its text, as SQLite's json functions give it.
const INT8 = 20;
const NUMERIC = 1700;
const JSON_TYPES = new Set([114, 3802]);
// Booleans (`x IS NULL AS gone`) as 1 and 0, as SQLite gives them.
const BOOL = 16;
const types = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === INT8 || oid === NUMERIC) return (value: string) => Number(value);
    if (JSON_TYPES.has(oid)) return (value: string) => value;
    if (oid === BOOL) return (value: string) => (value === 't' ? 1 : 0);
    return pg.types.getTypeParser(oid, format);
  },
};

const client = new pg.Client({
  connectionString: url,
  types,
  application_name: applicationName,
  statement_timeout: statementTimeoutMs,
  // A schema of the catalog's own (reindex builds in one): its tables, then pg_catalog's.
  ...(schema === undefined ? {} : { options: `-c search_path=${schema}` }),
});
let connected: Promise<unknown> | undefined;
// A connection lost between queries: the next query fails and says why.
let lost: Error | undefined;
client.on('error', (error) => {
  lost = error;
});

// The shared words (pg-connection.ts): [0] counts the answers posted, [1] says the thread ended.
const ANSWERS = 0;
const ENDED = 1;

/** Posts the answer first, then counts it and wakes the waiting thread: a counted answer is on the port. */
function answer(reply: PgReply): void {
  if (extraWakes) {
    Atomics.notify(signal, ANSWERS);
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
  }
  port.postMessage(reply);
  Atomics.add(signal, ANSWERS, 1);
  Atomics.notify(signal, ANSWERS);
}

// However this thread ends, the waiting thread learns it at once instead of at its deadline.
process.on('exit', () => {
  Atomics.store(signal, ENDED, 1);
  Atomics.notify(signal, ANSWERS);
});

port.on('message', async (request: PgRequest) => {
  try {
    if (request.kind === 'close') {
      await client.end().catch(() => undefined);
      answer({ ok: true, rows: [], rowCount: 0 });
      port.close();
      return;
    }
    if (lost) throw lost;
    connected ??= client.connect();
    await connected;
    // Without values the simple protocol runs: a text of several statements (the schema) is allowed.
    const result = await (request.values?.length ? client.query({ text: request.text!, values: request.values }) : client.query(request.text!));
    // A multi-statement text (migrations) answers an array of results.
    const last = Array.isArray(result) ? result.at(-1) : result;
    answer({ ok: true, rows: last?.rows ?? [], rowCount: last?.rowCount ?? 0 });
  } catch (error) {
    const failure = error as { message?: string; code?: string; detail?: string; position?: string };
    answer({ ok: false, message: failure.message ?? String(error), code: failure.code, detail: failure.detail, position: failure.position });
  }
});
