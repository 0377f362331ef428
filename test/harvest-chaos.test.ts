// End to end: harvest after harvest through a proxy that misbehaves at seeded random moments
// (connections reset mid-body, bodies cut short, 500 and 503, slow answers; gzip-compressed
// answers every other round, so cuts also land inside gzip streams), while the site
// changes between harvests (touches, edits, additions, deletions). Whatever happens, each
// harvest ends with a summary or a coded source error, the archive verifies clean after every
// one, and once the faults stop a harvest completes and the archive restores the site byte for
// byte. The scripted faults of harvest-faults.test.ts check each case; this checks that none
// of them, at any moment, leaves the archive wrong.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { Agent, createServer, type IncomingMessage, request, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { after, before, test } from 'node:test';
import { harvest, isArchiverError, restoreSite, verifyArchive } from '../packages/archiver/src/index.ts';
import { createRepository, type Repository } from '../packages/repository/src/index.ts';
import { seededRandom } from './seeded-random.ts';

// Seed 8 made harvests before keepErrorForReader (oai-client.ts) die: a prefetched gzip page
// broke off while nobody read it yet. Other seeds pass by that bug; keep one that does not.
const SEED = 8;
const ROUNDS = 8;
const YEAR_2000 = Date.UTC(2000, 0, 1) / 1000;
const FAST_RETRY = { retries: 2, baseDelayMs: 5, maxDelayMs: 50 };
const nextSecond = () => new Promise((resolve) => setTimeout(resolve, 1100 - (Date.now() % 1000)));

const random = seededRandom(SEED);
const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;

type Fault = 'reset' | 'truncate' | '503' | '500' | 'slow' | 'none';
const faultsSeen: Record<Fault, number> = { reset: 0, truncate: 0, '503': 0, '500': 0, slow: 0, none: 0 };
let faulty = true;
let compressed = false;

function nextFault(): Fault {
  if (!faulty) return 'none';
  const roll = random();
  return roll < 0.08 ? 'reset' : roll < 0.14 ? 'truncate' : roll < 0.18 ? '503' : roll < 0.21 ? '500' : roll < 0.25 ? 'slow' : 'none';
}

let work: string;
let site: string;
let archive: string;
let proxy: Server;
let repository: Repository;
let endpoint: string;
let serial = 0;

function put(path: string, size: number, mtime?: number): void {
  mkdirSync(dirname(join(site, path)), { recursive: true });
  writeFileSync(join(site, path), size % 3 === 0 ? randomBytes(size) : Buffer.from(`<p>${serial++}</p>`.repeat(Math.ceil(size / 8)).slice(0, size)));
  if (mtime !== undefined) utimesSync(join(site, path), mtime, mtime);
}

function filesUnder(root: string, dir = root): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? filesUnder(root, join(dir, entry.name)) : [relative(root, join(dir, entry.name))],
  );
}

/** Forwards to the repository, or misbehaves: the whole answer is read first, then sent as the fault says. */
function misbehave(upstreamPort: number, agent: Agent) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    const fault = nextFault();
    faultsSeen[fault]++;
    if (fault === '503' || fault === '500') {
      res.writeHead(Number(fault), { 'Retry-After': '0' });
      res.end('a fault of the proxy\n');
      return;
    }
    const headers = { ...req.headers };
    // Every other round plain, so that cuts land in XML text as well as in gzip streams.
    if (!compressed) delete headers['accept-encoding'];
    delete headers.connection;
    const upstream = request({ host: '127.0.0.1', port: upstreamPort, path: req.url, method: req.method, headers, agent }, async (answer) => {
      const chunks: Buffer[] = [];
      for await (const chunk of answer as AsyncIterable<Buffer>) chunks.push(chunk);
      const body = Buffer.concat(chunks);
      const out: Record<string, string | string[]> = {};
      for (const [name, value] of Object.entries(answer.headers)) {
        if (value !== undefined && !['connection', 'keep-alive', 'transfer-encoding'].includes(name)) out[name] = value;
      }
      if (fault === 'slow') await new Promise((resolve) => setTimeout(resolve, 150));
      if ((fault === 'reset' || fault === 'truncate') && body.length > 1) {
        delete out['content-length'];
        res.writeHead(answer.statusCode ?? 200, out);
        const cut = body.subarray(0, Math.floor(random() * body.length));
        if (fault === 'truncate') {
          res.end(cut);
        } else {
          res.write(cut);
          setTimeout(() => res.socket?.resetAndDestroy(), 5);
        }
        return;
      }
      res.writeHead(answer.statusCode ?? 200, out);
      res.end(body);
    });
    upstream.on('error', () => res.destroy());
    upstream.end();
  };
}

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'oaibag-chaos-'));
  site = join(work, 'site');
  archive = join(work, 'archive');
  // 48 files; every tenth over by-value-max (By-Reference), a quarter random bytes.
  for (let i = 0; i < 48; i++) put(`d${i % 5}/f${i}.${i % 4 === 0 ? 'bin' : 'html'}`, i % 10 === 0 ? 60_000 + i : 100 + i * 37, YEAR_2000);
  proxy = createServer();
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  // Identifiers and refs point at the proxy, so every request of the harvester goes through it.
  repository = await createRepository({
    root: site,
    index: join(work, 'index.sqlite'),
    watch: false,
    rescanSeconds: 0,
    byValueMax: 50_000,
    pageRecords: 7,
    baseUrl: proxyUrl,
  });
  await repository.listen(0, '127.0.0.1');
  proxy.on('request', misbehave((repository.server.address() as AddressInfo).port, new Agent({ keepAlive: false })));
  endpoint = `${proxyUrl}/oai`;
});

after(async () => {
  await repository.close();
  await new Promise((resolve) => proxy.close(resolve));
  rmSync(work, { recursive: true, force: true });
});

/** Touches, edits, deletions and additions, eight at random. */
async function changeSite(round: number): Promise<void> {
  const present = filesUnder(site);
  for (let k = 0; k < 8; k++) {
    const path = pick(present);
    const roll = random();
    if (roll >= 0.85) put(`new/r${round}-${k}.html`, 200 + k);
    else if (!existsSync(join(site, path))) continue;
    else if (roll < 0.4) utimesSync(join(site, path), new Date(), new Date());
    else if (roll < 0.7) put(path, statSync(join(site, path)).size + 5);
    else rmSync(join(site, path));
  }
  await repository.scan();
  await nextSecond();
}

/** A batch bag per page (7 records): faults land between committed bags too (issue 24). */
const ONE_BAG_A_PAGE = { records: 7, bytes: 1 << 30 };

test(`${ROUNDS} harvests through random faults while the site changes: the archive verifies clean after each, then restores the site exactly`, {
  timeout: 180_000,
}, async () => {
  const outcomes: string[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    if (round > 1) await changeSite(round);
    compressed = round % 2 === 0;
    try {
      const summary = await harvest({
        baseUrl: endpoint,
        archiveDir: archive,
        retry: FAST_RETRY,
        compression: 'always',
        batchBounds: ONE_BAG_A_PAGE,
        log: () => {},
      });
      outcomes.push(summary.status);
    } catch (error) {
      // Only a coded source problem may end a harvest early: never a raw network or zlib error.
      assert.ok(isArchiverError(error) && error.code.startsWith('ERR_HARVEST_'), `round ${round}: ${(error as Error).message}`);
      outcomes.push(error.code);
    }
    const report = await verifyArchive({ archiveDir: archive, jobs: 2 });
    assert.deepEqual(
      { damaged: report.damaged, missing: report.missingBags, uncatalogued: report.uncataloguedBags, problems: report.problems },
      { damaged: 0, missing: 0, uncatalogued: 0, problems: [] },
      `round ${round} (${outcomes.at(-1)})`,
    );
  }
  assert.ok(faultsSeen.reset + faultsSeen.truncate > 0 && faultsSeen['503'] + faultsSeen['500'] > 0, `faults were injected: ${JSON.stringify(faultsSeen)}`);

  faulty = false;
  const final = await harvest({ baseUrl: endpoint, archiveDir: archive, retry: FAST_RETRY, compression: 'always', batchBounds: ONE_BAG_A_PAGE, log: () => {} });
  assert.equal(final.status, 'complete', `after ${outcomes.join(', ')}`);
  const restored = join(work, 'restored');
  const summary = await restoreSite({ archiveDir: archive, to: restored });
  assert.equal(summary.problems, 0);
  const expected = filesUnder(site).sort();
  assert.deepEqual(filesUnder(restored).sort(), expected, 'the same files: deletions applied, additions present');
  for (const path of expected) assert.ok(readFileSync(join(restored, path)).equals(readFileSync(join(site, path))), `${path} byte for byte`);
});
