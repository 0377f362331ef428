/**
 * The metadata of a batch bag (docs/aip-profile.md, format 2): the DIDL kept in records.xml
 * (as received, or written again from the parsed record), each By-Value Resource's base64
 * replaced by a pointer to the payload file; records.xml itself, read back by the bag reader
 * that reindex uses; and the PREMIS document (objects, events per record, agent).
 *
 * PREMIS is checked for well-formedness, namespaces and structure only: test/schemas has no
 * copy of the PREMIS 3 schema (see its README).
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { gzipSync } from 'node:zlib';
import type { DidlDocument, DidlResource, ReceivedDidl } from '@oaibag/didl';
import sax from 'sax';
import { checkWellFormed, validateXmlSchema } from '../../../test/xml-schema.ts';
import {
  AIP_NAMESPACE,
  type BatchRecordFacts,
  type DeletedRecordFacts,
  didlRecordXml,
  type EventContext,
  premisHead,
  premisObjectXml,
  premisTail,
  RECORDS_TAIL,
  receivedDidlXml,
  recordEventsXml,
  recordsHead,
  recordXml,
  type StoredPayload,
  type StoredRecordFacts,
} from '../src/aip/aip-metadata.ts';
import { RECORDS_FILE } from '../src/aip/batch-bag.ts';
import { readBatchRecords } from '../src/aip/batch-bag-reader.ts';

const DIDL_NS = 'urn:mpeg:mpeg21:2002:02-DIDL-NS';
const PREMIS_NS = 'http://www.loc.gov/premis/v3';
const SHA = (c: string) => c.repeat(64);
const HOSTILE = 'https://example.org/say "a" & <b>.txt';
const BAG = 'aips/harvest-000002/batch-00003';
const EARLIER = 'aips/harvest-000001/batch-00001';

interface Element {
  uri: string;
  local: string;
  attributes: Record<string, string>;
  text: string;
  depth: number;
}

/** The elements of a document in order, parsed strictly with namespaces (an unbound prefix is an error). */
function elements(xml: string | Uint8Array): Element[] {
  const found: Element[] = [];
  const open: Element[] = [];
  const parser = sax.parser(true, { xmlns: true });
  parser.onerror = (error) => {
    throw error;
  };
  parser.onopentag = (node) => {
    const tag = node as sax.QualifiedTag;
    const element: Element = {
      uri: tag.uri,
      local: tag.local,
      attributes: Object.fromEntries(Object.values(tag.attributes).map((attribute) => [attribute.name, attribute.value])),
      text: '',
      depth: open.length,
    };
    found.push(element);
    open.push(element);
  };
  parser.ontext = (text) => {
    const current = open[open.length - 1];
    if (current) current.text += text;
  };
  parser.onclosetag = () => {
    open.pop();
  };
  parser.write(typeof xml === 'string' ? xml : Buffer.from(xml).toString('utf8')).close();
  return found;
}

test('the rebuilt DIDL points each By-Value Resource at its own payload file (in this bag or, for a revisit, another), names escaped, and validates', async () => {
  const byReference: DidlResource = { mimeType: 'application/pdf', ref: 'http://example.org/big.pdf' };
  const first: DidlResource = { mimeType: 'text/plain', byValue: { encoding: 'base64', size: 5, sha256: SHA('a') } };
  const second: DidlResource = { mimeType: 'text/plain', byValue: { encoding: 'base64', size: 7, sha256: SHA('b') } };
  const document: DidlDocument = {
    identifier: 'http://example.org/page',
    item: {
      components: [
        { resources: [byReference], descriptors: [] },
        { resources: [second], descriptors: [] },
        { resources: [first], descriptors: [] },
      ],
      items: [],
      descriptors: [],
    },
  };
  // Stored in another order than the Components come: the pointer follows the Resource.
  const stored = new Map<DidlResource, StoredPayload>([
    [first, { path: 'data/example.org/say "a" & <b>.txt', sha256: SHA('a') }],
    [second, { path: 'data/example.org/page.part-2', bag: EARLIER, sha256: SHA('b') }],
  ]);
  const xml = await didlRecordXml(document, (resource) => stored.get(resource));
  const text = xml.toString('utf8');
  assert.ok(text.startsWith('<didl:DIDL'), 'no XML declaration: the element stands inside records.xml');
  const pointers = [...text.matchAll(/<oaibag:byValue [^>]*\/>/g)].map((match) => match[0]);
  assert.deepEqual(pointers, [
    `<oaibag:byValue xmlns:oaibag="urn:oaibag:aip:2" bag="${EARLIER}" path="data/example.org/page.part-2" size="7" sha256="${SHA('b')}"/>`,
    `<oaibag:byValue xmlns:oaibag="urn:oaibag:aip:2" path="data/example.org/say &quot;a&quot; &amp; &lt;b&gt;.txt" size="5" sha256="${SHA('a')}"/>`,
  ]);
  assert.equal(AIP_NAMESPACE, 'urn:oaibag:aip:2');
  const result = validateXmlSchema('didl.xsd', xml, 'didl.xml');
  assert.ok(result.ok, result.output);
  // The pointers are read as what they say.
  const read = elements(xml).filter((element) => element.uri === AIP_NAMESPACE);
  assert.deepEqual(
    read.map((element) => element.attributes.path),
    ['data/example.org/page.part-2', 'data/example.org/say "a" & <b>.txt'],
  );
});

test('the DIDL kept as received is the received bytes, each By-Value base64 replaced by its pointer', () => {
  const resource: DidlResource = { mimeType: 'image/png', byValue: { encoding: 'base64', size: 4, sha256: SHA('c') } };
  const start = `<didl:DIDL xmlns:didl="${DIDL_NS}"><!-- kept --><didl:Item>\n  <didl:Component><didl:Resource mimeType="image/png" encoding="base64">`;
  const end = '</didl:Resource></didl:Component>\n</didl:Item></didl:DIDL>';
  const received: ReceivedDidl = { parts: [Buffer.from(start), resource, Buffer.from(end)] };
  const xml = receivedDidlXml(received, (r) => (r === resource ? { path: 'data/example.org/x.png', sha256: SHA('c') } : undefined));
  assert.equal(
    xml.toString('utf8'),
    `${start}<oaibag:byValue xmlns:oaibag="${AIP_NAMESPACE}" path="data/example.org/x.png" size="4" sha256="${SHA('c')}"/>${end}`,
  );
  const result = validateXmlSchema('didl.xsd', xml, 'received didl');
  assert.ok(result.ok, result.output);
  // A revisit names the bag that holds the bytes.
  const revisit = receivedDidlXml(received, () => ({ path: 'data/example.org/x.png', bag: EARLIER, sha256: SHA('c') }));
  assert.match(revisit.toString('utf8'), new RegExp(`<oaibag:byValue xmlns:oaibag="${AIP_NAMESPACE}" bag="${EARLIER}" path="data/example.org/x.png" size="4"`));
});

/** A compound record: part 1 new in this bag (By-Value), part 2 a revisit of bytes fetched By-Reference through a redirect. */
function compoundRecord(): StoredRecordFacts {
  return {
    kind: 'version',
    identifier: HOSTILE,
    datestamp: '2024-01-01T00:00:00Z',
    sha256: SHA('9'),
    size: 12,
    mimeType: 'text/plain',
    lastModified: 'Mon, 01 Jan 2024 00:00:00 GMT',
    payloads: [
      {
        part: 1,
        path: 'data/example.org/say "a" & <b>.txt',
        size: 5,
        sha256: SHA('a'),
        sha512: 'f'.repeat(128),
        via: 'by-value',
        promisedSha256: SHA('a'),
      },
      {
        part: 2,
        path: 'data/example.org/old.txt',
        revisitOf: EARLIER,
        size: 7,
        sha256: SHA('b'),
        via: 'by-reference',
        fetched: { ref: 'http://example.org/p?a=1&b=2', url: 'https://example.org/p2', redirects: ['https://example.org/p2'] },
      },
    ],
    headerXml: Buffer.from(
      `<header xmlns="http://www.openarchives.org/OAI/2.0/"><identifier>${HOSTILE.replace(/&/g, '&amp;').replace(/</g, '&lt;')}</identifier><datestamp>2024-01-01T00:00:00Z</datestamp></header>`,
    ),
    didlXml: Buffer.from(`<didl:DIDL xmlns:didl="${DIDL_NS}"><didl:Item/></didl:DIDL>`),
  };
}

const TOMBSTONE: DeletedRecordFacts = {
  kind: 'deletion',
  identifier: 'oai:example.org:gone',
  datestamp: '2024-01-02T00:00:00Z',
  headerXml: Buffer.from(
    '<header xmlns="http://www.openarchives.org/OAI/2.0/" status="deleted"><identifier>oai:example.org:gone</identifier><datestamp>2024-01-02T00:00:00Z</datestamp></header>',
  ),
};

const METADATA_ONLY: StoredRecordFacts = {
  kind: 'version',
  identifier: 'oai:example.org:item',
  datestamp: '2024-01-03T00:00:00Z',
  sha256: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
  size: 0,
  mimeType: null,
  lastModified: null,
  payloads: [],
  headerXml: Buffer.from(
    '<header xmlns="http://www.openarchives.org/OAI/2.0/"><identifier>oai:example.org:item</identifier><datestamp>2024-01-03T00:00:00Z</datestamp></header>',
  ),
  didlXml: Buffer.from(`<didl:DIDL xmlns:didl="${DIDL_NS}"><didl:Item/></didl:DIDL>`),
};

async function folder(t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'oaibag-aip-metadata-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

test('records.xml holds the records in order, header and DIDL as received, and the bag reader gets every fact back', async (t) => {
  const records: BatchRecordFacts[] = [compoundRecord(), TOMBSTONE, METADATA_ONLY];
  const head = recordsHead({ baseUrl: 'https://example.org/oai?a=1&b=2', harvestId: 2, bagPath: BAG });
  const pieces = records.map((facts, index) => recordXml(index + 1, facts));
  const xml = Buffer.concat([Buffer.from(head), ...pieces, Buffer.from(RECORDS_TAIL)]);
  const check = checkWellFormed(xml, 'records.xml');
  assert.ok(check.ok, check.output);

  const parsed = elements(xml);
  const root = parsed[0]!;
  assert.deepEqual(
    [root.uri, root.local, root.attributes],
    [AIP_NAMESPACE, 'records', { xmlns: AIP_NAMESPACE, source: 'https://example.org/oai?a=1&b=2', harvest: '2', bag: BAG }],
  );
  assert.deepEqual(
    parsed.filter((element) => element.depth === 1).map((element) => [element.local, element.attributes.n, element.attributes.identifier]),
    [
      ['record', '1', HOSTILE],
      ['deleted', '2', 'oai:example.org:gone'],
      ['record', '3', 'oai:example.org:item'],
    ],
  );
  // The header and the DIDL are the bytes received, inside their record.
  const text = xml.toString('utf8');
  const first = pieces[0]!.toString('utf8');
  assert.ok(first.includes(records[0]!.headerXml.toString()) && first.includes((records[0] as StoredRecordFacts).didlXml.toString()));
  assert.ok(pieces[1]!.toString('utf8').includes(TOMBSTONE.headerXml.toString()));
  const revisit = parsed.find((element) => element.local === 'revisit')!;
  assert.deepEqual(revisit.attributes, {
    part: '2',
    bag: EARLIER,
    path: 'data/example.org/old.txt',
    size: '7',
    sha256: SHA('b'),
    via: 'by-reference',
  });
  const payload = parsed.find((element) => element.local === 'payload')!;
  assert.equal(payload.attributes.sha512, 'f'.repeat(128), 'a payload new in this bag carries both digests');
  assert.equal(parsed.filter((element) => element.uri === 'http://www.openarchives.org/OAI/2.0/' && element.local === 'header').length, 3);
  assert.equal(parsed.filter((element) => element.uri === DIDL_NS && element.local === 'DIDL').length, 2, 'a tombstone has no DIDL');
  assert.doesNotMatch(text, /<\?xml[^>]*\?>[\s\S]*<\?xml/, 'one XML declaration');

  // Written as a bag writes it (one gzip member per page), the reader reindex uses gets it all back.
  const bag = await folder(t);
  await mkdir(join(bag, 'metadata'));
  await writeFile(
    join(bag, ...RECORDS_FILE.split('/')),
    Buffer.concat([gzipSync(head), gzipSync(Buffer.concat(pieces.slice(0, 2))), gzipSync(pieces[2]!), gzipSync(RECORDS_TAIL)]),
  );
  assert.deepEqual(await readBatchRecords(bag), [
    {
      kind: 'version',
      n: 1,
      identifier: HOSTILE,
      datestamp: '2024-01-01T00:00:00Z',
      sha256: SHA('9'),
      size: 12,
      mimeType: 'text/plain',
      lastModified: 'Mon, 01 Jan 2024 00:00:00 GMT',
      payloads: [
        { part: 1, path: 'data/example.org/say "a" & <b>.txt', size: 5, sha256: SHA('a'), sha512: 'f'.repeat(128), via: 'by-value' },
        {
          part: 2,
          path: 'data/example.org/old.txt',
          revisitOf: EARLIER,
          size: 7,
          sha256: SHA('b'),
          via: 'by-reference',
          fetched: { ref: 'http://example.org/p?a=1&b=2', url: 'https://example.org/p2', redirects: ['https://example.org/p2'] },
        },
      ],
    },
    { kind: 'deletion', n: 2, identifier: 'oai:example.org:gone', datestamp: '2024-01-02T00:00:00Z' },
    {
      kind: 'version',
      n: 3,
      identifier: 'oai:example.org:item',
      datestamp: '2024-01-03T00:00:00Z',
      sha256: METADATA_ONLY.sha256,
      size: 0,
      mimeType: null,
      lastModified: null,
      payloads: [],
    },
  ]);
});

test('premis.xml: the new payload files as objects, then each record’s events, then the agent; well-formed, escaped, ids unique', () => {
  const agent = 'oaibag archiver <test> & co';
  const context: EventContext = { baseUrl: 'https://example.org/oai?a=1&b=2', idPrefix: 'h2-b3', at: '2024-01-04T00:00:00.000Z', agent };
  const compound = compoundRecord();
  const { promisedSha256: _promised, ...unpromised } = compound.payloads[0]!;
  const noPromise: StoredRecordFacts = { ...compound, payloads: [unpromised] };
  const xml =
    premisHead() +
    premisObjectXml({ path: 'data/example.org/say "a" & <b>.txt', size: 5, sha256: SHA('a'), sha512: 'f'.repeat(128) }) +
    recordEventsXml(1, compound, context) +
    recordEventsXml(2, TOMBSTONE, context) +
    recordEventsXml(3, METADATA_ONLY, context) +
    recordEventsXml(4, noPromise, context) +
    premisTail(agent);
  const check = checkWellFormed(xml, 'premis.xml');
  assert.ok(check.ok, check.output);
  const parsed = elements(xml);
  assert.ok(
    parsed.every((element) => element.uri === PREMIS_NS),
    'every element is PREMIS 3',
  );
  assert.deepEqual([parsed[0]!.local, parsed[0]!.attributes.version], ['premis', '3.0']);
  // PREMIS wants objects, then events, then agents.
  const top = parsed.filter((element) => element.depth === 1).map((element) => element.local);
  assert.deepEqual(top, ['object', 'event', 'event', 'event', 'event', 'event', 'event', 'event', 'event', 'event', 'event', 'agent']);
  const object = parsed.find((element) => element.local === 'object')!;
  assert.equal(object.attributes['xsi:type'], 'premis:file');
  const values = (local: string) => parsed.filter((element) => element.local === local).map((element) => element.text);
  assert.deepEqual(values('objectIdentifierValue'), ['data/example.org/say "a" & <b>.txt']);
  assert.deepEqual(values('messageDigest'), [SHA('a'), 'f'.repeat(128)]);
  assert.deepEqual(values('messageDigestAlgorithm'), ['SHA-256', 'SHA-512']);
  assert.deepEqual(values('size'), ['5']);
  assert.deepEqual(values('eventType'), [
    'capture',
    'fixity check',
    'ingestion',
    'capture',
    'deletion',
    'capture',
    'ingestion',
    'capture',
    'fixity check',
    'ingestion',
  ]);
  const ids = values('eventIdentifierValue');
  assert.equal(new Set(ids).size, ids.length, 'event identifiers are unique');
  assert.deepEqual(ids.slice(0, 4), ['h2-b3-r1-e1', 'h2-b3-r1-e2', 'h2-b3-r1-e3', 'h2-b3-r2-e1']);
  assert.ok(values('eventDateTime').every((at) => at === context.at));
  assert.ok(values('eventOutcome').every((outcome) => outcome === 'success'));
  assert.ok(values('linkingAgentIdentifierValue').every((value) => value === agent));
  assert.deepEqual(values('agentName'), [agent]);

  const details = values('eventDetail');
  // Record 1: captured with its redirect, part 1 checked against the record's digest, part 2 against the bytes held; both linked.
  assert.match(
    details[0]!,
    /^record 1 \(https:\/\/example\.org\/say "a" & <b>\.txt, datestamp 2024-01-01T00:00:00Z\) harvested from https:\/\/example\.org\/oai\?a=1&b=2/,
  );
  assert.match(details[0]!, /part 1 by-value, part 2 by-reference http:\/\/example\.org\/p\?a=1&b=2 -> https:\/\/example\.org\/p2/);
  assert.equal(details[1], `part 1 sha-256 ${SHA('a')} equal to the record's digest; part 2 sha-256 ${SHA('b')} equal to the held payload`);
  assert.equal(details[2], `part 1 stored as data/example.org/say "a" & <b>.txt; part 2 already held at ${EARLIER}/data/example.org/old.txt (revisit)`);
  const firstEvent = xml.slice(xml.indexOf('<premis:event>'), xml.indexOf('</premis:event>'));
  const linked = elements(`<x xmlns:premis="${PREMIS_NS}">${firstEvent}</premis:event></x>`).filter((element) =>
    element.local.startsWith('linkingObjectIdentifier'),
  );
  assert.deepEqual(
    linked.filter((element) => element.local !== 'linkingObjectIdentifier').map((element) => element.text),
    ['bag-path', 'data/example.org/say "a" & <b>.txt', 'archive-path', `${EARLIER}/data/example.org/old.txt`],
  );
  // Record 2, a tombstone; record 3, metadata only; record 4, a digest computed on receipt.
  assert.match(details[4]!, /^record 2 \(oai:example\.org:gone, datestamp 2024-01-02T00:00:00Z\): the repository reports it deleted/);
  assert.match(details[5]!, /no datastream \(metadata only\)$/);
  assert.equal(details[8], `part 1 sha-256 ${SHA('a')} computed on receipt (the record carried none)`);
});
