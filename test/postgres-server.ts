// A PostgreSQL server of a test's own: Debian's `postgresql-15` server binaries (on the machine
// image; .ci/run installs the package when missing), a scratch cluster made by initdb in a
// short temporary folder, trust authentication, listening on 127.0.0.1 only at a free port and
// on a Unix socket in that folder. It runs as the user `postgres` when the tests run as root
// (the server refuses root). Stopped by PID (SIGINT: a fast shutdown), and its folder removed.
// Where the binaries are missing, the tests that need them are skipped with POSTGRES_SKIP.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './free-port.ts';

const run = promisify(execFile);

/** The newest installed server's bin folder (Debian keeps each major under /usr/lib/postgresql). */
function serverBin(): string | undefined {
  try {
    const majors = readdirSync('/usr/lib/postgresql')
      .filter((name) => /^\d+$/.test(name) && existsSync(`/usr/lib/postgresql/${name}/bin/postgres`))
      .sort((a, b) => Number(b) - Number(a));
    return majors[0] === undefined ? undefined : `/usr/lib/postgresql/${majors[0]}/bin`;
  } catch {
    return undefined;
  }
}

const BIN = serverBin();

/** Why the tests that need PostgreSQL are skipped here, or false when they run. */
export const POSTGRES_SKIP: string | false =
  BIN === undefined
    ? "no PostgreSQL server in /usr/lib/postgresql (install Debian's postgresql-15, as .ci/run does): the PostgreSQL catalog is not tested"
    : false;

export interface Postgres {
  /** `postgres://postgres@127.0.0.1:PORT/` (no database: add one made by createDatabase). */
  origin: string;
  /** Creates an empty database; resolves to its URL. */
  createDatabase(name: string): Promise<string>;
  /** Runs SQL in `database` through psql as the superuser (checks by hand: counts, plans). */
  psql(database: string, sql: string): Promise<string>;
  pid(): number | undefined;
  stop(): Promise<void>;
}

export async function startPostgres(): Promise<Postgres> {
  if (BIN === undefined) throw new Error(POSTGRES_SKIP as string);
  const folder = mkdtempSync('/tmp/pg-');
  const data = join(folder, 'data');
  const port = await freePort();
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const { stdout } = await run('id', ['-u', 'postgres']);
    const { stdout: group } = await run('id', ['-g', 'postgres']);
    chownSync(folder, Number(stdout.trim()), Number(group.trim()));
  }
  // As `postgres` when we are root: initdb and the server refuse to run as root.
  const command = (program: string, args: string[]): [string, string[]] => (asRoot ? ['runuser', ['-u', 'postgres', '--', program, ...args]] : [program, args]);
  await run(...command(join(BIN, 'initdb'), ['-D', data, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--locale=C', '--no-sync']), { timeout: 120_000 });
  const server: ChildProcess = spawn(
    ...command(join(BIN, 'postgres'), ['-D', data, '-p', String(port), '-k', folder, '-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=100']),
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  server.stderr!.setEncoding('utf8').on('data', (text: string) => {
    stderr = (stderr + text).slice(-3000);
  });
  const origin = `postgres://postgres@127.0.0.1:${port}/`;
  const psql = async (database: string, sql: string): Promise<string> =>
    (
      await run(
        join(BIN, 'psql'),
        ['-X', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', '-d', database, '-c', sql],
        { timeout: 60_000 },
      )
    ).stdout;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (server.exitCode !== null) throw new Error(`postgres ended (${server.exitCode}): ${stderr}`);
    try {
      await psql('postgres', 'SELECT 1');
      break;
    } catch {
      if (Date.now() > deadline) throw new Error(`postgres did not answer within 60 s: ${stderr}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  // The postmaster's own PID (runuser may stand between us and it).
  const postmaster = (): number | undefined => {
    try {
      return Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
    } catch {
      return undefined;
    }
  };
  // A test process that ends without stopping the server (a failure in a hook, a timeout)
  // takes it along rather than leave it running.
  const started = postmaster();
  const orphan = () => {
    if (started !== undefined && server.exitCode === null) process.kill(started, 'SIGQUIT');
  };
  process.once('exit', orphan);
  return {
    origin,
    createDatabase: async (name: string) => {
      await psql('postgres', `CREATE DATABASE "${name}" TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C'`);
      return `${origin}${name}`;
    },
    psql,
    pid: postmaster,
    stop: async () => {
      process.off('exit', orphan);
      const pid = postmaster();
      if (pid !== undefined && server.exitCode === null) {
        const ended = new Promise((resolve) => server.once('exit', resolve));
        process.kill(pid, 'SIGINT');
        const timer = setTimeout(() => process.kill(pid, 'SIGKILL'), 20_000);
        await ended;
        clearTimeout(timer);
      }
      rmSync(folder, { recursive: true, force: true });
    },
  };
}
