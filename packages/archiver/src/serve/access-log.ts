// Where `oaibag serve` writes its access log (one line per request, Combined Log Format, the
// line made by @oaibag/oai-pmh's logRequest): standard output or a file, never waiting on it.
import { closeSync, createWriteStream, fstatSync, openSync } from 'node:fs';
import { Socket } from 'node:net';
import type { Writable } from 'node:stream';
import { ArchiverError } from '../core/errors.js';

/** Lines waiting to be written are dropped (and counted) past this many bytes. */
export const ACCESS_LOG_MAX_PENDING_BYTES = 1024 * 1024;
/** How long stopping waits for pending lines to be written. */
const CLOSE_WAIT_MS = 2000;

export interface AccessLog {
  /** Writes one line (without its newline); dropped when the log is this far behind or broken. */
  write(line: string): void;
  /** Lines dropped so far. */
  readonly dropped: number;
  /** Writes what is pending and closes the file (standard output stays open). */
  close(): Promise<void>;
}

/**
 * Opens the access log: `-` for standard output, else FILE opened for appending (created when
 * missing, so logrotate's `copytruncate` works; a FILE that cannot be opened is
 * ERR_ARCHIVE_USAGE before anything is served). Writes are asynchronous, never
 * process.stdout's synchronous pipe writes: a reader that stops (a stalled journald, a pipe
 * nobody reads) never stops the server, nor its stopping. What it cannot take yet waits in memory up to
 * ACCESS_LOG_MAX_PENDING_BYTES; lines past that are dropped, and `notice` says how many once
 * the log catches up. A write error is noticed once and ends the log, not the server.
 */
export function openAccessLog(target: string, notice: (line: string) => void): AccessLog {
  const toStdout = target === '-';
  let fd: number;
  if (toStdout) fd = 1;
  else {
    try {
      fd = openSync(target, 'a', 0o640);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? 'error';
      throw new ArchiverError('ERR_ARCHIVE_USAGE', `cannot open the access log ${target} (${code})`, {
        hint: 'give --access-log a file in a folder that exists and may be written, - for standard output, or --no-access-log',
        cause: error,
        path: target,
      });
    }
  }
  const stream = toStdout ? standardOutput() : createWriteStream('', { fd, autoClose: false });
  let dropped = 0;
  let droppedNoticed = 0;
  let broken = false;
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (broken) return;
    broken = true;
    notice(`the access log ${toStdout ? '(standard output)' : target} cannot be written (${error.code ?? error.message}); no more access lines`);
  });
  stream.on('drain', () => {
    if (dropped === droppedNoticed) return;
    notice(`${dropped - droppedNoticed} access log line(s) dropped: the log did not keep up`);
    droppedNoticed = dropped;
  });
  return {
    write(line) {
      if (broken) return;
      if (stream.writableLength > ACCESS_LOG_MAX_PENDING_BYTES) {
        dropped++;
        return;
      }
      stream.write(`${line}\n`);
    },
    get dropped() {
      return dropped;
    },
    close: () =>
      new Promise<void>((resolve) => {
        let closed = false;
        const finish = () => {
          if (closed) return;
          closed = true;
          clearTimeout(timer);
          if (dropped > droppedNoticed) notice(`${dropped - droppedNoticed} access log line(s) dropped: the log did not keep up`);
          if (!toStdout) closeSync(fd);
          resolve();
        };
        // A reader that never reads again must not keep the server from stopping.
        const timer = setTimeout(() => {
          stream.destroy();
          finish();
        }, CLOSE_WAIT_MS);
        if (broken) finish();
        else stream.end(finish);
      }),
  };
}

/**
 * Standard output as a stream that never blocks: a pipe or socket (journald, `| logger`) as a
 * non-blocking socket whose pending writes can be abandoned, a file or terminal as a file
 * stream (those do not stall).
 */
function standardOutput(): Writable {
  const stat = fstatSync(1);
  if (stat.isFIFO() || stat.isSocket()) return new Socket({ fd: 1, readable: false, writable: true });
  return createWriteStream('', { fd: 1, autoClose: false });
}
