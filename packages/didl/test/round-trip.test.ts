import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { test } from 'node:test';
import { type DidlWriteInput, type HttpHeader, type ReadRecord, readDidl } from '../src/index.ts';
import { chunked, collect, sha256, validateWithSchema, writeToString } from './helpers.ts';

interface RoundTrip {
  xml: string;
  record: ReadRecord;
  bytes: Buffer[];
}

async function roundTrip(input: DidlWriteInput, chunkSize = 64 * 1024): Promise<RoundTrip> {
  const xml = await writeToString(input);
  const records: ReadRecord[] = [];
  const bytes: Buffer[] = [];
  await readDidl(chunked(Buffer.from(xml, 'utf8'), chunkSize), {
    onRecord: (record) => {
      records.push(record);
    },
    onDatastream: async (datastream) => {
      bytes.push(await collect(datastream.bytes));
    },
  });
  assert.equal(records.length, 1);
  return { xml, record: records[0]!, bytes };
}

function fileRecord(identifier: string, payload: Buffer, extraHeaders: HttpHeader[] = []): DidlWriteInput {
  return {
    identifier,
    headers: [{ name: 'Content-Type', value: 'application/octet-stream' }, { name: 'Content-Length', value: String(payload.length) }, ...extraHeaders],
    components: [
      {
        mimeType: 'application/octet-stream',
        ref: identifier,
        digest: { algorithm: 'SHA-256', value: sha256(payload) },
        byValue: Readable.from([payload]),
      },
    ],
  };
}

const cases: Array<[string, Buffer]> = [
  ['an empty file', Buffer.alloc(0)],
  ['one byte', Buffer.from([0xff])],
  ['two bytes', Buffer.from([0, 1])],
  ['every byte value', Buffer.from(Array.from({ length: 256 }, (_, i) => i))],
  ['a line of exactly 57 bytes', randomBytes(57)],
];

for (const [name, payload] of cases) {
  test(`round trip keeps the bytes of ${name}`, async () => {
    const { record, bytes, xml } = await roundTrip(fileRecord('http://example.org/file.bin', payload));
    assert.equal(bytes.length, 1);
    assert.ok(bytes[0]!.equals(payload));
    const resource = record.didl!.item.components[0]!.resources[1]!;
    assert.deepEqual(resource.byValue, { encoding: 'base64', size: payload.length, sha256: sha256(payload) });
    assert.ok(validateWithSchema(xml, 'didl.xsd').ok);
  });
}

test('round trip of a 10 MB file, read in odd-sized chunks', async () => {
  const payload = randomBytes(10 * 1024 * 1024);
  const { record, bytes, xml } = await roundTrip(fileRecord('http://example.org/big.bin', payload), 65_537);
  assert.ok(bytes[0]!.equals(payload));
  assert.equal(record.didl!.item.components[0]!.resources[1]!.byValue!.sha256, sha256(payload));
  // 76-column lines: no base64 line grows with the file.
  const longest = xml.split('\n').reduce((max, line) => Math.max(max, line.length), 0);
  assert.ok(longest < 1000, `longest line is ${longest} characters`);
});

test('round trip keeps an identifier with odd Unicode and reserved characters', async () => {
  const identifier = 'http://example.org/caf\u00e9/\u{1F600} \u05e9\u05dc\u05d5\u05dd/a&b<c>"d\'?q=1&r=\u00e9#frag';
  const payload = Buffer.from('x');
  const { record, xml } = await roundTrip(fileRecord(identifier, payload));
  assert.equal(record.didl!.identifier, identifier);
  assert.equal(record.didl!.item.components[0]!.resources[0]!.ref, identifier);
  assert.ok(validateWithSchema(xml, 'didl.xsd').ok);
});

test('round trip keeps a long header list in order, repeats included', async () => {
  const headers: HttpHeader[] = [];
  for (let i = 0; i < 500; i++) headers.push({ name: i % 50 === 0 ? 'Set-Cookie' : `X-Header-${i}`, value: `value ${i} with <angle> & "quotes"` });
  headers.push({ name: "X-Odd!#$%&'*+^`|~", value: 'token characters that are not XML names' });
  const payload = Buffer.from('hello');
  const { record } = await roundTrip(fileRecord('http://example.org/h', payload, headers));
  const got = record.didl!.item.headers!;
  assert.deepEqual(got.slice(2), headers);
  assert.equal(got.filter((h) => h.name === 'Set-Cookie').length, 10);
});

test('round trip keeps unknown Descriptors as XML', async () => {
  const dc =
    '<didl:Descriptor xmlns:didl="urn:mpeg:mpeg21:2002:02-DIDL-NS"><didl:Statement mimeType="application/xml">' +
    '<oai_dc:dc xmlns:oai_dc="http://www.openarchives.org/OAI/2.0/oai_dc/" xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>T &amp; U</dc:title></oai_dc:dc>' +
    '</didl:Statement></didl:Descriptor>';
  const input = { ...fileRecord('http://example.org/d', Buffer.from('d')), descriptors: [dc] };
  const first = await roundTrip(input);
  const kept = first.record.didl!.item.descriptors;
  assert.equal(kept.length, 1);
  assert.match(kept[0]!, /<dc:title>T &amp; U<\/dc:title>/);
  assert.match(kept[0]!, /xmlns:dc="http:\/\/purl.org\/dc\/elements\/1.1\/"/);
  // Written again and read again: the same XML comes back.
  const second = await roundTrip({ ...fileRecord('http://example.org/d', Buffer.from('d')), descriptors: kept });
  assert.deepEqual(second.record.didl!.item.descriptors, kept);
  assert.ok(validateWithSchema(second.xml, 'didl.xsd').ok);
});

test('a By-Reference only document validates and reads back without datastreams', async () => {
  const { record, bytes, xml } = await roundTrip({
    identifier: 'https://example.org/only-ref.pdf',
    headers: [{ name: 'Content-Type', value: 'application/pdf' }],
    components: [{ mimeType: 'application/pdf', ref: 'https://example.org/only-ref.pdf' }],
  });
  assert.equal(bytes.length, 0);
  assert.deepEqual(record.didl!.item.components[0]!.resources, [{ mimeType: 'application/pdf', ref: 'https://example.org/only-ref.pdf' }]);
  assert.ok(validateWithSchema(xml, 'didl.xsd').ok, 'schema');
});

test('writer output without the XML declaration embeds in an OAI-PMH response that validates', async () => {
  const payload = Buffer.from('<p>hi</p>');
  const didl = await writeToString(fileRecord('http://example.org/p.html', payload), { xmlDeclaration: false });
  const page =
    '<?xml version="1.0" encoding="UTF-8"?>\n' +
    '<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"' +
    ' xsi:schemaLocation="http://www.openarchives.org/OAI/2.0/ http://www.openarchives.org/OAI/2.0/OAI-PMH.xsd">' +
    '<responseDate>2026-11-22T00:00:00Z</responseDate><request verb="GetRecord">http://example.org/oai</request>' +
    '<GetRecord><record><header><identifier>http://example.org/p.html</identifier><datestamp>2026-11-22T00:00:00Z</datestamp>' +
    '<setSpec>mime:text:html</setSpec></header><metadata>' +
    didl +
    '</metadata></record></GetRecord></OAI-PMH>';
  const result = validateWithSchema(page, 'OAI-PMH-with-payloads.xsd');
  assert.ok(result.ok, result.output);
  const records: ReadRecord[] = [];
  await readDidl([Buffer.from(page)], { onRecord: (r) => void records.push(r) });
  assert.equal(records[0]!.header!.setSpecs[0], 'mime:text:html');
  assert.equal(records[0]!.didl!.item.components[0]!.resources[1]!.byValue!.size, payload.length);
});
