// A Virtuoso Open Source 7 instance of a test's own (Debian's `virtuoso-opensource-7`, which
// .ci/run installs when absent; its Debian service stays off): its database in a temporary
// folder, its SQL and HTTP ports free loopback ports, listening on 127.0.0.1 only. SPARQL 1.1
// queries at /sparql; SPARQL Update at /sparql-auth and the Graph Store HTTP Protocol at
// /sparql-graph-crud-auth, both with HTTP Digest, as an account `oaibag`
// made as docs/linked-data.md says (SPARQL_UPDATE granted through isql-vt; dba's default
// password replaced). Where `virtuoso-t` is missing the tests that need it are skipped with
// VIRTUOSO_SKIP's message.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './free-port.ts';

const VIRTUOSO = '/usr/bin/virtuoso-t';

/** Why the tests that need Virtuoso are skipped here, or false when they run. */
export const VIRTUOSO_SKIP: string | false = existsSync(VIRTUOSO)
  ? false
  : `${VIRTUOSO} is missing (install Debian's virtuoso-opensource-7, as .ci/run does): the remote SPARQL store is not tested`;

/** How long a start may take (measured: about 7 s on an idle machine, 15 s on a loaded one). */
const START_TIMEOUT_MS = 120_000;

export interface Virtuoso {
  /** `http://127.0.0.1:PORT`. */
  origin: string;
  queryUrl: string;
  updateUrl: string;
  /** The Graph Store HTTP Protocol endpoint (`--sparql-store-data`). */
  dataUrl: string;
  user: string;
  password: string;
  /** A file whose first line is the password (for `--sparql-store-password-file`). */
  passwordFile: string;
  /** Runs a SPARQL Update as dba through isql-vt (beside serve's own account and client). */
  update(update: string): void;
  /** The running server's process id (benchmarks read its CPU time). */
  pid(): number | undefined;
  /** Stops the server (its database stays: `start` again serves the same data). */
  stop(): Promise<void>;
  /** Starts it again on the same ports and database. */
  start(): Promise<void>;
  /** Stops it and removes its folder. */
  remove(): Promise<void>;
}

/** Virtuoso's buffers of 8 KB pages (its ini's table: 170,000 and 130,000 for 2 GB free). */
export interface VirtuosoMemory {
  numberOfBuffers: number;
  maxDirtyBuffers: number;
}

export async function startVirtuoso(memory: VirtuosoMemory = { numberOfBuffers: 10_000, maxDirtyBuffers: 6_000 }): Promise<Virtuoso> {
  const folder = mkdtempSync(join(tmpdir(), 'oaibag-virtuoso-'));
  const db = join(folder, 'db');
  mkdirSync(db);
  const sqlPort = await freePort();
  const httpPort = await freePort();
  const password = `test-${process.pid}-${Date.now().toString(36)}`;
  const ini = join(folder, 'virtuoso.ini');
  writeFileSync(
    ini,
    `[Database]
DatabaseFile = ${db}/virtuoso.db
ErrorLogFile = ${db}/virtuoso.log
LockFile = ${db}/virtuoso.lck
TransactionFile = ${db}/virtuoso.trx
xa_persistent_file = ${db}/virtuoso.pxa
[TempDatabase]
DatabaseFile = ${db}/virtuoso-temp.db
TransactionFile = ${db}/virtuoso-temp.trx
[Parameters]
ServerPort = 127.0.0.1:${sqlPort}
DisableUnixSocket = 1
NumberOfBuffers = ${memory.numberOfBuffers}
MaxDirtyBuffers = ${memory.maxDirtyBuffers}
DirsAllowed = ${folder}
[HTTPServer]
ServerPort = 127.0.0.1:${httpPort}
ServerRoot = ${folder}
ServerThreads = 4
MaxClientConnections = 8
[SPARQL]
ResultSetMaxRows = 1000000
MaxQueryExecutionTime = 120
`,
  );
  const passwordFile = join(folder, 'password');
  writeFileSync(passwordFile, `${password}\n`, { mode: 0o600 });
  const origin = `http://127.0.0.1:${httpPort}`;
  let child: ChildProcess | undefined;

  const start = async (): Promise<void> => {
    const started = spawn(VIRTUOSO, ['+foreground', '+configfile', ini], { cwd: folder, stdio: ['ignore', 'ignore', 'pipe'] });
    child = started;
    let stderr = '';
    started.stderr!.setEncoding('utf8').on('data', (text: string) => {
      stderr = (stderr + text).slice(-4000);
    });
    const deadline = Date.now() + START_TIMEOUT_MS;
    for (;;) {
      if (started.exitCode !== null) throw new Error(`virtuoso-t ended (${started.exitCode}): ${stderr}${readLog(db)}`);
      try {
        const response = await fetch(`${origin}/sparql?query=${encodeURIComponent('ask {}')}`, { signal: AbortSignal.timeout(2000) });
        await response.arrayBuffer();
        if (response.ok) return;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) throw new Error(`virtuoso-t did not answer within ${START_TIMEOUT_MS / 1000} s: ${stderr}${readLog(db)}`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  };

  const stop = async (): Promise<void> => {
    const running = child;
    child = undefined;
    if (!running || running.exitCode !== null) return;
    const ended = new Promise((resolve) => running.once('exit', resolve));
    // SIGTERM: Virtuoso checkpoints and ends; a second, harder signal if it does not.
    running.kill('SIGTERM');
    const timer = setTimeout(() => running.kill('SIGKILL'), 30_000);
    await ended;
    clearTimeout(timer);
  };

  await start();
  // The account serve writes with, as docs/linked-data.md sets it up; dba's default password goes.
  const statements = [`USER_CREATE('oaibag', '${password}')`, 'GRANT SPARQL_UPDATE TO "oaibag"', `USER_SET_PASSWORD('dba', '${password}-dba')`];
  execFileSync('isql-vt', [`127.0.0.1:${sqlPort}`, 'dba', 'dba', `exec=${statements.join('; ')};`], { stdio: 'ignore', timeout: 60_000 });
  const update = (text: string): void => {
    execFileSync('isql-vt', [`127.0.0.1:${sqlPort}`, 'dba', `${password}-dba`, `exec=SPARQL ${text};`], { stdio: 'ignore', timeout: 60_000 });
  };
  return {
    origin,
    queryUrl: `${origin}/sparql`,
    updateUrl: `${origin}/sparql-auth`,
    dataUrl: `${origin}/sparql-graph-crud-auth`,
    user: 'oaibag',
    password,
    passwordFile,
    update,
    pid: () => child?.pid,
    stop,
    start,
    remove: async () => {
      await stop();
      rmSync(folder, { recursive: true, force: true });
    },
  };
}

function readLog(db: string): string {
  try {
    return `\n${readFileSync(join(db, 'virtuoso.log'), 'utf8').slice(-2000)}`;
  } catch {
    return '';
  }
}
