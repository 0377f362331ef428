// Notifications of a failed night: after a harvest attempt that failed (or left failures) and
// after a fixity check that found damage, `--on-failure CMD` runs a command and `--notify URL`
// POSTs the same JSON. A notification never stops what sent it: its own failure is one log line.
import { spawn } from 'node:child_process';

/** What happened, as the command reads it on its standard input and the URL receives it. */
export interface Notice {
  /** `harvest` after an attempt, `verify` after a fixity check (verify, repair). */
  event: 'harvest' | 'verify';
  archive: string;
  /** The source's OAI-PMH base URL (harvest notices). */
  source?: string;
  /** The attempt's status (`failed`, `partial`, `interrupted`…), or `damaged` for a check. */
  outcome: string;
  /** One line: the error and its code, or what the check found. */
  reason?: string;
  /** The attempt's counts (records, added, …, failed, bytes, requests), when it had any. */
  counts?: Record<string, number>;
  /** Problems a fixity check found. */
  damaged?: number;
  /** When it happened (ISO 8601). */
  at: string;
}

export interface NotifyOptions {
  /** A shell command run with the notice as JSON on its standard input and in OAIBAG_* variables. */
  onFailure?: string | undefined;
  /** An http(s) URL the notice is POSTed to as JSON. */
  notifyUrl?: string | undefined;
  /** How long a command or a POST may take before it is abandoned (default 30 s). */
  timeoutMs?: number;
  log: (line: string) => void;
}

export const DEFAULT_NOTIFY_TIMEOUT_MS = 30_000;
/** Characters of the reason in OAIBAG_REASON (the JSON on the command's input has all of it). */
const ENV_REASON_CHARS = 4096;
/** Bytes of a command's output kept for the log line when it fails. */
const KEPT_OUTPUT = 1024;

/** Sends `notice` every way configured; resolves when each has ended, never rejects. */
export async function sendNotice(notice: Notice, options: NotifyOptions): Promise<void> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_NOTIFY_TIMEOUT_MS;
  const json = JSON.stringify(notice);
  await Promise.all([
    options.onFailure === undefined ? undefined : runCommand(options.onFailure, notice, json, timeoutMs, options.log),
    options.notifyUrl === undefined ? undefined : postNotice(options.notifyUrl, json, timeoutMs, options.log),
  ]);
}

function runCommand(command: string, notice: Notice, json: string, timeoutMs: number, log: (line: string) => void): Promise<void> {
  return new Promise((resolve) => {
    const child = spawn('/bin/sh', ['-c', command], {
      stdio: ['pipe', 'ignore', 'pipe'],
      // Its own process group, so that a timeout ends the command and whatever it started.
      detached: true,
      env: {
        ...process.env,
        OAIBAG_EVENT: notice.event,
        OAIBAG_ARCHIVE: notice.archive,
        OAIBAG_SOURCE: notice.source ?? '',
        OAIBAG_OUTCOME: notice.outcome,
        // The environment has a size limit (E2BIG past it): the whole reason is in the JSON.
        OAIBAG_REASON: (notice.reason ?? '').slice(0, ENV_REASON_CHARS),
      },
    });
    let output = '';
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      output = (output + chunk).slice(-KEPT_OUTPUT);
    });
    child.stdin?.on('error', () => undefined); // a command that does not read its input
    child.stdin?.end(json);
    const timer = setTimeout(() => {
      log(`--on-failure: the command took longer than ${timeoutMs / 1000} s; stopped`);
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }, timeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      log(`--on-failure: cannot run the command: ${error.message}`);
      resolve();
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code !== 0 && signal !== 'SIGKILL') {
        const said = output.trim().replace(/\s+/g, ' ');
        log(`--on-failure: the command exited with ${code ?? signal}${said ? `: ${said}` : ''}`);
      }
      resolve();
    });
  });
}

async function postNotice(url: string, json: string, timeoutMs: number, log: (line: string) => void): Promise<void> {
  try {
    // Loaded when a notice is sent: undici's index (fetch, WebSocket, Node's own copy of undici
    // and its WebAssembly parser) cost every harvest ~0.3 s of CPU at start when imported above.
    const { request } = await import('undici');
    const response = await request(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: json,
      signal: AbortSignal.timeout(timeoutMs),
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    });
    // The answer is not needed; reading it (at most what one chunk brings) frees the connection.
    await response.body.dump({ limit: 64 * 1024 }).catch(() => undefined);
    if (response.statusCode < 200 || response.statusCode > 299) log(`--notify: ${url} answered HTTP ${response.statusCode}`);
  } catch (error) {
    log(`--notify: cannot POST to ${url}: ${(error as Error).message}`);
  }
}
