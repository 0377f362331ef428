// `oaibag serve` as a command: it prints where it answers, answers Identify, stops cleanly on
// SIGTERM, and refuses what it cannot serve with one coded line.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { type AddressInfo, connect, createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { harvest } from '../packages/archiver/src/index.ts';
import { createRepository, type Repository } from '../packages/repository/src/index.ts';
import { validateArchiveResponse } from './archive-schemas.ts';
import { servingAt } from './oaibag-process.ts';

const BIN = new URL('../packages/archiver/dist/cli.js', import.meta.url).pathname;

let work: string;
let archive: string;
let repository: Repository;

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'oaibag-serve-command-'));
  mkdirSync(join(work, 'site'));
  writeFileSync(join(work, 'site', 'a.txt'), 'a');
  repository = await createRepository({ root: join(work, 'site'), index: join(work, 'index.sqlite'), watch: false, rescanSeconds: 0 });
  await repository.listen(0, '127.0.0.1');
  archive = join(work, 'archive');
  await harvest({ baseUrl: `${repository.baseUrl}/oai`, archiveDir: archive });
});

after(async () => {
  await repository?.close();
  rmSync(work, { recursive: true, force: true });
});

test('it says where it answers, answers Identify with its name, and stops on SIGTERM with status 0', async () => {
  const child = spawn(process.execPath, [BIN, 'serve', '--archive', archive, '--port', '0', '--name', 'my archive', '--admin-email', 'me@example.org'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.setEncoding('utf8');
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr.on('data', (chunk: string) => {
      stderr += chunk;
      const match = / at (http:\/\/\S+\/oai) /.exec(stderr);
      if (match) resolve(match[1]!);
    });
    child.on('exit', () => reject(new Error(`exited early: ${stderr}`)));
  });
  const identify = await (await fetch(`${url}?verb=Identify`)).text();
  assert.match(identify, /<repositoryName>my archive<\/repositoryName>/);
  assert.match(identify, /<adminEmail>me@example.org<\/adminEmail>/);
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  child.kill('SIGTERM');
  assert.equal(await exited, 0);
  assert.match(stderr, /oaibag serve: stopped/);
});

test('with the defaults Identify is valid against the OAI-PMH schema (its adminEmail too); an adminEmail it would refuse is exit 2, one coded line', async () => {
  const child = spawn(process.execPath, [BIN, 'serve', '--archive', archive, '--port', '0'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8');
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr.on('data', (chunk: string) => {
      stderr += chunk;
      const match = / at (http:\/\/\S+\/oai) /.exec(stderr);
      if (match) resolve(match[1]!);
    });
    child.on('exit', () => reject(new Error(`exited early: ${stderr}`)));
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  try {
    const identify = await (await fetch(`${url}?verb=Identify`)).text();
    const check = validateArchiveResponse(identify, 'Identify');
    assert.ok(check.ok, check.output);
    assert.match(identify, /<adminEmail>nobody@oaibag\.invalid<\/adminEmail>/);
  } finally {
    child.kill('SIGTERM');
  }
  assert.equal(await exited, 0);
  for (const bad of ['nobody@localhost', 'me at example.org']) {
    const refused = spawnSync(process.execPath, [BIN, 'serve', '--archive', archive, '--port', '0', '--admin-email', 'ok@example.org', '--admin-email', bad], {
      encoding: 'utf8',
    });
    assert.equal(refused.status, 2, refused.stderr);
    assert.match(refused.stderr, /^oaibag: adminEmail ".*" is not one the OAI-PMH schema accepts \[ERR_ARCHIVE_USAGE\]/);
    assert.equal(refused.stderr.trim().split('\n').length, 1);
  }
});

test('no archive there: exit 4 (EXIT_ARCHIVE), one coded line; a bad option: exit 2', () => {
  const missing = spawnSync(process.execPath, [BIN, 'serve', '--archive', join(work, 'nothing'), '--port', '0'], { encoding: 'utf8' });
  assert.equal(missing.status, 4, missing.stderr);
  assert.match(missing.stderr, /^oaibag: .* \[ERR_ARCHIVE_CATALOG\]/);
  assert.equal(missing.stderr.trim().split('\n').length, 1);
  const bad = spawnSync(process.execPath, [BIN, 'serve', '--archive', archive, '--by-value-max', 'lots'], { encoding: 'utf8' });
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /expected a size in bytes/);
});

test('serve and oaibag-repository take the same page sizes and ports and refuse the rest in the same words, exit 2', () => {
  const repositoryBin = new URL('../packages/repository/bin/oaibag-repository.js', import.meta.url).pathname;
  const refusal = (stderr: string) => stderr.split('\n')[0]!.replace(/^error: option '(--[a-z-]+) <[A-Z]+>'/, '$1');
  for (const [option, value] of [
    ['--page-records', '0'],
    ['--page-identifiers', '0'],
    ['--page-bytes', '0'],
    ['--list-count-limit', '0'],
    ['--page-records', '1.5'],
    ['--port', '65536'],
  ]) {
    const served = spawnSync(process.execPath, [BIN, 'serve', '--archive', archive, option!, value!], { encoding: 'utf8' });
    const site = spawnSync(process.execPath, [repositoryBin, '--root', join(work, 'site'), '--index', join(work, 'refused.sqlite'), option!, value!], {
      encoding: 'utf8',
      env: { ...process.env, XDG_STATE_HOME: join(work, 'state') },
    });
    assert.equal(served.status, 2, `serve ${option} ${value}: ${served.stderr}`);
    assert.equal(site.status, 2, `oaibag-repository ${option} ${value}: ${site.stderr}`);
    assert.match(refusal(served.stderr), new RegExp(`^${option} argument '${value!.replace('.', '\\.')}' is invalid\\. expected `));
    assert.equal(refusal(site.stderr), refusal(served.stderr), `${option} ${value}`);
  }
});

test('a port in use is a usage error as docs/serve.md says: exit 2, one coded line naming the address, and the archive is not blamed', async () => {
  const holder = createNetServer();
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
  const port = (holder.address() as AddressInfo).port;
  try {
    const refused = await run(['serve', '--archive', archive, '--port', String(port)]);
    assert.equal(refused.status, 2, refused.stderr);
    assert.equal(refused.stderr.trim().split('\n').length, 1, refused.stderr);
    assert.match(
      refused.stderr,
      new RegExp(`^oaibag: cannot listen on 127\\.0\\.0\\.1:${port} \\(EADDRINUSE\\) \\[ERR_ARCHIVE_USAGE\\] \\(hint: choose another --port or --host\\)`),
    );
  } finally {
    await new Promise((resolve) => holder.close(resolve));
  }
  const doc = readFileSync(new URL('../docs/serve.md', import.meta.url), 'utf8');
  assert.match(doc, /\*\*Exit 2\*\* \(usage\)[^*]*the port in use \(`EADDRINUSE`\)/, 'docs/serve.md gives the same exit code');
});

/** Runs the command without blocking this process's event loop. */
function run(args: string[]): Promise<{ status: number | null; stderr: string }> {
  const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stderr }));
  });
}

test("docs/serve.md's path table names the Memento routes the server answers", async () => {
  const doc = readFileSync(new URL('../docs/serve.md', import.meta.url), 'utf8');
  const table = doc.split('\n').filter((line) => line.startsWith('| `/'));
  for (const path of ['/oai', '/files/', '/ore/', '/sparql', '/timegate/', '/timemap/link/', '/memento/']) {
    assert.ok(
      table.some((row) => row.includes(`\`${path}`)),
      `${path} is not in the table`,
    );
  }
});

/** Starts `oaibag serve` on a free port; resolves once it says where it answers. */
async function startServe(args: string[], stdout: 'pipe' | 'ignore' = 'pipe') {
  const child = spawn(process.execPath, [BIN, 'serve', '--archive', archive, '--port', '0', ...args], { stdio: ['ignore', stdout, 'pipe'] });
  const { base, stderr } = await servingAt(child);
  const stop = async () => {
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    return { status: await exited, stderr: stderr() };
  };
  return { child, base, stop };
}

/** A request written byte for byte, as a hostile client would. */
function rawRequest(base: string, text: string): Promise<string> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.end(text));
    let answer = '';
    socket.setEncoding('latin1').on('data', (chunk: string) => (answer += chunk));
    socket.on('close', () => resolve(answer));
    socket.on('error', reject);
  });
}

const ACCESS_LINE = /^127\.0\.0\.1 - (\S+) \[\d\d\/[A-Z][a-z]{2}\/\d{4}:\d\d:\d\d:\d\d \+0000\] "([^"]*)" (\d{3}) (\d+) "([^"]*)" "([^"]*)" (\d+)ms$/;

test('an access log line per request on standard output by default: client, time, request, status, bytes, duration; a client forges neither a line nor a field, and a long path is cut', async () => {
  const serve = await startServe([]);
  let stdout = '';
  serve.child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  const identify = await fetch(`${serve.base}/oai?verb=Identify`);
  const identifyBytes = (await identify.arrayBuffer()).byteLength;
  const forged = await rawRequest(serve.base, 'GET /files/a"b\\c HTTP/1.1\r\nHost: x\r\nUser-Agent: evil" 200 1 "-" "x\tforged\r\nConnection: close\r\n\r\n');
  assert.match(forged, /^HTTP\/1\.1 404 /);
  await (await fetch(`${serve.base}/${'a'.repeat(10_000)}`)).arrayBuffer();
  const { status } = await serve.stop();
  assert.equal(status, 0);

  const lines = stdout.split('\n').filter(Boolean);
  assert.equal(lines.length, 3, stdout);
  const fields = lines.map((line) => ACCESS_LINE.exec(line));
  assert.ok(
    fields.every((match) => match !== null),
    stdout,
  );
  const [first, second, third] = fields as [RegExpExecArray, RegExpExecArray, RegExpExecArray];
  assert.equal(first[2], 'GET /oai?verb=Identify HTTP/1.1');
  assert.equal(first[3], '200');
  assert.ok(Number(first[4]) > identifyBytes, 'the bytes that went over the socket, headers included');
  assert.equal(second[2], 'GET /files/a\\x22b\\x5cc HTTP/1.1');
  assert.equal(second[3], '404');
  assert.equal(second[6], 'evil\\x22 200 1 \\x22-\\x22 \\x22x\\x09forged');
  assert.equal(third[3], '404');
  assert.ok(lines[2]!.length < 2_300, `a 10,000-character path makes a ${lines[2]!.length}-character line`);
});

test('--access-log FILE appends to FILE, --no-access-log writes none, and a FILE that cannot be opened is exit 2, one coded line', async () => {
  const file = join(work, 'access.log');
  writeFileSync(file, 'an earlier line\n');
  const toFile = await startServe(['--access-log', file]);
  let stdout = '';
  toFile.child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  await (await fetch(`${toFile.base}/oai?verb=Identify`)).arrayBuffer();
  assert.equal((await toFile.stop()).status, 0);
  const logged = readFileSync(file, 'utf8').split('\n').filter(Boolean);
  assert.equal(logged[0], 'an earlier line');
  assert.equal(logged.length, 2);
  assert.match(logged[1]!, ACCESS_LINE);
  assert.equal(stdout, '');

  const none = await startServe(['--no-access-log']);
  let noneOut = '';
  none.child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (noneOut += chunk));
  await (await fetch(`${none.base}/oai?verb=Identify`)).arrayBuffer();
  assert.equal((await none.stop()).status, 0);
  assert.equal(noneOut, '');

  const refused = await run(['serve', '--archive', archive, '--port', '0', '--access-log', join(work, 'no-such-folder', 'access.log')]);
  assert.equal(refused.status, 2, refused.stderr);
  assert.equal(refused.stderr.trim().split('\n').length, 1, refused.stderr);
  assert.match(refused.stderr, /^oaibag: cannot open the access log .*no-such-folder\/access\.log \(ENOENT\) \[ERR_ARCHIVE_USAGE\]/);
});

test('an access log nobody reads neither stops the server nor its stopping, nor grows without bound: lines past 1 MiB pending are dropped and counted', async () => {
  const serve = await startServe([]); // stdout is a pipe this test never reads
  const long = 'x'.repeat(1_900);
  const started = Date.now();
  for (let i = 0; i < 1_500; i++) await (await fetch(`${serve.base}/${long}${i}`)).arrayBuffer();
  assert.ok(Date.now() - started < 30_000, 'the requests were answered');
  const stopping = Date.now();
  const { status, stderr } = await serve.stop();
  assert.equal(status, 0);
  assert.ok(Date.now() - stopping < 10_000, 'it stopped although its log was never read');
  const dropped = Number(/oaibag serve: (\d+) access log line\(s\) dropped: the log did not keep up/.exec(stderr)?.[1]);
  assert.ok(dropped > 0 && dropped < 1_500, stderr);
});

test('SIGTERM while serve starts (its catalog opened, its warm-up pages served) stops it with status 0 and no error', async () => {
  // The access log is opened right after serve listens for a stop: once the file exists, a
  // SIGTERM is serve's to handle, whichever step of its start it reaches.
  for (let run = 0; run < 3; run++) {
    const accessLog = join(work, `starting-${run}.log`);
    const child = spawn(process.execPath, [BIN, 'serve', '--archive', archive, '--port', '0', '--access-log', accessLog], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    while (!existsSync(accessLog)) await new Promise((resolve) => setTimeout(resolve, 1));
    child.kill('SIGTERM');
    assert.equal(await exited, 0, stderr);
    assert.match(stderr, /oaibag serve: stopped\n$/);
    assert.doesNotMatch(stderr, /error|ERR_/);
  }
});
