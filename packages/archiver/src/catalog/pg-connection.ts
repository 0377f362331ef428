// A PostgreSQL connection the catalog can call synchronously, as it calls SQLite.
//
// Why synchronous: the catalog's API is synchronous (better-sqlite3), and a harvest, a restore
// or serve call it from some forty modules, inside transactions whose boundaries they set. An
// asynchronous catalog for PostgreSQL alone would have meant a second copy of every caller, or
// a promise per lookup on the SQLite path too (the default, measured at 1M resources). Instead
// the connection lives in a worker thread (pg-worker.ts, node-postgres) and this thread posts
// a query and waits on a shared flag (Atomics.wait) until the answer is on the port: one
// query at a time, in order, as SQLite runs them. A query waits for PostgreSQL as a SQLite
// query waits for the disk.
//
// Bounds: the server ends a statement after `statementTimeoutMs` (statement_timeout), and this
// thread gives up waiting a minute after that (a server or network gone silent): the
// connection is then closed for good and every later call fails at once.
import { MessageChannel, type MessagePort, receiveMessageOnPort, type Worker } from 'node:worker_threads';
import { startWorker } from '../core/start-worker.js';
import type { PgReply, PgRequest } from './pg-worker.js';

/** A statement running longer is ended by the server (statement_timeout). */
export const PG_STATEMENT_TIMEOUT_MS = 10 * 60_000;
/** Beyond the statement timeout, how long this thread still waits for an answer. */
const SILENCE_GRACE_MS = 60_000;

/** A failure PostgreSQL reported (or the connection's): its SQLSTATE when it has one. */
export class PgFailure extends Error {
  constructor(
    message: string,
    readonly sqlState: string | undefined,
    readonly detail: string | undefined,
  ) {
    super(message);
    this.name = 'PgFailure';
  }
}

export interface PgResult {
  rows: Record<string, unknown>[];
  rowCount: number;
}

export interface PgConnectionOptions {
  statementTimeoutMs?: number | undefined;
  /** How the connection names itself to the server (pg_stat_activity). */
  applicationName?: string | undefined;
  /** The schema the catalog's tables are in (default: the database's, usually `public`). */
  schema?: string | undefined;
  /** Beyond the statement timeout, how long to wait for an answer (default SILENCE_GRACE_MS). */
  silenceGraceMs?: number | undefined;
}

export class PgConnection {
  private readonly worker: Worker;
  private readonly port: MessagePort;
  private readonly signal = new Int32Array(new SharedArrayBuffer(4));
  private readonly waitMs: number;
  private broken: PgFailure | undefined;

  constructor(url: string, options: PgConnectionOptions = {}) {
    const statementTimeoutMs = options.statementTimeoutMs ?? PG_STATEMENT_TIMEOUT_MS;
    this.waitMs = statementTimeoutMs + (options.silenceGraceMs ?? SILENCE_GRACE_MS);
    const { port1, port2 } = new MessageChannel();
    this.port = port1;
    this.worker = startWorker(import.meta.url, 'catalog', 'pg-worker', {
      workerData: {
        url,
        flag: this.signal.buffer,
        port: port2,
        statementTimeoutMs,
        applicationName: options.applicationName ?? 'oaibag',
        schema: options.schema,
      },
      transferList: [port2],
    });
    // The worker never holds the process open, and a crash of it is reported by the next call.
    this.worker.unref();
    this.worker.on('error', (error) => {
      this.broken ??= new PgFailure(`the catalog's PostgreSQL thread failed: ${error.message}`, undefined, undefined);
    });
  }

  /** Runs one statement (or, without values, a text of several) and returns its rows. */
  query(text: string, values: readonly unknown[] = []): PgResult {
    const reply = this.call({ kind: 'query', text, values: values.map(toParameter) });
    if (!reply.ok) throw new PgFailure(reply.message, reply.code, reply.detail);
    return { rows: reply.rows, rowCount: reply.rowCount };
  }

  close(): void {
    if (this.broken === undefined) {
      try {
        this.call({ kind: 'close' });
      } catch {
        // closing anyway
      }
    }
    this.broken ??= new PgFailure('the catalog connection is closed', undefined, undefined);
    void this.worker.terminate();
  }

  private call(request: PgRequest): PgReply {
    if (this.broken) throw this.broken;
    Atomics.store(this.signal, 0, 0);
    this.port.postMessage(request);
    const woken = Atomics.wait(this.signal, 0, 0, this.waitMs);
    const received = receiveMessageOnPort(this.port);
    if (received === undefined) {
      this.broken = new PgFailure(
        woken === 'timed-out' ? `PostgreSQL did not answer within ${Math.round(this.waitMs / 1000)} s` : "the catalog's PostgreSQL thread ended",
        undefined,
        undefined,
      );
      void this.worker.terminate();
      throw this.broken;
    }
    return received.message as PgReply;
  }
}

/** SQLite takes booleans as 0/1 and Buffers as blobs; PostgreSQL's text protocol wants the same values. */
function toParameter(value: unknown): unknown {
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (typeof value === 'bigint') return value.toString();
  return value;
}
