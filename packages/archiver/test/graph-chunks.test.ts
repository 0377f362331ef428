// The walk of the catalog that the SPARQL store and `export-rdf` are made from (serve/graph-chunks.ts):
// read in pages of a few rows and cut into small pieces, it gives exactly the triples of one
// walk in one page; left halfway and resumed after more rows were written, it gives the graph
// of the catalog as it is then; every query of it is a seek at any position; the estimate of
// the store's size is not below the graph it estimates.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import Database from 'better-sqlite3';
import { Parser } from 'n3';
import { CATALOG_FILE_NAME, Catalog } from '../src/catalog/catalog.ts';
import { GRAPH_QUERIES } from '../src/catalog/graph-rows.ts';
import { ArchiveUris } from '../src/serve/archive-graph.ts';
import { GraphProgress, graphChunks } from '../src/serve/graph-chunks.ts';
import { estimateGraphQuads } from '../src/serve/graph-store.ts';

const uris = new ArchiveUris('https://archive.example.org');
const SMALL = { pageRows: 3, chunkCharacters: 600 };
const sha = (n: number) => n.toString(16).padStart(64, '0');
let made = 0;

async function openCatalog(t: TestContext): Promise<{ catalog: Catalog; dir: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'oaibag-graph-chunks-'));
  const catalog = Catalog.open(dir);
  t.after(async () => {
    catalog.close();
    await rm(dir, { recursive: true, force: true });
  });
  return { catalog, dir };
}

/**
 * One harvest of `source`: a version of each name (the second of every five with two payload
 * files), then deletions of `deleted`; left running when `running`.
 */
function harvestInto(
  catalog: Catalog,
  sourceId: number,
  names: string[],
  options: { deleted?: string[]; running?: boolean; mimeType?: (name: string) => string | null } = {},
): number {
  const harvestId = catalog.startRun(sourceId, 'harvest', { prefix: 'oai_didl' });
  const bagPath = `aips/harvest-${String(harvestId).padStart(6, '0')}/batch-00001`;
  const versions = names.map((name, index) => {
    const parts = index % 5 === 1 ? [sha(++made), sha(++made)] : [sha(++made)];
    return { name, parts };
  });
  catalog.transaction(() => {
    const payloads = versions.flatMap((version) => version.parts.map((part, n) => ({ sha256: part, size: 10 + n, path: `data/site/${version.name}-${n}` })));
    catalog.recordBag({
      bagPath,
      sourceId,
      harvestId,
      records: versions.length,
      newPayloads: payloads.length,
      revisits: 0,
      deletions: 0,
      payloadBytes: 0,
      payloads,
    });
    versions.forEach((version, index) => {
      catalog.recordVersion({
        sourceId,
        identifier: `https://site.example.org/${version.name}`,
        datestamp: `2026-0${harvestId}-01T00:00:00Z`,
        size: 10 * version.parts.length,
        sha256: version.parts[0]!,
        mimeType: options.mimeType ? options.mimeType(version.name) : (['text/html', 'image/png', 'application/pdf'][version.name.length % 3] ?? null),
        bagPath,
        record: index + 1,
        harvestId,
        parts: version.parts,
        lastModified: 'Wed, 01 Jan 2025 00:00:00 GMT',
      });
    });
    for (const name of options.deleted ?? [])
      catalog.recordDeletion(sourceId, `https://site.example.org/${name}`, `2026-0${harvestId}-02T00:00:00Z`, harvestId);
  });
  if (!options.running) catalog.finishRun(harvestId, 'complete');
  return harvestId;
}

/** An archive of two sources (the second has a name of the first: served qualified), two harvests and their events. */
function fill(catalog: Catalog): void {
  const first = catalog.upsertSource('https://site.example.org/oai', { repositoryName: 'site' });
  const second = catalog.upsertSource('https://mirror.example.org/oai', {});
  const names = Array.from({ length: 11 }, (_, n) => `page-${n}`);
  harvestInto(catalog, first.id, names);
  harvestInto(catalog, first.id, names.slice(0, 7), { deleted: ['page-9', 'page-10'] });
  harvestInto(catalog, second.id, ['page-3', 'only-here']);
  for (let n = 0; n < 4; n++)
    catalog.addEvent({ type: 'fixity check', outcome: 'success', detail: `oaibag verify: aips/harvest-000001/batch-00001: intact ${n}` });
}

/** The walk's triples, as N-Triples lines (each piece checked to parse), and how many pieces there were. */
function walk(catalog: Catalog, progress: GraphProgress, stopAfter = Number.POSITIVE_INFINITY): { lines: string[]; pieces: number; forgotten: string[] } {
  const lines: string[] = [];
  const forgotten: string[] = [];
  let pieces = 0;
  for (const chunk of graphChunks(catalog, uris, progress)) {
    const text = chunk.ntriples;
    assert.equal(new Parser({ format: 'application/n-triples' }).parse(text).length, chunk.triples);
    if (text !== '') lines.push(...text.trimEnd().split('\n'));
    forgotten.push(...chunk.forget);
    if (++pieces >= stopAfter) break;
  }
  return { lines, pieces, forgotten };
}

test('a walk in pages of three rows and small pieces gives the triples of a walk in one page', async (t) => {
  const { catalog } = await openCatalog(t);
  fill(catalog);
  const whole = walk(catalog, new GraphProgress());
  const paged = walk(catalog, new GraphProgress(SMALL));
  assert.equal(whole.pieces, 1, 'the whole archive fits one piece by default');
  assert.ok(paged.pieces > 10, `${paged.pieces} pieces`);
  assert.deepEqual(paged.lines.toSorted(), whole.lines.toSorted());
  assert.equal(new Set(whole.lines).size, whole.lines.length, 'no triple twice');
  const text = whole.lines.join('\n');
  assert.match(text, /<https:\/\/archive\.example\.org\/resource\/item\/info%3Aoaibag%2Fsource%2F2%2Fhttps%3A%2F%2Fsite\.example\.org%2Fpage-3>/);
  assert.match(text, /resource\/deletion\/https%3A%2F%2Fsite\.example\.org%2Fpage-10\//);
  // Each version says which item it is of; nothing else of the graph is lost with the Map of items.
  assert.equal(whole.lines.filter((line) => line.includes('<http://purl.org/dc/terms/isVersionOf>')).length, 11 + 7 + 2);
  assert.equal(whole.lines.filter((line) => line.includes('<http://www.w3.org/ns/prov#qualifiedInvalidation>')).length, 2);
});

test('a walk left halfway and resumed after more rows were written gives the graph of the catalog as it is then', async (t) => {
  const { catalog } = await openCatalog(t);
  fill(catalog);
  const progress = new GraphProgress(SMALL);
  const first = walk(catalog, progress, 7);
  const source = catalog.upsertSource('https://site.example.org/oai', { repositoryName: 'site' });
  const running = harvestInto(catalog, source.id, ['page-1', 'new-one'], { running: true });
  const second = walk(catalog, progress);
  catalog.finishRun(running, 'complete');
  const third = walk(catalog, progress);
  assert.ok(third.forgotten.includes(uris.harvest(running)), 'the harvest that was running is written again');
  const held = new Set([...first.lines, ...second.lines]);
  for (const subject of third.forgotten) for (const line of held) if (line.startsWith(`<${subject}> `)) held.delete(line);
  for (const line of third.lines) held.add(line);
  const fresh = walk(catalog, new GraphProgress());
  assert.deepEqual([...held].toSorted(), fresh.lines.toSorted());
  assert.match(fresh.lines.join('\n'), /"complete"/);
});

test('every query of the walk is a seek on a key, whatever the position: no SCAN, no temporary B-tree', async (t) => {
  const { catalog, dir } = await openCatalog(t);
  fill(catalog);
  const db = new Database(join(dir, CATALOG_FILE_NAME), { readonly: true });
  t.after(() => db.close());
  for (const [name, sql] of Object.entries(GRAPH_QUERIES)) {
    const plan = (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(5, 10) as Array<{ detail: string }>).map((row) => row.detail);
    for (const step of plan) {
      assert.doesNotMatch(step, /^SCAN |TEMP B-TREE/, `${name}: ${plan.join(' | ')}`);
      // The qualified name is found by one seek per earlier source, not a range of their resources.
      assert.doesNotMatch(step, /source_id<\?/, `${name}: ${plan.join(' | ')}`);
    }
  }
});

test("the store's size estimated from the catalog is not below the graph of one-file versions", async (t) => {
  const { catalog } = await openCatalog(t);
  fill(catalog);
  const triples = walk(catalog, new GraphProgress()).lines.length;
  const estimate = estimateGraphQuads(catalog);
  // The MIME sets (three types here) are not in the estimate, nor the extra files of a version: 3 a file.
  const extraFiles = 3 * 2 * (2 + 2 + 1);
  assert.ok(estimate + extraFiles + 6 * 3 >= triples, `estimate ${estimate}, triples ${triples}`);
  assert.ok(estimate <= 1.5 * triples, `estimate ${estimate}, triples ${triples}: not far above`);
});

/**
 * A store kept in step, as the embedded and the remote stores keep theirs: each piece's
 * subjects forgotten, its triples added, then its moves applied in order. `held` is changed.
 */
function keepInStep(catalog: Catalog, progress: GraphProgress, held: Set<string>): number {
  let moved = 0;
  for (const chunk of graphChunks(catalog, uris, progress)) {
    for (const subject of chunk.forget) for (const line of held) if (line.startsWith(`<${subject}> `)) held.delete(line);
    for (const line of chunk.ntriples.split('\n')) if (line !== '') held.add(line);
    for (const move of chunk.moves) {
      for (const line of held) if (line.startsWith(`<${move.subject}> <${move.predicate}> <${move.objectPrefix}`)) held.delete(line);
      if (move.object !== null) held.add(`<${move.subject}> <${move.predicate}> <${move.object}> .`);
      moved += 1;
    }
  }
  return moved;
}

/** The MIME sets an item is in, as held. */
function mimeSetsOf(held: Set<string>, name: string): string[] {
  const item = `<${uris.item(`https://site.example.org/${name}`)}> <http://purl.org/dc/terms/isPartOf> `;
  return [...held]
    .filter((line) => line.startsWith(item) && line.includes('/resource/set/mime%3A'))
    .map((line) => decodeURIComponent(line.slice(item.length).split('/set/')[1]!.slice(0, -3)));
}

test("versions of another MIME type move their item to its set in a store kept in step: the graph is the fresh walk's", async (t) => {
  const { catalog } = await openCatalog(t);
  fill(catalog);
  const source = catalog.upsertSource('https://site.example.org/oai', { repositoryName: 'site' });
  const progress = new GraphProgress(SMALL);
  const held = new Set<string>();
  assert.equal(keepInStep(catalog, progress, held), 0, 'no MIME type changed yet');
  assert.deepEqual(mimeSetsOf(held, 'page-1'), ['mime:text:html']);
  // page-1 changes type; page-2 twice between two walks (a chain: pdf, then png); page-4 to
  // pdf then pdf again; page-5 to no type; page-6 unchanged.
  const types: Record<string, string | null> = { 'page-1': 'application/zip', 'page-2': 'application/pdf', 'page-4': 'application/pdf', 'page-5': null };
  harvestInto(catalog, source.id, ['page-1', 'page-2', 'page-4', 'page-5', 'page-6'], { mimeType: (name) => (name in types ? types[name]! : 'text/html') });
  harvestInto(catalog, source.id, ['page-2', 'page-4'], { mimeType: (name) => (name === 'page-2' ? 'image/png' : 'application/pdf') });
  assert.ok(keepInStep(catalog, progress, held) >= 4);
  const fresh = walk(catalog, new GraphProgress());
  assert.deepEqual([...held].toSorted(), fresh.lines.toSorted(), 'what a fresh walk gives');
  assert.deepEqual(mimeSetsOf(held, 'page-1'), ['mime:application:zip']);
  assert.deepEqual(mimeSetsOf(held, 'page-2'), ['mime:image:png']);
  assert.deepEqual(mimeSetsOf(held, 'page-4'), ['mime:application:pdf']);
  assert.deepEqual(mimeSetsOf(held, 'page-5'), []);
  assert.deepEqual(mimeSetsOf(held, 'page-6'), ['mime:text:html']);
  assert.ok(
    [...held].some((line) => line.startsWith(`<${uris.set('mime:application:zip')}> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type>`)),
    'a set met first in a move is described',
  );
  // Back to HTML, in a walk of its own.
  harvestInto(catalog, source.id, ['page-1'], { mimeType: () => 'text/html' });
  assert.equal(keepInStep(catalog, progress, held), 1);
  assert.deepEqual(mimeSetsOf(held, 'page-1'), ['mime:text:html']);
  assert.deepEqual([...held].toSorted(), walk(catalog, new GraphProgress()).lines.toSorted());
});
