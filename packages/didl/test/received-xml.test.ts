/**
 * keepReceivedXml: each record's DIDL element handed over byte for byte as it arrived, with
 * the base64 of each By-Value Resource left out and marked, whatever the chunking.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { NS, type ReadRecord, readDidl } from '../src/index.ts';

const sha256 = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');

const FIRST = Buffer.from('first datastream, a little longer than one line of base64 text. '.repeat(3));
const SECOND = Buffer.from([0, 1, 2, 250, 251, 252]);

/** base64 in 76-character lines, CRLF ends, one line end written as a character reference. */
function base64Content(bytes: Buffer): string {
  const lines = bytes.toString('base64').match(/.{1,76}/g)!;
  return `\r\n${lines.join('&#13;&#10;')}\r\n`;
}

// The first record relies on prefixes declared by the envelope (didl, dii) and on its default
// namespace (the unprefixed <note>); it has a comment, CRLF line ends, an attribute holding '>'
// and an entity reference inside base64 (which sends that content through sax).
const RECORD_1 =
  '<didl:DIDL DIDLDocumentId="a>b">\r\n' +
  '  <!-- kept as it came -->\r\n' +
  '  <didl:Item>\r\n' +
  '    <didl:Descriptor><didl:Statement mimeType="application/xml"><dii:Identifier>http://example.org/a.txt</dii:Identifier></didl:Statement></didl:Descriptor>\r\n' +
  '    <didl:Descriptor><didl:Statement mimeType="text/plain"><note   lang = \'en\' >x &amp; y</note></didl:Statement></didl:Descriptor>\r\n' +
  '    <didl:Component>\r\n' +
  `      <didl:Resource mimeType="text/plain" encoding="base64">${base64Content(FIRST)}</didl:Resource>\r\n` +
  '    </didl:Component>\r\n' +
  '  </didl:Item>\r\n' +
  '</didl:DIDL>';
// The second declares its own namespaces (those in scope from the envelope are added all the
// same: they are part of what it meant there) and carries an empty By-Value Resource, self-closed.
const RECORD_2 =
  `<d:DIDL xmlns:d="${NS.didl}" xmlns:i="${NS.dii}"><d:Item>` +
  '<d:Descriptor><d:Statement mimeType="application/xml"><i:Identifier>http://example.org/b.bin</i:Identifier></d:Statement></d:Descriptor>' +
  `<d:Component><d:Resource mimeType="application/octet-stream" encoding="base64">${SECOND.toString('base64')}</d:Resource></d:Component>` +
  '<d:Component><d:Resource mimeType="application/octet-stream" encoding="base64"/></d:Component>' +
  '</d:Item></d:DIDL>';

const HEADER_1 =
  '<header >\r\n <identifier>http://example.org/a.txt</identifier><!-- c --><datestamp>2026-11-23T00:00:00Z</datestamp>\r\n <setSpec>text</setSpec></header >';
// Two about containers: OAI-rights relying on the envelope's default namespace for `about`,
// and provenance with its own; both are kept byte for byte, in order.
const ABOUT_1 =
  '<about>\r\n<rights xmlns="http://www.openarchives.org/OAI/2.0/rights/"><rightsReference ref="http://example.org/rights.xml"/></rights></about>';
const ABOUT_2 =
  '<about ><provenance xmlns="http://www.openarchives.org/OAI/2.0/provenance"><originDescription harvestDate="2026-11-20T00:00:00Z" altered="false">' +
  '<baseURL>http://other.example/oai</baseURL><identifier>x</identifier><datestamp>2026-11-19</datestamp>' +
  '<metadataNamespace>urn:x</metadataNamespace></originDescription></provenance></about>';
const ENVELOPE_NAMESPACES = ` xmlns="${NS.oai}" xmlns:didl="${NS.didl}" xmlns:dii="${NS.dii}"`;
const PAGE = Buffer.from(
  '<?xml version="1.0" encoding="UTF-8"?>\n' +
    `<OAI-PMH${ENVELOPE_NAMESPACES}><responseDate>2026-11-23T00:00:00Z</responseDate>` +
    '<request verb="ListRecords" metadataPrefix="oai_didl">http://example.org/oai</request><ListRecords>\n' +
    `<record>${HEADER_1}<metadata>${RECORD_1}</metadata>${ABOUT_1}\n${ABOUT_2}</record>\n` +
    `<record><header><identifier>http://example.org/b.bin</identifier><datestamp>2026-11-23T00:00:00Z</datestamp></header><metadata>${RECORD_2}</metadata></record>\n` +
    '</ListRecords></OAI-PMH>\n',
  'utf8',
);

/** What each record's kept DIDL must read as, with `{size sha256}` where a By-Value content was. */
const EXPECTED = [
  RECORD_1.replace('<didl:DIDL DIDLDocumentId="a>b"', `<didl:DIDL DIDLDocumentId="a>b"${ENVELOPE_NAMESPACES}`).replace(
    base64Content(FIRST),
    `{${FIRST.length} ${sha256(FIRST)}}`,
  ),
  RECORD_2.replace(`xmlns:i="${NS.dii}">`, `xmlns:i="${NS.dii}"${ENVELOPE_NAMESPACES}>`)
    .replace(SECOND.toString('base64'), `{${SECOND.length} ${sha256(SECOND)}}`)
    .replace('encoding="base64"/>', `encoding="base64">{0 ${sha256(Buffer.alloc(0))}}</d:Resource>`),
];

/** What the first record's kept header must read as. */
const EXPECTED_HEADER_1 = HEADER_1.replace('<header >', `<header ${ENVELOPE_NAMESPACES}>`);
const EXPECTED_ABOUT_1 = [ABOUT_1.replace('<about>', `<about${ENVELOPE_NAMESPACES}>`), ABOUT_2.replace('<about >', `<about ${ENVELOPE_NAMESPACES}>`)];

function shown(record: ReadRecord): string | undefined {
  return record.receivedDidl?.parts
    .map((part) => (part instanceof Uint8Array ? Buffer.from(part).toString('utf8') : `{${part.byValue!.size} ${part.byValue!.sha256}}`))
    .join('');
}

async function readKept(chunks: Buffer[]): Promise<Array<string | undefined>> {
  const kept: Array<string | undefined> = [];
  await readDidl(chunks, {
    keepReceivedXml: true,
    onDatastream: (datastream) => void datastream.bytes.resume(),
    onRecord: (record) => {
      assert.equal(record.error, undefined);
      kept.push(shown(record));
      if (record.header?.identifier.endsWith('a.txt')) {
        assert.equal(Buffer.from(record.receivedHeader ?? []).toString('utf8'), EXPECTED_HEADER_1);
        assert.deepEqual(
          (record.receivedAbout ?? []).map((about) => Buffer.from(about).toString('utf8')),
          EXPECTED_ABOUT_1,
        );
      } else {
        assert.equal(record.receivedAbout, undefined);
      }
    },
  });
  return kept;
}

test('the header, DIDL and about containers of each record as received: envelope namespaces added, base64 marked, everything else byte for byte', async () => {
  assert.deepEqual(await readKept([PAGE]), EXPECTED);
});

test('the same bytes whatever the chunking: split at every position, and one byte at a time', async () => {
  for (let at = 1; at < PAGE.length; at++) {
    assert.deepEqual(await readKept([PAGE.subarray(0, at), PAGE.subarray(at)]), EXPECTED, `split at ${at}`);
  }
  assert.deepEqual(await readKept([...PAGE].map((byte) => Buffer.from([byte]))), EXPECTED, 'one byte a chunk');
});

test('not asked for: no receivedDidl', async () => {
  await readDidl([PAGE], {
    onDatastream: (datastream) => void datastream.bytes.resume(),
    onRecord: (record) => {
      assert.equal(record.receivedDidl, undefined);
      assert.equal(record.receivedHeader, undefined);
      assert.equal(record.receivedAbout, undefined);
    },
  });
});

test('more than 16 MiB of markup in one record: not kept (the caller writes the DIDL again), the record still read', async () => {
  const descriptor = `<didl:Descriptor><didl:Statement mimeType="text/plain">${'m'.repeat(1 << 20)}</didl:Statement></didl:Descriptor>`;
  const big = RECORD_1.replace('<didl:Component>', `${descriptor.repeat(17)}<didl:Component>`);
  const page = Buffer.from(PAGE.toString('utf8').replace(RECORD_1, big), 'utf8');
  const kept = await readKept([page]);
  assert.deepEqual(kept, [undefined, EXPECTED[1]]);
});
