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

/** The shared words of the worker and this thread (see call). */
const ANSWERS = 0;
const ENDED = 1;

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
  /** Tests only: the worker wakes this thread once more before each answer, as the late wake of the answer before does under load. */
  extraWakes?: boolean | undefined;
}

export class PgConnection {
  private readonly worker: Worker;
  private readonly port: MessagePort;
  /** [ANSWERS]: answers posted so far; [ENDED]: 1 once the worker ended (pg-worker.ts). */
  private readonly signal = new Int32Array(new SharedArrayBuffer(8));
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

  /**
   * Posts `request` and waits for its answer. The worker posts each answer, then counts it in
   * the shared word and wakes this thread; a wake may also be the late one of the previous
   * answer (the worker was paused between counting and waking), so the port is read again
   * after every wake and the wait goes on until the answer is there, the worker is gone, or the
   * time is up.
   */
  private call(request: PgRequest): PgReply {
    if (this.broken) throw this.broken;
    this.port.postMessage(request);
    const deadline = Date.now() + this.waitMs;
    for (;;) {
      const seen = Atomics.load(this.signal, ANSWERS);
      const received = receiveMessageOnPort(this.port);
      if (received !== undefined) return received.message as PgReply;
      const remaining = deadline - Date.now();
      const ended = Atomics.load(this.signal, ENDED) === 1;
      if (ended || remaining <= 0) {
        this.broken = new PgFailure(
          ended ? "the catalog's PostgreSQL thread ended" : `PostgreSQL did not answer within ${Math.round(this.waitMs / 1000)} s`,
          undefined,
          undefined,
        );
        void this.worker.terminate();
        throw this.broken;
      }
      Atomics.wait(this.signal, ANSWERS, seen, remaining);
    }
  }
}

/** SQLite takes booleans as 0/1 and Buffers as blobs; PostgreSQL's text protocol wants the same values. */
function toParameter(value: unknown): unknown {
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (typeof value === 'bigint') return value.toString();
  return value;
}
