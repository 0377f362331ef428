// A read-only archive (a snapshot, an offsite copy) can be read by every command that only
// reads: a real repository, a real harvest, a copy made read-only, and the built `oaibag` run
// against the copy. We run as root, whom chmod does not stop, so the commands run as root
// without capabilities (setpriv --bounding-set=-all); the copy's bytes and file list are compared before and after each
// command (no catalog.sqlite-wal, -shm or lock file created). The CLI part needs the built
// command (`npx tsc -b && node scripts/bundle-cli.mjs`). A catalog of an older schema on a
// read-only copy: packages/archiver/test/older-catalog.test.ts.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Catalog, formatVerifyReport, harvest, verifyArchive } from '../packages/archiver/src/index.ts';
import { createRepository, type Repository } from '../packages/repository/src/index.ts';
import { readOnlyCopy as copyReadOnly, oaibagAs, RUN_AS, SKIP_CLI, tree } from './read-only-copy.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIN = join(ROOT, 'packages/archiver/bin/oaibag.js');
const YEAR_2000 = Date.UTC(2000, 0, 1) / 1000;
const FAST_RETRY = { retries: 2, baseDelayMs: 10, maxDelayMs: 100 };
const FILES: Record<string, string | Buffer> = {
  'index.html': '<html>home</html>',
  'docs/report.txt': 'a report kept in the archive',
  'images/big.bin': Buffer.alloc(150_000, 9),
};

let work: string;
let repository: Repository;
let endpoint: string;
/** The archive harvested, writable. */
let archive: string;
/** Its read-only copy. */
let copy: string;
/** Where the commands may write (restore --to, export --to), and their TMPDIR. */
let out: string;
let temporary: string;

/** A read-only copy of `from` at a new `<work>/<name>/archive`, in folders anyone may traverse. */
const readOnlyCopy = (from: string, name: string, extra?: (dir: string) => void): string => copyReadOnly(from, join(work, name), extra);

/** `oaibag ARGS` as the user the copy is read-only for, with its own TMPDIR. */
const oaibag = (args: string[], cwd = work) => oaibagAs(args, cwd, temporary);

/** Runs `oaibag ARGS` on the copy and checks that it left the copy as it was and no private copy in TMPDIR. */
async function readingCommand(args: string[], cwd?: string) {
  const before = tree(copy);
  const result = await oaibag(args, cwd);
  assert.deepEqual(tree(copy), before, `oaibag ${args.join(' ')} changed the read-only copy`);
  assert.deepEqual(readdirSync(temporary), [], 'the private copy of the catalog is removed');
  assert.equal(result.status, 0, `oaibag ${args.join(' ')} exited ${result.status}: ${result.stderr}`);
  return result;
}

/** A folder anyone may write into, below `out`. */
function outputFolder(name: string): string {
  const dir = join(out, name);
  mkdirSync(dir);
  chmodSync(dir, 0o777);
  return dir;
}

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'oaibag-read-only-'));
  chmodSync(work, 0o755);
  const site = join(work, 'site');
  for (const [name, content] of Object.entries(FILES)) {
    mkdirSync(join(site, name, '..'), { recursive: true });
    writeFileSync(join(site, name), content);
    utimesSync(join(site, name), YEAR_2000, YEAR_2000);
  }
  repository = await createRepository({ root: site, index: join(work, 'index.sqlite'), watch: false, rescanSeconds: 0, byValueMax: 100_000, pageRecords: 2 });
  endpoint = `${await repository.listen(0, '127.0.0.1')}/oai`;
  archive = join(work, 'archive');
  const summary = await harvest({ baseUrl: endpoint, archiveDir: archive, retry: FAST_RETRY });
  assert.equal(summary.added, Object.keys(FILES).length);
  assert.equal(existsSync(join(archive, 'catalog.sqlite-wal')), false, 'a closed catalog leaves no -wal: the copy is the hard case');
  copy = readOnlyCopy(archive, 'copy');
  out = join(work, 'out');
  mkdirSync(out);
  chmodSync(out, 0o777);
  temporary = outputFolder('tmp');
});

after(async () => {
  await repository?.close();
  if (work) {
    // Read-only folders cannot be emptied: give them back their write bit first.
    spawnSync('chmod', ['-R', 'u+w', work]);
    rmSync(work, { recursive: true, force: true });
  }
});

test('a catalog opened read-only refuses every write in one coded line, and creates nothing beside it', () => {
  const plain = join(work, 'plain-copy');
  cpSync(archive, plain, { recursive: true });
  const before = tree(plain);
  const catalog = Catalog.open(plain, { readOnly: true });
  try {
    assert.equal(catalog.readOnly, true);
    assert.equal(catalog.status().sources[0]?.source.baseUrl, endpoint);
    const refused = (write: () => unknown): void =>
      assert.throws(write, (error: Error & { code?: string }) => {
        assert.equal(error.code, 'ERR_ARCHIVE_CATALOG');
        assert.match(error.message, /^cannot write to the catalog .*catalog\.sqlite: the archive is opened read-only$/);
        return true;
      });
    refused(() => catalog.addEvent({ type: 'fixity check', outcome: 'success' }));
    refused(() => catalog.ensureSource('http://example.org/oai', null));
    refused(() => catalog.transaction(() => 1));
    refused(() => catalog.statement('DELETE FROM events'));
  } finally {
    catalog.close();
  }
  assert.deepEqual(tree(plain), before);
});

test('verify with record: false writes nothing to a writable archive either, and opens its catalog read-only', async () => {
  const plain = join(work, 'no-record');
  cpSync(archive, plain, { recursive: true });
  const before = tree(plain);
  const report = await verifyArchive({ archiveDir: plain, jobs: 1, record: false });
  assert.equal(report.ok, true);
  assert.equal(report.recorded, false);
  assert.equal(report.events, 0);
  assert.ok(report.bags > 0);
  assert.deepEqual(report.notes, [], 'a writable archive is checked under its lock');
  assert.match(formatVerifyReport(report), /; nothing recorded \(--no-record\)\narchive OK\n$/);
  assert.deepEqual(tree(plain), before, 'no event, no verification row, no lock left');
  const recorded = await verifyArchive({ archiveDir: plain, jobs: 1 });
  assert.equal(recorded.recorded, true);
  assert.equal(recorded.events, report.bags, 'without the flag, one event per bag');
});

test('status, audit, restore, export, export-rdf, urls and verify --no-record read a read-only copy', { skip: SKIP_CLI }, async () => {
  const status = await readingCommand(['status', '--archive', copy]);
  assert.match(status.stdout, new RegExp(`${endpoint.replace(/[.]/g, '\\.')}`));
  assert.match(status.stdout, /resources: 3 live/);
  const json = JSON.parse((await readingCommand(['status', '--archive', copy, '--json'])).stdout) as { sources: Array<{ liveResources: number }> };
  assert.equal(json.sources[0]?.liveResources, 3);

  const audit = await readingCommand(['audit', '--archive', copy]);
  for (const name of Object.keys(FILES)) assert.ok(audit.stdout.includes(name), `the audit names ${name}`);

  const dryRun = await readingCommand(['restore', '--archive', copy, '--to', join(out, 'dry-run'), '--dry-run']);
  for (const name of Object.keys(FILES)) assert.ok(dryRun.stdout.includes(name), `the dry run lists ${name}`);
  assert.equal(existsSync(join(out, 'dry-run')), false, 'a dry run writes nothing');

  const site = outputFolder('site');
  await readingCommand(['restore', '--archive', copy, '--to', site]);
  for (const [name, content] of Object.entries(FILES)) assert.deepEqual(readFileSync(join(site, name)), Buffer.from(content));

  const bags = outputFolder('bags');
  await readingCommand(['export', '--archive', copy, '--bags', '--to', bags]);
  assert.ok(readdirSync(bags).some((name) => name.endsWith('.zip')));
  assert.ok(readdirSync(bags).includes('SHA256SUMS'));
  await readingCommand(['export', '--archive', copy, '--site', '--to', join(outputFolder('zip'), 'site.zip')]);

  const rdf = await readingCommand(['export-rdf', '--archive', copy]);
  assert.ok(rdf.stdout.includes('docs/report.txt'));

  const urls = await readingCommand(['urls', endpoint], copy);
  for (const name of Object.keys(FILES)) assert.ok(urls.stdout.includes(name), `urls lists ${name}`);

  const verify = await readingCommand(['verify', '--archive', copy, '--no-record', '--jobs', '1']);
  assert.match(verify.stdout, /nothing recorded \(--no-record\)\narchive OK\n$/);
  assert.match(verify.stdout, /note: the archive is read-only: checked without its lock/);
  assert.match(verify.stdout, /\b\d+ bag\(s\) checked, (\d+) valid, 0 damaged/);
});

test('verify --no-record still finds damage in a read-only copy, exit 4, and records nothing', { skip: SKIP_CLI }, async () => {
  const damaged = readOnlyCopy(archive, 'damaged', (dir) => {
    const catalog = Catalog.open(dir, { readOnly: true });
    let path: string;
    try {
      const version = catalog.latestVersion(catalog.source(endpoint)!.id, `${endpoint.slice(0, -4)}/docs/report.txt`)!;
      const [part] = catalog.versionParts(version.id);
      path = join(dir, part!.bagPath, part!.path);
    } finally {
      catalog.close();
    }
    const bytes = readFileSync(path);
    bytes[0] = bytes[0]! ^ 1;
    writeFileSync(path, bytes);
  });
  const before = tree(damaged);
  const result = await oaibag(['verify', '--archive', damaged, '--no-record', '--jobs', '1']);
  assert.equal(result.status, 4, result.stderr);
  assert.match(result.stdout, /checksum/);
  assert.match(result.stdout, /relied on by .*docs\/report\.txt/);
  assert.match(result.stdout, /archive NOT OK\n$/);
  assert.deepEqual(tree(damaged), before);
});

test('serve answers from a read-only copy, and stops cleanly', { skip: SKIP_CLI }, async () => {
  const before = tree(copy);
  const [command, ...prefix] = [...RUN_AS!, process.execPath];
  const server: ChildProcess = spawn(command!, [...prefix, BIN, 'serve', '--archive', copy, '--port', '0'], {
    cwd: work,
    env: { ...process.env, TMPDIR: temporary },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  const exited = new Promise<number | null>((resolve) => server.on('exit', (code) => resolve(code)));
  try {
    const base = await new Promise<string>((resolve, reject) => {
      server.stderr!.on('data', (chunk: Buffer) => {
        stderr += chunk.toString('utf8');
        const found = /at (http:\/\/\S+)\/oai /.exec(stderr);
        if (found) resolve(found[1]!);
      });
      server.on('exit', (code) => reject(new Error(`serve exited ${code}: ${stderr}`)));
    });
    const identify = await fetch(`${base}/oai?verb=Identify`);
    assert.equal(identify.status, 200);
    assert.match(await identify.text(), /<Identify>/);
    const list = await fetch(`${base}/oai?verb=ListIdentifiers&metadataPrefix=oai_didl`);
    const listed = await list.text();
    assert.equal(list.status, 200);
    for (const name of Object.keys(FILES)) assert.ok(listed.includes(name), `ListIdentifiers names ${name}`);
  } finally {
    server.kill('SIGTERM');
  }
  assert.equal(await exited, 0, stderr);
  assert.deepEqual(tree(copy), before);
  assert.deepEqual(readdirSync(temporary), [], 'the private copy of the catalog is removed when serve stops');
});

test('harvest, verify and reindex on a read-only copy fail with exit 4 and one line naming the read-only archive', { skip: SKIP_CLI }, async () => {
  const before = tree(copy);
  const runs: Array<{ args: string[]; hint: RegExp }> = [
    { args: ['harvest', endpoint, '--archive', copy], hint: /\(hint: harvest into a writable archive/ },
    { args: ['verify', '--archive', copy], hint: /\(hint: check it without recording: oaibag verify --no-record\)/ },
    { args: ['reindex', '--archive', copy, '--force'], hint: /\(hint: reindex a writable copy of the archive\)/ },
  ];
  for (const { args, hint } of runs) {
    const result = await oaibag(args);
    assert.equal(result.status, 4, `oaibag ${args[0]}: ${result.stderr}`);
    const lines = result.stderr.trimEnd().split('\n');
    assert.equal(lines.length, 1, `one line: ${result.stderr}`);
    assert.ok(lines[0]!.startsWith(`oaibag: the archive ${copy} is read-only (EACCES): `), lines[0]);
    assert.match(lines[0]!, /\[ERR_ARCHIVE_IO\]/);
    assert.match(lines[0]!, hint);
    assert.deepEqual(tree(copy), before, `oaibag ${args[0]} changed the read-only copy`);
  }
});

test('a copy taken while a harvest wrote (its -wal copied, no -shm) is read with what the -wal holds', { skip: SKIP_CLI }, async () => {
  const live = join(work, 'live');
  cpSync(archive, live, { recursive: true });
  // A writer that has committed into the -wal and not checkpointed yet, as a harvest in progress.
  const catalog = Catalog.open(live, { create: false });
  catalog.ensureSource('http://wal-only.example.org/oai', 'only in the -wal');
  const snapshot = readOnlyCopy(live, 'snapshot', (dir) => rmSync(join(dir, 'catalog.sqlite-shm'), { force: true }));
  catalog.close();
  assert.ok(existsSync(join(snapshot, 'catalog.sqlite-wal')), 'the snapshot has a -wal');
  const before = tree(snapshot);
  const result = await oaibag(['status', '--archive', snapshot]);
  assert.equal(result.status, 0, result.stderr);
  assert.match(result.stdout, /http:\/\/wal-only\.example\.org\/oai/);
  assert.deepEqual(tree(snapshot), before);
});
