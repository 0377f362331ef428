import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * Logs one line per request when the response ends, in the Combined Log Format that web
 * log tools read, followed by the duration in milliseconds: the access log of both servers
 * (`oaibag-repository`, `oaibag serve`). What the client chose (method, target, Referer,
 * User-Agent) is cut at 2,000 characters and its control characters, quotes and backslashes
 * are escaped, so a request can neither forge a line nor a field. The byte count is what went over
 * the socket for this response (headers included, after compression), so requests and
 * bytes can be counted per client from the log alone (bench/ does).
 */
export function logRequest(req: IncomingMessage, res: ServerResponse, user: () => string | null, log: (line: string) => void): void {
  const started = process.hrtime.bigint();
  const socket = req.socket;
  const bytesBefore = socket.bytesWritten;
  const remote = socket.remoteAddress ?? '-'; // gone once the socket is destroyed
  let done = false;
  const write = () => {
    if (done) return;
    done = true;
    const bytes = socket.bytesWritten - bytesBefore;
    const milliseconds = Number((process.hrtime.bigint() - started) / 1_000_000n);
    const status = res.writableFinished ? res.statusCode : `${res.statusCode}!`; // ! = cut off
    log(
      `${remote} - ${user() ?? '-'} [${clfDate(new Date())}] ` +
        `"${clean(req.method ?? '-')} ${clean(req.url ?? '-')} HTTP/${req.httpVersion}" ${status} ${bytes} ` +
        `"${clean(header(req, 'referer'))}" "${clean(header(req, 'user-agent'))}" ${milliseconds}ms`,
    );
  };
  res.on('finish', write);
  res.on('close', write);
}

function header(req: IncomingMessage, name: string): string {
  const value = req.headers[name];
  return typeof value === 'string' ? value : '-';
}

/** Keeps a log line one line, whatever a client puts into its request. */
function clean(value: string): string {
  const short = value.length > 2000 ? `${value.slice(0, 2000)}…` : value;
  return short.replace(/[\x00-\x1f\x7f"\\]/g, (char) => `\\x${char.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** `22/Nov/2026:04:00:00 +0000`, the Common Log Format's date. */
export function clfDate(date: Date): string {
  const pad = (value: number) => String(value).padStart(2, '0');
  return (
    `${pad(date.getUTCDate())}/${MONTHS[date.getUTCMonth()]}/${date.getUTCFullYear()}:` +
    `${pad(date.getUTCHours())}:${pad(date.getUTCMinutes())}:${pad(date.getUTCSeconds())} +0000`
  );
}
