/**
 * The `oaibag-repository` command as users run it: the built bin (`npx tsc -b` first) in a
 * child process of this same node, never through PATH. Usage errors exit 2 with one line and
 * no stack trace, failures to start exit 1 naming what failed, a served site answers over
 * real HTTP and logs each request, and SIGTERM stops it cleanly.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { verifyPassword } from '../src/access/password-hash.ts';
import { headers, httpRequest, oai, tempDir, writeTree } from './repository-helpers.ts';

const here = dirname(fileURLToPath(import.meta.url));
const BIN = resolve(here, '../bin/oaibag-repository.js');
const BUILT_CLI = resolve(here, '../dist/cli.js');

const OPTIONS = [
  '--root',
  '--base-url',
  '--host',
  '--port',
  '--index',
  '--by-value-max',
  '--page-records',
  '--page-identifiers',
  '--page-bytes',
  '--list-count-limit',
  '--exclude',
  '--run-extensions',
  '--auth',
  '--name',
  '--admin-email',
  '--rescan',
  '--no-watch',
];

const YEAR_2020 = Date.UTC(2020, 0, 1) / 1000;
const HELLO = 'hello from the site\n';

let dir: ReturnType<typeof tempDir>;
let site: string;
/** XDG_STATE_HOME of every run, so a default index never lands in the real home. */
let state: string;
const children = new Set<ChildProcess>();

before(() => {
  assert.ok(existsSync(BUILT_CLI), `${BUILT_CLI} is missing: run \`npx tsc -b\` before this test`);
  dir = tempDir();
  site = join(dir.path, 'site');
  state = join(dir.path, 'state');
  writeTree(site, { 'hello.txt': HELLO, 'docs/page.html': '<p>page</p>' });
  // Old enough to be inside a list's until (one second before the response).
  for (const path of ['hello.txt', 'docs/page.html']) utimesSync(join(site, path), YEAR_2020, YEAR_2020);
});

after(() => {
  for (const child of children) child.kill('SIGKILL');
  dir?.cleanup();
});

interface Finished {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** A started command whose output is collected as it comes. */
interface Running {
  child: ChildProcess;
  output: { stdout: string; stderr: string };
  finished: Promise<Finished>;
  /** Resolves once `check` holds on the output so far; rejects if the command ends first. */
  waitFor(what: string, check: (output: { stdout: string; stderr: string }) => boolean): Promise<void>;
}

function start(args: string[], input?: string): Running {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: dir.path,
    env: { ...process.env, XDG_STATE_HOME: state, NO_COLOR: '1' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  children.add(child);
  const output = { stdout: '', stderr: '' };
  const waiters = new Set<() => void>();
  const changed = () => {
    for (const waiter of [...waiters]) waiter();
  };
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    output.stdout += chunk;
    changed();
  });
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    output.stderr += chunk;
    changed();
  });
  const finished = new Promise<Finished>((resolvePromise, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => {
      children.delete(child);
      changed();
      resolvePromise({ code, signal, ...output });
    });
  });
  child.stdin!.end(input ?? '');
  return {
    child,
    output,
    finished,
    waitFor(what, check) {
      return new Promise((resolvePromise, reject) => {
        const waiter = () => {
          if (check(output)) {
            waiters.delete(waiter);
            resolvePromise();
          } else if (child.exitCode !== null || child.signalCode !== null) {
            waiters.delete(waiter);
            reject(new Error(`the command ended before ${what}:\n${output.stdout}\n${output.stderr}`));
          }
        };
        waiters.add(waiter);
        waiter();
      });
    },
  };
}

function run(args: string[], input?: string): Promise<Finished> {
  return start(args, input).finished;
}

/** A port nobody listens on right now (the kernel's pick, released for the command to take). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolvePromise) => server.listen(0, '127.0.0.1', resolvePromise));
  const { port } = server.address() as { port: number };
  await new Promise((resolvePromise) => server.close(resolvePromise));
  return port;
}

function assertNoStackTrace(text: string): void {
  assert.doesNotMatch(text, /^\s+at /m, `a stack trace was printed:\n${text}`);
  assert.doesNotMatch(text, /node:internal|\.ts:\d+|\.js:\d+:\d+/, `a stack trace was printed:\n${text}`);
}

/** The command's own diagnostic: exactly one line `oaibag-repository: …`, nothing else. */
function assertOneLineDiagnostic(stderr: string): string {
  const lines = stderr.split('\n').filter((line) => line !== '');
  assert.equal(lines.length, 1, `expected one line on stderr, got:\n${stderr}`);
  assert.match(lines[0]!, /^oaibag-repository: /);
  return lines[0]!;
}

describe('help', { concurrency: true }, () => {
  for (const args of [['--help'], ['serve', '--help']]) {
    test(`${args.join(' ')} exits 0 and names every option and the exit codes`, async () => {
      const result = await run(args);
      assert.equal(result.code, 0, result.stderr);
      for (const option of OPTIONS) assert.match(result.stdout, new RegExp(`(^|\\s)${option}\\b`), `${option} is not in the help`);
      assert.match(result.stdout, /exit codes?:[^\n]*\b0\b[^\n]*\b1\b[^\n]*\b2\b/i, 'the exit codes are not in the help');
    });
  }
});

test('--version prints the version of package.json and exits 0', async () => {
  const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
  const result = await run(['--version']);
  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.stdout, `${version}\n`);
});

describe('usage errors exit 2', { concurrency: true }, () => {
  test('without --root: a one-line error naming --root, no stack trace', async () => {
    const result = await run([]);
    assert.equal(result.code, 2);
    assert.match(result.stderr.split('\n')[0]!, /^error: .*--root/);
    assertNoStackTrace(result.stderr);
    assert.equal(result.stdout, '');
  });

  for (const [option, value] of [
    ['--port', 'x'],
    ['--by-value-max', '1Q'],
    ['--page-records', '-3'],
  ]) {
    test(`${option} ${value}: an error naming the option`, async () => {
      const result = await run(['--root', site, option!, value!]);
      assert.equal(result.code, 2, result.stderr);
      assert.match(result.stderr.split('\n')[0]!, new RegExp(`^error: .*${option}.*${value}`));
      assertNoStackTrace(result.stderr);
      assert.equal(result.stdout, '');
    });
  }

  // The same rule and words as `oaibag serve` (test/serve-command.test.ts runs both): a page of
  // nothing is refused while parsing, before any index exists, and a port past 65535 is a usage
  // error rather than a crash with a stack trace.
  for (const [option, value, expected] of [
    ['--page-records', '0', 'expected a whole number of at least 1'],
    ['--page-identifiers', '0', 'expected a whole number of at least 1'],
    ['--page-bytes', '0', 'expected a size of at least 1 byte, like 1048576, 512K, 16M or 1G'],
    ['--list-count-limit', '0', 'expected a whole number of at least 1'],
    ['--port', '65536', 'expected a port number from 0 to 65535'],
  ]) {
    test(`${option} ${value}: refused while parsing, in the words oaibag serve uses`, async () => {
      const index = join(dir.path, `refused${option}.sqlite`);
      const result = await run(['--root', site, '--index', index, '--no-watch', option!, value!]);
      assert.equal(result.code, 2, result.stderr);
      const lines = result.stderr.trimEnd().split('\n');
      assert.equal(lines[0], `error: option '${option} <${option === '--page-bytes' ? 'BYTES' : 'N'}>' argument '${value}' is invalid. ${expected}`);
      assert.equal(lines.length, 2, result.stderr);
      assertNoStackTrace(result.stderr);
      assert.equal(existsSync(index), false, 'the index was created although the option was refused');
    });
  }

  test('a usage error is two lines (the error, where the help is), not the whole help', async () => {
    for (const args of [[], ['--root', site, '--prot', '80'], ['serve', '--root', site, '--by-value-max', '1Q']]) {
      const result = await run(args);
      assert.equal(result.code, 2, result.stderr);
      const lines = result.stderr.trimEnd().split('\n');
      assert.equal(lines.length, 2, result.stderr);
      assert.match(lines[0]!, /^error: /);
      assert.equal(lines[1], '(see `oaibag-repository --help`)');
    }
    const typo = await run(['--root', site, '--prot', '80']);
    assert.match(typo.stderr, /^error: unknown option '--prot' \(Did you mean --port\?\)\n/);
  });

  test('--admin-email nobody: one line with ERR_REPO_OPTIONS', async () => {
    const result = await run(['--root', site, '--index', join(dir.path, 'admin-email.sqlite'), '--admin-email', 'nobody']);
    assert.equal(result.code, 2, result.stderr);
    const line = assertOneLineDiagnostic(result.stderr);
    assert.match(line, /--admin-email "nobody".*\[ERR_REPO_OPTIONS\]/);
    assert.equal(result.stdout, '');
  });

  test('a usage error found after parsing leaves no index behind', async () => {
    const index = join(dir.path, 'not-created.sqlite');
    const result = await run(['--root', site, '--index', index, '--admin-email', 'nobody']);
    assert.equal(result.code, 2, result.stderr);
    assert.equal(existsSync(index), false, 'the index was created although the options were refused');
  });
});

describe('failures to start exit 1', { concurrency: true }, () => {
  test('a root that does not exist: ERR_REPO_ROOT naming it', async () => {
    const root = join(dir.path, 'no-such-site');
    const result = await run(['--root', root]);
    assert.equal(result.code, 1, result.stderr);
    const line = assertOneLineDiagnostic(result.stderr);
    assert.ok(line.includes(root), line);
    assert.match(line, /\[ERR_REPO_ROOT\]/);
  });

  test('an auth file with an error: ERR_REPO_AUTH_FILE naming file:line', async () => {
    const auth = join(dir.path, 'broken-auth.txt');
    writeFileSync(auth, '# who may see what\nprotect /private/ alice\n');
    const result = await run(['--root', site, '--index', join(dir.path, 'auth.sqlite'), '--auth', auth]);
    assert.equal(result.code, 1, result.stderr);
    const line = assertOneLineDiagnostic(result.stderr);
    assert.ok(line.includes(`${auth}:2:`), line);
    assert.match(line, /alice.*\[ERR_REPO_AUTH_FILE\]/);
  });

  test('a port already in use: ERR_REPO_LISTEN', async () => {
    const holder: Server = createServer();
    await new Promise<void>((resolvePromise) => holder.listen(0, '127.0.0.1', resolvePromise));
    try {
      const { port } = holder.address() as { port: number };
      const result = await run(['--root', site, '--index', join(dir.path, 'listen.sqlite'), '--no-watch', '--port', String(port)]);
      assert.equal(result.code, 1, result.stderr);
      const line = assertOneLineDiagnostic(result.stderr);
      assert.match(line, new RegExp(`127\\.0\\.0\\.1:${port}.*EADDRINUSE.*\\[ERR_REPO_LISTEN\\]`));
    } finally {
      await new Promise((resolvePromise) => holder.close(resolvePromise));
    }
  });
});

describe('serving', () => {
  test('serves OAI-PMH and files, logs each request, and stops on SIGTERM with exit 0', { timeout: 60_000 }, async () => {
    const port = await freePort();
    const baseUrl = `http://127.0.0.1:${port}`;
    const server = start(['--root', site, '--index', join(dir.path, 'serve.sqlite'), '--port', String(port), '--base-url', baseUrl]);
    await server.waitFor("the 'serving' line", (output) => /serving /.test(output.stderr));
    assert.ok(server.output.stderr.includes(`${baseUrl}/oai`), server.output.stderr);

    const identify = await oai(`${baseUrl}/oai`, { verb: 'Identify' });
    assert.equal(identify.status, 200);
    assert.match(identify.text, new RegExp(`<baseURL>${baseUrl}/oai</baseURL>`));
    const file = await httpRequest(`${baseUrl}/hello.txt`, { headers: { 'User-Agent': 'cli-test/1.0 (log check)', Referer: 'http://example.org/from' } });
    assert.equal(file.status, 200);
    assert.equal(file.text, HELLO);

    // Combined Log Format, then the duration.
    const logLine = new RegExp(
      String.raw`^127\.0\.0\.1 - - \[\d{2}/[A-Z][a-z]{2}/\d{4}:\d{2}:\d{2}:\d{2} \+0000\] ` +
        String.raw`"GET /hello\.txt HTTP/1\.1" 200 (\d+) "http://example\.org/from" "cli-test/1\.0 \(log check\)" \d+ms$`,
      'm',
    );
    await server.waitFor('the request log line', (output) => logLine.test(output.stdout));
    const bytes = Number(logLine.exec(server.output.stdout)![1]);
    assert.ok(bytes > HELLO.length, `the logged byte count ${bytes} should include headers and body`);
    assert.match(server.output.stdout, /^127\.0\.0\.1 - - \[[^\]]+\] "GET \/oai\?verb=Identify HTTP\/1\.1" 200 \d+ "-" "-" \d+ms$/m);

    server.child.kill('SIGTERM');
    const result = await server.finished;
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stderr, /stopping/);
    assertNoStackTrace(result.stderr);
  });

  test('--base-url with a path: identifiers and routes live below it', { timeout: 60_000 }, async () => {
    const port = await freePort();
    const local = `http://127.0.0.1:${port}`;
    const server = start([
      '--root',
      site,
      '--index',
      join(dir.path, 'base-url.sqlite'),
      '--port',
      String(port),
      '--base-url',
      'https://example.org/site/',
      '--no-watch',
      '--rescan',
      '0',
    ]);
    try {
      await server.waitFor("the 'serving' line", (output) => /serving /.test(output.stderr));

      const identify = await oai(`${local}/site/oai`, { verb: 'Identify' });
      assert.equal(identify.status, 200);
      assert.match(identify.text, /<baseURL>https:\/\/example\.org\/site\/oai<\/baseURL>/);
      const list = await oai(`${local}/site/oai`, { verb: 'ListIdentifiers', metadataPrefix: 'oai_dc' });
      assert.deepEqual(
        headers(list.text)
          .map((header) => header.identifier)
          .sort(),
        ['https://example.org/site/docs/page.html', 'https://example.org/site/hello.txt'],
      );

      const file = await httpRequest(`${local}/site/hello.txt`);
      assert.equal(file.status, 200);
      assert.equal(file.text, HELLO);

      // The last two would reach hello.txt and the endpoint if only the base path's length were cut off.
      for (const path of ['/oai?verb=Identify', '/hello.txt', '/site-hello.txt', '/xxxx/hello.txt', '/xxxx/oai?verb=Identify']) {
        const answer = await httpRequest(`${local}${path}`);
        assert.equal(answer.status, 404, path);
      }
    } finally {
      server.child.kill('SIGTERM');
      const result = await server.finished;
      assert.equal(result.code, 0, result.stderr);
    }
  });
});

describe('hash-password', { concurrency: true }, () => {
  test('prints a $scrypt$ hash of the first line of standard input', async () => {
    const password = 'pass word: é';
    const result = await run(['hash-password'], `${password}\nsecond line is ignored\n`);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /^\$scrypt\$\S+\n$/);
    assert.equal(await verifyPassword(password, result.stdout.trim()), true);
  });

  test('an empty password exits 2 and prints no hash', async () => {
    for (const input of ['\n', '']) {
      const result = await run(['hash-password'], input);
      assert.equal(result.code, 2, JSON.stringify(input));
      assert.equal(result.stdout, '');
      assert.match(assertOneLineDiagnostic(result.stderr), /empty/);
    }
  });
});

test('no test left a default index in the state folder', () => {
  // Every run above passes --index or fails before opening one; a default index here would
  // mean a run wrote where the user did not ask.
  const folder = join(state, 'oaibag-repository');
  assert.deepEqual(existsSync(folder) ? readdirSync(folder) : [], []);
});
