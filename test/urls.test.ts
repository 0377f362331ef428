// `oaibag urls` against a real repository: list everything, change the site, list what changed.
// The CLI part needs the built command (`npx --yes pnpm@10.34.9 build`) and runs once packages/archiver/src/cli.ts
// wires urlsCommand.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type ChangedUrl, formatChangedUrl, type ListChangedUrlsOptions, listChangedUrls } from '../packages/archiver/src/index.ts';
import { createRepository, type Repository } from '../packages/repository/src/index.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIN = join(ROOT, 'packages/archiver/bin/oaibag.js');
const CLI_WIRED =
  readFileSync(join(ROOT, 'packages/archiver/src/cli.ts'), 'utf8').includes('urlsCommand') &&
  existsSync(join(ROOT, 'packages/archiver/dist/commands/urls-command.js'));
const YEAR_2000 = Date.UTC(2000, 0, 1) / 1000;
const FAST_RETRY = { retries: 1, baseDelayMs: 10, maxDelayMs: 50 };
const nextSecond = () => new Promise((resolve) => setTimeout(resolve, 1100 - (Date.now() % 1000)));

let work: string;
let site: string;
let repository: Repository;
let endpoint: string;

const url = (path: string): string => `${endpoint.slice(0, -4)}/${path.split('/').map(encodeURIComponent).join('/')}`;
/** Runs the command asynchronously: the repository answering it lives in this process. */
function oaibag(...args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

function write(path: string, content: string | Buffer, mtime = YEAR_2000): void {
  mkdirSync(dirname(join(site, path)), { recursive: true });
  writeFileSync(join(site, path), content);
  utimesSync(join(site, path), mtime, mtime);
}

async function list(options: Omit<ListChangedUrlsOptions, 'baseUrl' | 'onPage'> = {}) {
  const entries: ChangedUrl[] = [];
  const pages: number[] = [];
  const summary = await listChangedUrls({
    baseUrl: endpoint,
    retry: FAST_RETRY,
    ...options,
    onPage: (page) => {
      entries.push(...page);
      pages.push(page.length);
    },
  });
  return { entries, pages, summary };
}

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'oaibag-urls-'));
  site = join(work, 'site');
  write('index.html', '<html>home</html>');
  write('papers/a b.txt', 'a paper with a space in its name');
  write('img/logo.png', Buffer.from([0x89, 0x50, 0x4e, 0x47, 1, 2, 3]));
  write('gone.txt', 'this one will be deleted');
  write('stays.txt', 'this one does not change');
  repository = await createRepository({ root: site, index: join(work, 'index.sqlite'), watch: false, rescanSeconds: 0, pageIdentifiers: 2 });
  endpoint = `${await repository.listen(0, '127.0.0.1')}/oai`;
});

after(async () => {
  await repository.close();
  rmSync(work, { recursive: true, force: true });
});

test('urls lists what changed: first everything, then exactly the added, modified and deleted URLs', async () => {
  const first = await list();
  assert.deepEqual(first.entries.map((entry) => entry.url).sort(), ['gone.txt', 'img/logo.png', 'index.html', 'papers/a b.txt', 'stays.txt'].map(url).sort());
  assert.ok(first.entries.every((entry) => !entry.deleted && entry.crawlable && /^\d{4}-/.test(entry.datestamp)));
  assert.deepEqual(first.pages, [2, 2, 1], 'handed over page by page, resumption tokens followed');
  assert.equal(first.summary.listed, 5);
  assert.match(first.summary.responseDate ?? '', /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
  assert.deepEqual(first.entries.find((entry) => entry.url === url('img/logo.png'))!.sets, ['mime:image:png']);

  await nextSecond();
  write('new.txt', 'added after the first listing', YEAR_2000 - 86400); // an old mtime, like cp -p
  write('index.html', '<html>home, edited</html>');
  rmSync(join(site, 'gone.txt'));
  await repository.scan();
  await nextSecond(); // lists exclude the current second

  const changed = await list({ from: first.summary.responseDate! });
  assert.deepEqual(
    changed.entries.map((entry) => [entry.url, entry.deleted]).sort(),
    [
      [url('gone.txt'), true],
      [url('index.html'), false],
      [url('new.txt'), false],
    ].sort(),
  );
  assert.deepEqual(changed.summary.deleted, 1);
  // --no-deleted: the deletion is neither handed over nor counted as a change.
  const live = await list({ from: first.summary.responseDate!, includeDeleted: false });
  assert.deepEqual(live.entries.map((entry) => entry.url).sort(), [url('index.html'), url('new.txt')].sort());
  assert.deepEqual([live.summary.listed, live.summary.deleted, live.summary.deletedLeftOut], [2, 0, 1]);
  assert.equal(changed.summary.from, first.summary.responseDate);
  const lines = changed.entries.map((entry) => formatChangedUrl(entry, false));
  assert.ok(lines.includes(`${url('gone.txt')}\tdeleted\n`), lines.join(''));
  assert.ok(lines.includes(`${url('new.txt')}\n`));
  const json = JSON.parse(formatChangedUrl(changed.entries.find((entry) => entry.deleted)!, true)) as Record<string, unknown>;
  assert.deepEqual(Object.keys(json), ['url', 'datestamp', 'deleted', 'sets']);
  assert.equal(json.deleted, true);

  // Nothing changed since: an empty list is not an error.
  await nextSecond();
  const none = await list({ from: changed.summary.responseDate! });
  assert.deepEqual(none.entries, []);
  assert.equal(none.summary.listed, 0);

  // A set narrows the list.
  const images = await list({ set: 'mime:image' });
  assert.deepEqual(
    images.entries.map((entry) => entry.url),
    [url('img/logo.png')],
  );

  if (CLI_WIRED) {
    const cli = await oaibag('urls', endpoint, '--from', first.summary.responseDate!);
    assert.equal(cli.status, 0, cli.stderr);
    assert.deepEqual(cli.stdout.split('\n').filter(Boolean).sort(), [`${url('gone.txt')}\tdeleted`, url('index.html'), url('new.txt')].sort());
    assert.match(cli.stderr, /3 changed \(1 deleted\).*next time: --from \d{4}-/);
    const liveCli = await oaibag('urls', endpoint, '--from', first.summary.responseDate!, '--no-deleted', '--json');
    assert.equal(liveCli.status, 0, liveCli.stderr);
    assert.deepEqual(
      liveCli.stdout
        .split('\n')
        .filter(Boolean)
        .map((line) => (JSON.parse(line) as { url: string }).url)
        .sort(),
      [url('index.html'), url('new.txt')].sort(),
    );
    assert.match(liveCli.stderr, /: 2 changed \(1 deletion left out\) from /, 'the summary counts what was printed');
  }
});

test('urls refuses a malformed date, and fails as a source problem when the repository is unreachable or not OAI-PMH', async () => {
  await assert.rejects(list({ from: 'yesterday' }), { code: 'ERR_ARCHIVE_USAGE' });
  // The one command-line grammar (core/command-line-date.ts): a time needs its zone.
  await assert.rejects(list({ until: '2024-01-31T12:00' }), { code: 'ERR_ARCHIVE_USAGE' });
  await assert.rejects(list({ from: '2024-02-30' }), { code: 'ERR_ARCHIVE_USAGE' });

  // A port nothing listens on: take a free one and close it again.
  const probe: Server = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const closed = `http://127.0.0.1:${(probe.address() as AddressInfo).port}/oai`;
  await new Promise((resolve) => probe.close(resolve));
  await assert.rejects(listChangedUrls({ baseUrl: closed, retry: FAST_RETRY, onPage: () => undefined }), { code: 'ERR_HARVEST_UNREACHABLE' });

  const again: Server = createServer((_request, response) => response.writeHead(200, { 'content-type': 'text/html' }).end('<html>not OAI-PMH</html>'));
  await new Promise<void>((resolve) => again.listen(0, '127.0.0.1', resolve));
  try {
    const notOai = `http://127.0.0.1:${(again.address() as AddressInfo).port}/oai`;
    await assert.rejects(listChangedUrls({ baseUrl: notOai, retry: FAST_RETRY, onPage: () => undefined }), { code: 'ERR_HARVEST_NOT_OAI' });
    if (CLI_WIRED) {
      assert.equal((await oaibag('urls', notOai)).status, 3);
      assert.equal((await oaibag('urls', endpoint, '--from', 'yesterday')).status, 2);
      assert.equal((await oaibag('urls', endpoint, '--user', 'someone')).status, 2, '--user without --password-file');
    }
  } finally {
    await new Promise((resolve) => again.close(resolve));
  }
});
