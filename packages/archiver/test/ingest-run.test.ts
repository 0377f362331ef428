/**
 * One run (ingest/) with a real archive: the archive locked, then its catalog opened; a run's
 * row with its kind; pages taken into its batch and committed with the tally (the row's counts,
 * the list state and a watermark in one transaction); what the batch holds settled; a failure
 * booked, a full disk as ERR_ARCHIVE_FULL. Harvests and imports exercise it end to end
 * (test/harvest*.test.ts, test/import*.test.ts); this checks the run's own promises.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { isArchiverError } from '../src/core/errors.ts';
import type { PageEntry } from '../src/ingest/ingest-batch.ts';
import { IngestRun } from '../src/ingest/ingest-run.ts';
import { type IngestSession, lockForIngest, openIngestSession } from '../src/ingest/ingest-session.ts';
import { RunRow, STOPPED_REASON } from '../src/ingest/run-row.ts';
import { OaiClient } from '../src/oai/oai-client.ts';

const BASE = 'https://example.org/oai';
const OAI = 'http://www.openarchives.org/OAI/2.0/';

async function opened(t: TestContext, dir?: string): Promise<{ dir: string; session: IngestSession }> {
  const archive = dir ?? (await mkdtemp(join(tmpdir(), 'oaibag-run-')));
  if (dir === undefined) t.after(() => rm(archive, { recursive: true, force: true }));
  const session = await openIngestSession(await lockForIngest(archive, 'harvest test'), () => undefined);
  return { dir: archive, session };
}

/** A run of `kind` of the example source, in an open session (closed after the test). */
async function running(t: TestContext, kind: 'harvest' | 'import' = 'import') {
  const { dir, session } = await opened(t);
  t.after(() => session.close());
  const client = new OaiClient(BASE);
  t.after(() => client.close());
  const source = session.catalog.ensureSource(BASE, 'Example');
  const row = RunRow.open(session.catalog, source.id, kind, { prefix: 'oai_didl' });
  const run = new IngestRun(session, row, {
    client,
    baseUrl: BASE,
    repositoryName: 'Example',
    prefix: 'oai_didl',
    from: null,
    until: null,
    set: null,
    concurrency: 2,
    log: () => undefined,
  });
  return { dir, catalog: session.catalog, source, run };
}

const deletion = (path: string, datestamp: string): PageEntry => {
  const identifier = `https://example.org/${path}`;
  const headerXml = Buffer.from(`<header xmlns="${OAI}" status="deleted"><identifier>${identifier}</identifier><datestamp>${datestamp}</datestamp></header>`);
  return { kind: 'deletion', facts: { kind: 'deletion', identifier, datestamp, headerXml } };
};

test('a run commits its batch with the tally: the row counts, the list state and the watermark together; nothing to record sets the watermark alone', async (t) => {
  const { dir, catalog, source, run } = await running(t);
  assert.equal(catalog.harvest(run.id)?.kind, 'import');
  await run.takePage([deletion('a.txt', '2024-01-01T00:00:00Z'), deletion('b.txt', '2024-01-01T00:00:00Z')]);
  await run.commit({ listResponseDate: '2024-05-01T00:00:01Z', listEnd: 'complete', state: null, watermark: '2024-05-01T00:00:01Z', requests: 3 });
  assert.equal(run.bags, 1);
  assert.equal(run.counts.deleted, 2);
  assert.equal(run.counts.requests, 0, 'the requests are the row’s, given by the source');
  const row = catalog.harvest(run.id)!;
  assert.deepEqual([row.counts.deleted, row.counts.requests], [2, 3]);
  assert.equal(catalog.source(BASE)?.watermark, '2024-05-01T00:00:01Z');
  assert.ok(row.endedAt, 'the list ended with the batch');
  const info = await readFile(join(dir, 'aips', `harvest-${String(run.id).padStart(6, '0')}`, 'batch-00001', 'bag-info.txt'), 'utf8');
  assert.match(info, /^List-End: complete$/m);
  assert.match(info, /^Batch-Pages: 1-1$/m);

  // Nothing taken since (every record known, or left out): the watermark still moves.
  await run.commit({ watermark: '2024-07-01T00:00:00Z' });
  assert.equal(run.bags, 1);
  assert.equal(catalog.source(BASE)?.watermark, '2024-07-01T00:00:00Z');
  assert.equal(catalog.openFailures(source.id).length, 0);
  run.finish('complete');
  assert.equal(catalog.harvest(run.id)?.status, 'complete');
});

test('a failing run: settle commits what the batch holds, a full disk is booked as ERR_ARCHIVE_FULL of stage store, the row failed with its reason', async (t) => {
  const { catalog, source, run } = await running(t, 'harvest');
  await run.takePage([deletion('a.txt', '2024-01-01T00:00:00Z')]);
  assert.equal(await run.settle({ listResponseDate: null }), undefined);
  assert.equal(run.bags, 1);
  assert.equal(catalog.bags().length, 1, 'what the batch held is kept');

  const full = Object.assign(new Error('no space left on device'), { code: 'ENOSPC' });
  const stop = run.fail(full, 'list');
  assert.ok(isArchiverError(stop) && stop.code === 'ERR_ARCHIVE_FULL', String(stop));
  const row = catalog.harvest(run.id)!;
  assert.equal(row.kind, 'harvest');
  assert.equal(row.status, 'failed');
  assert.match(row.reason ?? '', /\[ERR_ARCHIVE_FULL\]$/);
  assert.equal(row.counts.deleted, 1);
  assert.deepEqual(
    catalog.openFailures(source.id).map((failure) => [failure.stage, failure.code, failure.harvestId]),
    [['store', 'ERR_ARCHIVE_FULL', run.id]],
  );
  const bug = new TypeError('a bug');
  assert.equal(run.fail(bug, 'list'), bug, 'an error that is not an ArchiverError is passed on, unrecorded');
  assert.equal(catalog.openFailures(source.id).length, 1);
});

test('a run that never reached its records: stopped is interrupted, anything else failed, each with its reason', async (t) => {
  const { dir, session } = await opened(t);
  t.after(() => session.close());
  const source = session.catalog.ensureSource(BASE, null);
  const stopped = RunRow.open(session.catalog, source.id, 'harvest', { prefix: 'oai_didl' });
  stopped.endAttempt(Object.assign(new Error('aborted'), { name: 'AbortError' }));
  assert.deepEqual([session.catalog.harvest(stopped.id)?.status, session.catalog.harvest(stopped.id)?.reason], ['interrupted', STOPPED_REASON]);
  const refused = RunRow.open(session.catalog, source.id, 'harvest', { prefix: 'oai_didl' });
  refused.endAttempt(new Error('connect ECONNREFUSED'));
  assert.deepEqual(
    [session.catalog.harvest(refused.id)?.status, session.catalog.harvest(refused.id)?.reason],
    ['failed', 'connect ECONNREFUSED [ERR_ARCHIVE_INTERNAL]'],
  );
  assert.ok(existsSync(dir));
});

test('the archive is locked first and its catalog opened second: abandoning removes a folder the lock made; a run left running is interrupted at the next opening', async (t) => {
  const parent = await mkdtemp(join(tmpdir(), 'oaibag-run-'));
  t.after(() => rm(parent, { recursive: true, force: true }));
  const fresh = join(parent, 'archive');
  await (await lockForIngest(fresh, 'import delivery.zip')).abandon();
  assert.equal(existsSync(fresh), false, 'a refused delivery leaves nothing');

  const { session } = await opened(t, fresh);
  const source = session.catalog.ensureSource(BASE, null);
  const left = RunRow.open(session.catalog, source.id, 'import', { prefix: 'oai_didl' });
  await session.close(); // as a killed run leaves it: the row still running
  const again = await opened(t, fresh);
  t.after(() => again.session.close());
  assert.equal(again.session.catalog.harvest(left.id)?.status, 'interrupted');
  const held = await lockForIngest(fresh, 'harvest again').catch((error: unknown) => error);
  assert.ok(isArchiverError(held), 'the archive stays locked while a session is open');
});
