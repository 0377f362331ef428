import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { canonicalXml } from '../../../test/xml-schema.ts';
import { isDidlError, readDidl } from '../src/index.ts';
import { sha256 } from './helpers.ts';
import {
  assertDecoded,
  base64Lines,
  bytesOf,
  byValueDoc,
  DC,
  DIDL,
  DII,
  ENTITY_METADATA,
  fixity,
  HTTP,
  OAI_DC,
  OUR_NS,
  PREMIS,
  parseStrict,
  ragged,
  readOne,
  rejectsWith,
  split,
} from './read-helpers.ts';

// 1. Our own profile ---------------------------------------------------------------------------

function ownProfile(payload: Buffer, length = String(payload.length), digest = sha256(payload).toUpperCase()): string {
  const id = 'http://www.example.org/papers/a.pdf';
  return `<?xml version="1.0" encoding="UTF-8"?>
<didl:DIDL ${OUR_NS} DIDLDocumentId="doc-1">
  <didl:Item>
    <didl:Descriptor>
      <didl:Statement mimeType="application/xml"><dii:Identifier>${id}</dii:Identifier></didl:Statement>
    </didl:Descriptor>
    <didl:Descriptor>
      <didl:Statement mimeType="application/xml"><http:header>
        <http:Content-Type>application/pdf</http:Content-Type>
        <http:Content-Length>${length}</http:Content-Length>
        <http:Link>&lt;/a&gt;; rel="first"</http:Link>
        <http:Link>&lt;/b&gt;; rel="second"</http:Link>
        <http:field name="X-Odd!">  odd value  </http:field>
      </http:header></didl:Statement>
    </didl:Descriptor>
    <didl:Component>
      <didl:Descriptor>
        <didl:Statement mimeType="application/xml"><premis:fixity>
          <premis:messageDigestAlgorithm>SHA-256</premis:messageDigestAlgorithm>
          <premis:messageDigest>${digest}</premis:messageDigest>
        </premis:fixity></didl:Statement>
      </didl:Descriptor>
      <didl:Resource mimeType="application/pdf" ref="${id}"/>
      <didl:Resource mimeType="application/pdf" encoding="base64">
${base64Lines(payload)}
      </didl:Resource>
    </didl:Component>
  </didl:Item>
</didl:DIDL>
`;
}

test('our own profile: identifier, headers in order with repeats, component digest, By-Reference and By-Value', async () => {
  const payload = Buffer.concat([Buffer.from('%PDF-1.7\n'), bytesOf(1000)]);
  const result = await readOne(ownProfile(payload));
  const { didl, summary } = result;
  assert.deepEqual(summary, { kind: 'didl', records: 1, page: { errors: [] } });
  assert.equal(didl.identifier, 'http://www.example.org/papers/a.pdf');
  assert.equal(didl.documentId, 'doc-1');
  assert.equal(didl.item.identifier, didl.identifier);
  assert.deepEqual(didl.item.headers, [
    { name: 'Content-Type', value: 'application/pdf' },
    { name: 'Content-Length', value: String(payload.length) },
    { name: 'Link', value: '</a>; rel="first"' },
    { name: 'Link', value: '</b>; rel="second"' },
    { name: 'X-Odd!', value: 'odd value' },
  ]);
  assert.equal(didl.item.digest, undefined);
  assert.deepEqual(didl.item.descriptors, []);
  assert.deepEqual(didl.item.items, []);
  assert.equal(didl.item.components.length, 1);
  const component = didl.item.components[0]!;
  assert.deepEqual(component.digest, { algorithm: 'SHA-256', value: sha256(payload) });
  assert.equal(component.headers, undefined);
  assert.deepEqual(component.descriptors, []);
  assert.deepEqual(component.resources, [
    { mimeType: 'application/pdf', ref: 'http://www.example.org/papers/a.pdf' },
    { mimeType: 'application/pdf', byValue: { encoding: 'base64', size: payload.length, sha256: sha256(payload) } },
  ]);
  assert.deepEqual(result.streams[0]!.info, {
    identifier: 'http://www.example.org/papers/a.pdf',
    itemPath: [],
    componentIndex: 0,
    resourceIndex: 1,
    mimeType: 'application/pdf',
    promisedSha256: sha256(payload),
  });
  assertDecoded(result, payload, 'own profile');
});

test('our own profile: the declared Content-Length and digest are checked against the bytes', async () => {
  const payload = bytesOf(300);
  await rejectsWith(ownProfile(payload, String(payload.length + 1)), 'ERR_DIDL_LENGTH_MISMATCH');
  await rejectsWith(ownProfile(payload, undefined, sha256(Buffer.from('other'))), 'ERR_DIDL_DIGEST_MISMATCH');
});

// 2. aDORe / LANL: headers in a nested metadata Item -------------------------------------------

const metadataMarker = `<didl:Descriptor><didl:Statement mimeType="application/xml"><dc:type xmlns:dc="${DC}">${ENTITY_METADATA}</dc:type></didl:Statement></didl:Descriptor>`;

function adoreStatementDoc(payload: Buffer, length = payload.length): string {
  return `<didl:DIDL xmlns:didl="${DIDL}" DIDLDocumentId="info:lanl-repo/ds/5b1f">
  <didl:Item>
    <didl:Descriptor><didl:Statement mimeType="application/xml"><dii:Identifier xmlns:dii="${DII}">http://www.example.org/a.pdf</dii:Identifier></didl:Statement></didl:Descriptor>
    <didl:Component>
      <didl:Resource mimeType="application/pdf" encoding="base64">${base64Lines(payload)}</didl:Resource>
    </didl:Component>
    <didl:Item>
      <didl:Descriptor><didl:Statement mimeType="application/xml"><dii:Identifier xmlns:dii="${DII}">info:lanl-repo/ds/5b1f/meta</dii:Identifier></didl:Statement></didl:Descriptor>
      ${metadataMarker}
      <didl:Descriptor><didl:Statement mimeType="application/xml"><http:header xmlns:http="${HTTP}">
        <http:Content-Type>application/pdf</http:Content-Type>
        <http:Content-Length>${length}</http:Content-Length>
        <http:Set-Cookie>a=1</http:Set-Cookie>
        <http:Set-Cookie>b=2</http:Set-Cookie>
      </http:header></didl:Statement></didl:Descriptor>
      <didl:Descriptor><didl:Statement mimeType="application/xml"><premis:fixity xmlns:premis="${PREMIS}"><premis:messageDigestAlgorithm>sha256</premis:messageDigestAlgorithm><premis:messageDigest>${sha256(payload)}</premis:messageDigest></premis:fixity></didl:Statement></didl:Descriptor>
      <didl:Descriptor><didl:Statement mimeType="text/plain">harvested by aDORe</didl:Statement></didl:Descriptor>
    </didl:Item>
  </didl:Item>
</didl:DIDL>`;
}

test('aDORe style: http_header in a Statement of a nested metadata Item goes to the top Item', async () => {
  const payload = bytesOf(500, 2);
  const result = await readOne(adoreStatementDoc(payload));
  const { item } = result.didl;
  assert.equal(result.didl.identifier, 'http://www.example.org/a.pdf');
  assert.equal(result.didl.documentId, 'info:lanl-repo/ds/5b1f');
  assert.deepEqual(item.headers, [
    { name: 'Content-Type', value: 'application/pdf' },
    { name: 'Content-Length', value: String(payload.length) },
    { name: 'Set-Cookie', value: 'a=1' },
    { name: 'Set-Cookie', value: 'b=2' },
  ]);
  assert.deepEqual(item.digest, { algorithm: 'sha256', value: sha256(payload) });
  assert.deepEqual(item.items, [], 'the metadata Item is not listed');
  assert.equal(item.descriptors.length, 1, "the metadata Item's other Descriptors are kept on the parent");
  assert.match(item.descriptors[0]!, /harvested by aDORe/);
  assert.deepEqual(result.streams[0]!.info.itemPath, []);
  assertDecoded(result, payload, 'aDORe');
  // The folded Content-Length is the one checked.
  await rejectsWith(adoreStatementDoc(payload, payload.length - 1), 'ERR_DIDL_LENGTH_MISMATCH');
});

test('aDORe style: http_header inline in a Resource of the nested metadata Item goes to the top Item', async () => {
  const payload = Buffer.from('<html><body>caf\u00e9</body></html>\n');
  const xml = `<didl:DIDL xmlns:didl="${DIDL}" xmlns:dii="${DII}">
  <didl:Item>
    <didl:Descriptor><didl:Statement mimeType="application/xml"><dii:Identifier>http://www.example.org/index.html</dii:Identifier></didl:Statement></didl:Descriptor>
    <didl:Item>
      ${metadataMarker}
      <didl:Component>
        <didl:Resource mimeType="application/xml"><http:header xmlns:http="${HTTP}"><http:Content-Type>text/html; charset=utf-8</http:Content-Type><http:Content-Length>${payload.length}</http:Content-Length><http:Vary>Accept</http:Vary><http:Vary>Cookie</http:Vary></http:header></didl:Resource>
      </didl:Component>
    </didl:Item>
    <didl:Component>
      <didl:Resource mimeType="text/html" ref="http://www.example.org/index.html"/>
      <didl:Resource mimeType="text/html" encoding="base64">${base64Lines(payload)}</didl:Resource>
    </didl:Component>
  </didl:Item>
</didl:DIDL>`;
  const result = await readOne(xml);
  const { item } = result.didl;
  assert.deepEqual(item.headers, [
    { name: 'Content-Type', value: 'text/html; charset=utf-8' },
    { name: 'Content-Length', value: String(payload.length) },
    { name: 'Vary', value: 'Accept' },
    { name: 'Vary', value: 'Cookie' },
  ]);
  assert.deepEqual(item.items, []);
  assert.equal(item.components.length, 1, "the metadata Item's Component is not the top Item's");
  assert.deepEqual(result.streams[0]!.info, {
    identifier: 'http://www.example.org/index.html',
    itemPath: [],
    componentIndex: 0,
    resourceIndex: 1,
    mimeType: 'text/html',
  });
  assertDecoded(result, payload, 'aDORe inline');
  await rejectsWith(xml.replace(`<http:Content-Length>${payload.length}<`, '<http:Content-Length>1<'), 'ERR_DIDL_LENGTH_MISMATCH');
});

// 3. DSpace DIDL plug-in: By-Reference only, nested Items ----------------------------------------

test('DSpace style: By-Reference Resources in nested Items, no datastream delivered', async () => {
  const xml = `<?xml version="1.0" encoding="UTF-8"?>
<didl:DIDL xmlns:didl="${DIDL}" xmlns:dii="${DII}" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:schemaLocation="${DIDL} http://standards.iso.org/ittf/PubliclyAvailableStandards/MPEG-21_schema_files/did/didl.xsd" DIDLDocumentId="urn:hdl:1234/56">
  <didl:Item id="uuid-a1">
    <didl:Descriptor><didl:Statement mimeType="application/xml"><dii:Identifier>urn:hdl:1234/56</dii:Identifier></didl:Statement></didl:Descriptor>
    <didl:Descriptor><didl:Statement mimeType="application/xml"><oai_dc:dc xmlns:oai_dc="${OAI_DC}" xmlns:dc="${DC}"><dc:title>A thesis</dc:title></oai_dc:dc></didl:Statement></didl:Descriptor>
    <didl:Item id="uuid-b2">
      <didl:Component id="uuid-c3">
        <didl:Resource ref="https://dspace.example.org/bitstream/1234/56/1/thesis.pdf" mimeType="application/pdf"/>
      </didl:Component>
    </didl:Item>
    <didl:Item id="uuid-d4">
      <didl:Component id="uuid-e5">
        <didl:Resource ref="https://dspace.example.org/bitstream/1234/56/2/license.txt" mimeType="text/plain; charset=utf-8"/>
      </didl:Component>
    </didl:Item>
  </didl:Item>
</didl:DIDL>`;
  let calls = 0;
  const result = await readOne(xml, { onDatastream: () => void calls++ });
  assert.equal(calls, 0, 'onDatastream must not be called without By-Value content');
  const { didl } = result;
  assert.equal(didl.identifier, 'urn:hdl:1234/56');
  assert.equal(didl.documentId, 'urn:hdl:1234/56');
  assert.deepEqual(didl.item.components, []);
  assert.equal(didl.item.descriptors.length, 1);
  assert.match(didl.item.descriptors[0]!, /<dc:title>A thesis<\/dc:title>/);
  assert.deepEqual(didl.item.items, [
    {
      components: [{ resources: [{ mimeType: 'application/pdf', ref: 'https://dspace.example.org/bitstream/1234/56/1/thesis.pdf' }], descriptors: [] }],
      items: [],
      descriptors: [],
    },
    {
      components: [
        { resources: [{ mimeType: 'text/plain; charset=utf-8', ref: 'https://dspace.example.org/bitstream/1234/56/2/license.txt' }], descriptors: [] },
      ],
      items: [],
      descriptors: [],
    },
  ]);
});

// 4. A compound object: several By-Value Components in one Item ----------------------------------

function compoundDoc(pdf: Buffer, html: Buffer, pdfContent = base64Lines(pdf), htmlContent = base64Lines(html), htmlLength = html.length): string {
  const header = (type: string, length: number) =>
    `<didl:Descriptor><didl:Statement mimeType="application/xml"><http:header><http:Content-Type>${type}</http:Content-Type><http:Content-Length>${length}</http:Content-Length></http:header></didl:Statement></didl:Descriptor>`;
  return `<didl:DIDL ${OUR_NS}>
  <didl:Item>
    <didl:Descriptor><didl:Statement mimeType="application/xml"><dii:Identifier>http://www.example.org/report</dii:Identifier></didl:Statement></didl:Descriptor>
    <didl:Descriptor><didl:Statement mimeType="application/xml"><http:header><http:Content-Length>12345</http:Content-Length></http:header></didl:Statement></didl:Descriptor>
    <didl:Component>
      ${header('application/pdf', pdf.length)}
      <didl:Descriptor><didl:Statement mimeType="application/xml">${fixity(sha256(pdf))}</didl:Statement></didl:Descriptor>
      <didl:Resource mimeType="application/pdf" ref="http://www.example.org/report.pdf"/>
      <didl:Resource mimeType="application/pdf" encoding="base64">
${pdfContent}
      </didl:Resource>
    </didl:Component>
    <didl:Component>
      ${header('text/html', htmlLength)}
      <didl:Resource mimeType="text/html" encoding="base64">${htmlContent}</didl:Resource>
    </didl:Component>
  </didl:Item>
</didl:DIDL>`;
}

test('compound object: two By-Value Components, each with its own headers, delivered in order', async () => {
  const pdf = Buffer.concat([Buffer.from('%PDF-1.4\n'), bytesOf(2000, 3)]);
  const html = Buffer.from('<!DOCTYPE html><title>Report</title><p>The report, as HTML.</p>\n');
  const result = await readOne(compoundDoc(pdf, html));
  const { item } = result.didl;
  assert.equal(item.components.length, 2);
  assert.deepEqual(item.components[0]!.headers, [
    { name: 'Content-Type', value: 'application/pdf' },
    { name: 'Content-Length', value: String(pdf.length) },
  ]);
  assert.deepEqual(item.components[1]!.headers, [
    { name: 'Content-Type', value: 'text/html' },
    { name: 'Content-Length', value: String(html.length) },
  ]);
  assert.deepEqual(item.components[0]!.digest, { algorithm: 'SHA-256', value: sha256(pdf) });
  assert.deepEqual(item.components[1]!.resources, [{ mimeType: 'text/html', byValue: { encoding: 'base64', size: html.length, sha256: sha256(html) } }]);
  assert.deepEqual(item.components[0]!.resources[1]!.byValue, { encoding: 'base64', size: pdf.length, sha256: sha256(pdf) });
  assert.equal(result.streams.length, 2);
  const base = { identifier: 'http://www.example.org/report', itemPath: [] };
  assert.deepEqual(result.streams[0]!.info, { ...base, componentIndex: 0, resourceIndex: 1, mimeType: 'application/pdf', promisedSha256: sha256(pdf) });
  assert.deepEqual(result.streams[1]!.info, { ...base, componentIndex: 1, resourceIndex: 0, mimeType: 'text/html' });
  assert.ok(result.streams[0]!.bytes.equals(pdf));
  assert.ok(result.streams[1]!.bytes.equals(html));
  // Each Component is checked against its own Content-Length (the Item's 12345 describes neither).
  await assert.rejects(readDidl([Buffer.from(compoundDoc(pdf, html, undefined, undefined, html.length + 2))]), (error: unknown) => {
    return isDidlError(error) && error.code === 'ERR_DIDL_LENGTH_MISMATCH' && error.expected === html.length + 2 && error.found === html.length;
  });
});

// 5. Nested content Items with their own identifiers ---------------------------------------------

test('nested content Items keep their identifiers; datastreams carry their itemPath', async () => {
  const one = Buffer.from('first file\n');
  const two = bytesOf(90, 5);
  const id = (value: string) =>
    `<didl:Descriptor><didl:Statement mimeType="application/xml"><dii:Identifier>${value}</dii:Identifier></didl:Statement></didl:Descriptor>`;
  const xml = `<didl:DIDL ${OUR_NS}>
  <didl:Item>
    ${id('http://www.example.org/set/')}
    <didl:Item>
      ${id('http://www.example.org/set/one.txt')}
      <didl:Descriptor><didl:Statement mimeType="application/xml"><http:header><http:Content-Type>text/plain</http:Content-Type><http:Content-Length>${one.length}</http:Content-Length></http:header></didl:Statement></didl:Descriptor>
      <didl:Component>
        <didl:Resource mimeType="text/plain" ref="http://www.example.org/set/one.txt"/>
        <didl:Resource mimeType="text/plain" encoding="base64">${base64Lines(one)}</didl:Resource>
      </didl:Component>
    </didl:Item>
    <didl:Item>
      ${id('http://www.example.org/set/sub/')}
      <didl:Item>
        ${id('http://www.example.org/set/sub/two.bin')}
        <didl:Component>
          <didl:Descriptor><didl:Statement mimeType="application/xml">${fixity(sha256(two))}</didl:Statement></didl:Descriptor>
          <didl:Resource mimeType="application/octet-stream" encoding="base64">${base64Lines(two)}</didl:Resource>
        </didl:Component>
      </didl:Item>
    </didl:Item>
  </didl:Item>
</didl:DIDL>`;
  const result = await readOne(xml);
  const { item } = result.didl;
  assert.equal(result.didl.identifier, 'http://www.example.org/set/');
  assert.equal(item.items.length, 2);
  assert.equal(item.items[0]!.identifier, 'http://www.example.org/set/one.txt');
  assert.deepEqual(item.items[0]!.headers, [
    { name: 'Content-Type', value: 'text/plain' },
    { name: 'Content-Length', value: String(one.length) },
  ]);
  assert.equal(item.items[1]!.identifier, 'http://www.example.org/set/sub/');
  assert.deepEqual(item.items[1]!.components, []);
  assert.equal(item.items[1]!.items[0]!.identifier, 'http://www.example.org/set/sub/two.bin');
  assert.deepEqual(item.items[1]!.items[0]!.components[0]!.resources[0]!.byValue, { encoding: 'base64', size: two.length, sha256: sha256(two) });
  assert.deepEqual(
    result.streams.map((s) => [s.info.itemPath, s.info.componentIndex, s.info.resourceIndex, s.info.identifier]),
    [
      [[0], 0, 1, 'http://www.example.org/set/'],
      [[1, 0], 0, 0, 'http://www.example.org/set/'],
    ],
  );
  assert.ok(result.streams[0]!.bytes.equals(one));
  assert.ok(result.streams[1]!.bytes.equals(two));
  // The checks reach nested Items: a wrong digest two levels down is found.
  await rejectsWith(xml.replace(sha256(two), sha256(one)), 'ERR_DIDL_DIGEST_MISMATCH');
});

// 6. Namespace prefixes --------------------------------------------------------------------------

test('namespaces are matched, never prefixes: d:/x:/h:, default namespace, inner declarations', async () => {
  const payload = Buffer.from('namespaces do not care about prefixes\n');
  const ID = 'http://www.example.org/ns.txt';
  const N = payload.length;
  const HEX = sha256(payload);
  const B64 = base64Lines(payload, 20);
  const variants: Record<string, string> = {
    'prefixes d: x: h: p:': `<d:DIDL xmlns:d="${DIDL}" xmlns:x="${DII}" xmlns:h="${HTTP}" xmlns:p="${PREMIS}"><d:Item>
<d:Descriptor><d:Statement mimeType="application/xml"><x:Identifier>${ID}</x:Identifier></d:Statement></d:Descriptor>
<d:Descriptor><d:Statement mimeType="application/xml"><h:header><h:Content-Type>text/plain</h:Content-Type><h:Content-Length>${N}</h:Content-Length></h:header></d:Statement></d:Descriptor>
<d:Component><d:Descriptor><d:Statement mimeType="application/xml">${fixity(HEX, 'p')}</d:Statement></d:Descriptor>
<d:Resource mimeType="text/plain" ref="${ID}"/><d:Resource mimeType="text/plain" encoding="base64">${B64}</d:Resource>
</d:Component></d:Item></d:DIDL>`,
    'default namespace': `<DIDL xmlns="${DIDL}"><Item>
<Descriptor><Statement mimeType="application/xml"><Identifier xmlns="${DII}">${ID}</Identifier></Statement></Descriptor>
<Descriptor><Statement mimeType="application/xml"><header xmlns="${HTTP}"><Content-Type>text/plain</Content-Type><Content-Length>${N}</Content-Length></header></Statement></Descriptor>
<Component><Descriptor><Statement mimeType="application/xml"><fixity xmlns="${PREMIS}"><messageDigestAlgorithm>SHA-256</messageDigestAlgorithm><messageDigest>${HEX}</messageDigest></fixity></Statement></Descriptor>
<Resource mimeType="text/plain" ref="${ID}"/><Resource mimeType="text/plain" encoding="base64">${B64}</Resource>
</Component></Item></DIDL>`,
    'declarations on inner elements': `<didl:DIDL xmlns:didl="${DIDL}"><didl:Item>
<didl:Descriptor><didl:Statement mimeType="application/xml" xmlns:dii="${DII}"><dii:Identifier>${ID}</dii:Identifier></didl:Statement></didl:Descriptor>
<didl:Descriptor xmlns:hh="${HTTP}"><didl:Statement mimeType="application/xml"><hh:header><hh:Content-Type>text/plain</hh:Content-Type><hh:Content-Length>${N}</hh:Content-Length></hh:header></didl:Statement></didl:Descriptor>
<c:Component xmlns:c="${DIDL}"><c:Descriptor><c:Statement mimeType="application/xml"><premis:fixity xmlns:premis="${PREMIS}"><premis:messageDigestAlgorithm>SHA-256</premis:messageDigestAlgorithm><premis:messageDigest>${HEX}</premis:messageDigest></premis:fixity></c:Statement></c:Descriptor>
<c:Resource mimeType="text/plain" ref="${ID}"/><Resource xmlns="${DIDL}" mimeType="text/plain" encoding="base64">${B64}</Resource>
</c:Component></didl:Item></didl:DIDL>`,
    'prefix rebound to another namespace inside': `<x:DIDL xmlns:x="${DIDL}" xmlns:y="${DII}"><x:Item>
<x:Descriptor><x:Statement mimeType="application/xml"><y:Identifier>${ID}</y:Identifier></x:Statement></x:Descriptor>
<x:Descriptor><x:Statement mimeType="application/xml"><x:header xmlns:x="${HTTP}"><x:Content-Type>text/plain</x:Content-Type><x:Content-Length>${N}</x:Content-Length></x:header></x:Statement></x:Descriptor>
<x:Component><x:Descriptor><x:Statement mimeType="application/xml"><y:fixity xmlns:y="${PREMIS}"><y:messageDigestAlgorithm>SHA-256</y:messageDigestAlgorithm><y:messageDigest>${HEX}</y:messageDigest></y:fixity></x:Statement></x:Descriptor>
<x:Resource mimeType="text/plain" ref="${ID}"/><x:Resource mimeType="text/plain" encoding="base64">${B64}</x:Resource>
</x:Component></x:Item></x:DIDL>`,
  };
  for (const [name, xml] of Object.entries(variants)) {
    const result = await readOne(xml);
    const { didl } = result;
    assert.equal(didl.identifier, ID, name);
    assert.deepEqual(
      didl.item.headers,
      [
        { name: 'Content-Type', value: 'text/plain' },
        { name: 'Content-Length', value: String(N) },
      ],
      name,
    );
    assert.deepEqual(didl.item.components[0]!.digest, { algorithm: 'SHA-256', value: HEX }, name);
    assert.deepEqual(didl.item.components[0]!.resources[0], { mimeType: 'text/plain', ref: ID }, name);
    assert.deepEqual(didl.item.descriptors, [], name);
    assertDecoded(result, payload, name);
  }
  // The right prefix bound to the wrong namespace is not DIDL (nor http_header).
  await rejectsWith(variants['prefixes d: x: h: p:']!.replace(`xmlns:d="${DIDL}"`, 'xmlns:d="urn:example:not-didl"'), 'ERR_DIDL_NOT_DIDL');
  const wrongHttp = await readOne(variants['prefixes d: x: h: p:']!.replace(`xmlns:h="${HTTP}"`, 'xmlns:h="urn:example:not-http"'));
  assert.equal(wrongHttp.didl.item.headers, undefined);
  assert.equal(wrongHttp.didl.item.descriptors.length, 1);
});

// 7. base64 layouts, padding, chunk boundaries ---------------------------------------------------

test('base64 layouts: 76 columns, one line, CRLF, odd line lengths, indentation', async () => {
  const payload = bytesOf(1000, 7);
  const layouts: Record<string, string> = {
    '76 columns': `\n${base64Lines(payload)}\n`,
    'one long line': base64Lines(payload, 0),
    'CRLF line breaks': `\r\n${base64Lines(payload, 76, '\r\n')}\r\n`,
    '60-character lines': `\n${base64Lines(payload, 60)}\n`,
    '77-character lines': `\n${base64Lines(payload, 77)}\n`,
    'lines of 1 to 13 characters': ragged(payload.toString('base64')),
    'indentation and blank lines': `\n\t\t${base64Lines(payload, 64, '\n', '        ')}\n\n   \t\n      `,
    'whitespace inside quads': payload.toString('base64').split('').join(' '),
  };
  for (const [name, content] of Object.entries(layouts)) {
    assertDecoded(await readOne(byValueDoc(payload, content)), payload, name);
  }
  const crlfDocument = byValueDoc(payload, `\n${base64Lines(payload)}\n`).replace(/\n/g, '\r\n');
  const result = await readOne(crlfDocument);
  assertDecoded(result, payload, 'CRLF throughout the document');
  assert.equal(result.didl.identifier, 'http://www.example.org/data.bin');
  assert.deepEqual(result.didl.item.headers![0], { name: 'X-Title', value: 'caf\u00e9 \u2615 \u{1F4D6}' });
});

test('a document with CRLF line ends throughout reads exactly like its LF twin', async () => {
  // XML 1.0 section 2.11: a parser must hand on every CRLF (and lone CR) as a single LF.
  const payload = bytesOf(400, 31);
  const lf = byValueDoc(payload, `\n${base64Lines(payload)}\n`).replace(
    '<didl:Component>',
    `<didl:Descriptor><didl:Statement mimeType="application/xml"><dc:description xmlns:dc="${DC}">first line\nsecond line\n  third line</dc:description></didl:Statement></didl:Descriptor>\n    <didl:Component>`,
  );
  const crlf = lf.replace(/\n/g, '\r\n');
  const [fromLf, fromCrlf] = [await readOne(lf), await readOne(crlf)];
  assertDecoded(fromCrlf, payload, 'CRLF twin');
  assert.equal(fromLf.didl.item.descriptors.length, 1);
  assert.deepEqual(fromCrlf.didl, fromLf.didl, 'kept Descriptors and values must not gain carriage returns');
  assert.doesNotMatch(fromCrlf.didl.item.descriptors[0]!, /&#13;|\r/);
});

test('base64 padding: sizes 0 to 6 bytes', async () => {
  for (let size = 0; size <= 6; size++) {
    const payload = bytesOf(size, 11);
    const text = payload.toString('base64');
    assert.equal(text.length, Math.ceil(size / 3) * 4);
    const forms = [text, `\n  ${text}\n  `, text.replace(/=/g, '=\n')];
    for (const content of forms) assertDecoded(await readOne(byValueDoc(payload, content)), payload, `size ${size} as ${JSON.stringify(content)}`);
  }
  // An empty datastream written as an empty element.
  const empty = byValueDoc(Buffer.alloc(0), '').replace('encoding="base64"></didl:Resource>', 'encoding="base64"/>');
  assert.match(empty, /encoding="base64"\/>/);
  assertDecoded(await readOne(empty), Buffer.alloc(0), 'self-closing empty Resource');
});

/** Payload with a zero byte at 30 so its base64 has an 'A' at character 40. */
const trickyPayload = (() => {
  const payload = bytesOf(100, 13);
  payload[30] = 0;
  return payload;
})();

/** Comment with '>', CRLF, a character reference and a CDATA section, all inside the base64. */
function trickyContent(payload: Buffer): string {
  const text = payload.toString('base64');
  assert.equal(text[40], 'A');
  return `\n  ${text.slice(0, 22)}\r\n  <!-- a > b -->\n  ${text.slice(22, 40)}&#65;${text.slice(41, 70)}\n<![CDATA[${text.slice(70, 90)}]]>\n<!-- c>d -->${text.slice(90)}\n    `;
}

test('base64 split across input chunks at every byte boundary', async () => {
  const payload = bytesOf(100, 17);
  const documents: Record<string, string> = {
    plain: byValueDoc(payload, `\n${base64Lines(payload)}\n`),
    tricky: byValueDoc(trickyPayload, trickyContent(trickyPayload)),
  };
  for (const [name, xml] of Object.entries(documents)) {
    const expected = name === 'plain' ? payload : trickyPayload;
    const whole = await readOne(xml);
    assertDecoded(whole, expected, name);
    const bytes = Buffer.from(xml, 'utf8');
    for (const size of [1, 2, 3, 7, 64]) {
      const result = await readOne(split(bytes, size));
      assertDecoded(result, expected, `${name} in chunks of ${size}`);
      assert.deepEqual(result.didl, whole.didl, `${name} in chunks of ${size}`);
    }
    for (let cut = 0; cut <= bytes.length; cut++) {
      const result = await readOne([Buffer.from(bytes.subarray(0, cut)), Buffer.from(bytes.subarray(cut))]);
      assertDecoded(result, expected, `${name} cut at byte ${cut}`);
      assert.deepEqual(result.didl, whole.didl, `${name} cut at byte ${cut}`);
    }
  }
});

// 8. Character references and CDATA inside base64 ------------------------------------------------

test('character references and CDATA sections inside base64 decode correctly', async () => {
  const payload = trickyPayload;
  const text = payload.toString('base64');
  assert.equal(text[40], 'A');
  const cases: Record<string, string> = {
    '&#65; for A': `${text.slice(0, 40)}&#65;${text.slice(41)}`,
    '&#x41; for A': `${text.slice(0, 40)}&#x41;${text.slice(41)}`,
    'reference as the first character': `&#${text.charCodeAt(0)};${text.slice(1)}`,
    'reference as the last character': `${text.slice(0, -1)}&#${text.charCodeAt(text.length - 1)};`,
    'line feed as &#10;': `${text.slice(0, 60)}&#10;&#13;&#x9;${text.slice(60)}`,
    'CDATA holding part': `${text.slice(0, 30)}<![CDATA[${text.slice(30, 77)}]]>${text.slice(77)}`,
    'CDATA holding all': `\n<![CDATA[\n${base64Lines(payload, 64)}\n]]>\n`,
    'CDATA after a reference': `${text.slice(0, 40)}&#65;${text.slice(41, 50)}<![CDATA[${text.slice(50, 90)}]]>${text.slice(90)}`,
  };
  for (const [name, content] of Object.entries(cases)) {
    assertDecoded(await readOne(byValueDoc(payload, content)), payload, name);
    assertDecoded(await readOne(split(byValueDoc(payload, content), 5)), payload, `${name}, 5-byte chunks`);
  }
  // A reference in the first Resource must not change how the next one is read.
  const html = Buffer.from('<p>second datastream</p>');
  const pdfContent = `${text.slice(0, 40)}&#65;${text.slice(41)}`;
  const result = await readOne(compoundDoc(payload, html, pdfContent));
  assert.ok(result.streams[0]!.bytes.equals(payload));
  assert.ok(result.streams[1]!.bytes.equals(html));
  assert.deepEqual(result.didl.item.components[1]!.resources[0]!.byValue, { encoding: 'base64', size: html.length, sha256: sha256(html) });
});

// 9. Comments (and processing instructions) between base64 lines ---------------------------------

test('a comment containing ">" between base64 lines is skipped', async () => {
  const payload = bytesOf(240, 19);
  const [first, ...rest] = base64Lines(payload).split('\n');
  const text = payload.toString('base64');
  const cases: Record<string, string> = {
    'between two lines': `\n${first}\n<!-- a > b -->\n${rest.join('\n')}\n`,
    'between two quads': `${text.slice(0, 8)}<!-- > -->${text.slice(8)}`,
    'splitting a quad': `${text.slice(0, 6)}<!-- >> <x> -> -->${text.slice(6)}`,
    'several comments': `<!-- > -->${text.slice(0, 100)}\n<!--->-->\n<!-- <![CDATA[ > ]]> -->${text.slice(100)}<!-- end > -->`,
    'a processing instruction containing ">"': `${text.slice(0, 100)}\n<?note a > b?>\n${text.slice(100)}`,
  };
  for (const [name, content] of Object.entries(cases)) {
    const xml = byValueDoc(payload, content);
    assertDecoded(await readOne(xml), payload, name);
    assertDecoded(await readOne(split(xml, 1)), payload, `${name}, 1-byte chunks`);
    assertDecoded(await readOne(split(xml, 9)), payload, `${name}, 9-byte chunks`);
  }
});

// 10. Unknown Descriptors kept as self-contained XML ---------------------------------------------

test('unknown Descriptors are kept as well-formed XML with their namespaces declared', async () => {
  const payload = Buffer.from('kept descriptors\n');
  const xml = `<didl:DIDL ${OUR_NS} xmlns:dc="${DC}" xmlns:ex="urn:example:made-up" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
  <didl:Item>
    <didl:Descriptor><didl:Statement mimeType="application/xml"><dii:Identifier>http://www.example.org/kept.txt</dii:Identifier></didl:Statement></didl:Descriptor>
    <didl:Descriptor id="dc">
      <didl:Statement mimeType="application/xml">
        <oai_dc:dc xmlns:oai_dc="${OAI_DC}" xsi:schemaLocation="${OAI_DC} http://www.openarchives.org/OAI/2.0/oai_dc.xsd">
          <dc:title xml:lang="en">A &amp; B &lt;C&gt;</dc:title>
          <dc:creator>Doe, J.</dc:creator>
        </oai_dc:dc>
      </didl:Statement>
    </didl:Descriptor>
    <didl:Descriptor><didl:Statement mimeType="text/plain">Copyright 2024 Example &amp; Co. <![CDATA[All rights reserved <really>.]]></didl:Statement></didl:Descriptor>
    <didl:Descriptor><!-- made up --><didl:Statement mimeType="application/xml"><ex:policy ex:level="3" kind="keep"><ex:rule>retain &quot;forever&quot;</ex:rule><plain xmlns="urn:example:default">x</plain></ex:policy></didl:Statement></didl:Descriptor>
    <didl:Component>
      <didl:Descriptor><didl:Statement mimeType="application/xml"><ex:scan result="clean"/></didl:Statement></didl:Descriptor>
      <didl:Resource mimeType="text/plain" encoding="base64">${base64Lines(payload)}</didl:Resource>
    </didl:Component>
  </didl:Item>
</didl:DIDL>`;
  const { didl } = await readOne(xml);
  const kept = didl.item.descriptors;
  assert.equal(kept.length, 3, 'identifier Descriptor is interpreted, the three others kept');
  assert.equal(didl.item.components[0]!.descriptors.length, 1);
  const all = [...kept, ...didl.item.components[0]!.descriptors];
  const parsed = all.map((descriptor) => parseStrict(descriptor));
  for (const elements of parsed) {
    assert.equal(elements[0]!.uri, DIDL);
    assert.equal(elements[0]!.local, 'Descriptor');
  }
  const find = (elements: (typeof parsed)[number], uri: string, local: string) => elements.find((e) => e.uri === uri && e.local === local);
  // oai_dc: dc and xsi were declared on the DIDL root only, and must be declared on the kept element.
  assert.match(kept[0]!, /^<didl:Descriptor [^>]*xmlns:dc="http:\/\/purl\.org\/dc\/elements\/1\.1\/"/);
  assert.match(kept[0]!, /xmlns:xsi="http:\/\/www\.w3\.org\/2001\/XMLSchema-instance"/);
  assert.equal(find(parsed[0]!, DC, 'title')?.text, 'A & B <C>');
  assert.equal(find(parsed[0]!, DC, 'title')?.attributes['xml:lang']?.value, 'en');
  assert.equal(find(parsed[0]!, DC, 'creator')?.text, 'Doe, J.');
  assert.equal(find(parsed[0]!, OAI_DC, 'dc')?.attributes['xsi:schemaLocation']?.uri, 'http://www.w3.org/2001/XMLSchema-instance');
  assert.equal(parsed[0]![0]!.attributes.id?.value, 'dc');
  // rights statement: text (and CDATA) kept.
  assert.equal(find(parsed[1]!, DIDL, 'Statement')?.text, 'Copyright 2024 Example & Co. All rights reserved <really>.');
  // made-up namespace, prefixed attribute, an inner default namespace.
  assert.match(kept[2]!, /xmlns:ex="urn:example:made-up"/);
  const policy = find(parsed[2]!, 'urn:example:made-up', 'policy');
  assert.equal(policy?.attributes['ex:level']?.uri, 'urn:example:made-up');
  assert.equal(policy?.attributes['ex:level']?.value, '3');
  assert.equal(policy?.attributes.kind?.value, 'keep');
  assert.equal(find(parsed[2]!, 'urn:example:made-up', 'rule')?.text, 'retain "forever"');
  assert.equal(find(parsed[2]!, 'urn:example:default', 'plain')?.text, 'x');
  assert.match(kept[2]!, /<!-- made up -->/);
  assert.equal(find(parsed[3]!, 'urn:example:made-up', 'scan')?.attributes.result?.value, 'clean');
});

test('kept Descriptors mean what the input meant: attribute values are normalised as XML requires', async () => {
  // XML 1.0 section 3.3.3: a literal tab or line break in an attribute value is a space.
  const xml = `<didl:DIDL ${OUR_NS}><didl:Item>
  <didl:Descriptor><didl:Statement mimeType="application/xml"><dii:Identifier>http://www.example.org/attr</dii:Identifier></didl:Statement></didl:Descriptor>
  <didl:Descriptor><didl:Statement mimeType="application/xml"><ex:note xmlns:ex="urn:example:made-up" text="a\nb\tc" kept="d&#10;e"/></didl:Statement></didl:Descriptor>
</didl:Item></didl:DIDL>`;
  const { didl } = await readOne(xml);
  const kept = didl.item.descriptors[0]!;
  // Canonical XML (libxml2, as xmllint --c14n) of the kept element shows the values a conforming parser sees.
  const c14n = canonicalXml(kept);
  assert.match(c14n, /text="a b c"/, `kept as ${kept}`);
  assert.match(c14n, /kept="d&#xA;e"/, `kept as ${kept}`);
});

// 12. Backpressure ------------------------------------------------------------------------------

test('backpressure: a slow consumer of an 8 MB datastream keeps what the reader buffers bounded', async () => {
  const payload = bytesOf(8 << 20, 23);
  const head = Buffer.from(
    `<didl:DIDL ${OUR_NS}><didl:Item><didl:Descriptor><didl:Statement mimeType="application/xml"><dii:Identifier>http://www.example.org/big.bin</dii:Identifier></didl:Statement></didl:Descriptor>` +
      `<didl:Component><didl:Resource mimeType="application/octet-stream" encoding="base64">\n`,
  );
  const document = Buffer.concat([head, Buffer.from(base64Lines(payload)), Buffer.from('\n</didl:Resource></didl:Component></didl:Item></didl:DIDL>\n')]);
  const CHUNK = 64 * 1024;
  const LIMIT = 3 << 20;
  let pulled = 0;
  let consumed = 0;
  let stream: Readable | undefined;
  let maxBuffered = 0;
  let maxAhead = 0;
  function* input(): Generator<Buffer> {
    for (let offset = 0; offset < document.length; offset += CHUNK) {
      // The reader asks for more: everything pulled so far has been decoded and pushed.
      if (stream) maxBuffered = Math.max(maxBuffered, stream.readableLength);
      const decoded = Math.max(0, Math.floor(((pulled - head.length) * 57) / 77));
      maxAhead = Math.max(maxAhead, decoded - consumed);
      const chunk = document.subarray(offset, offset + CHUNK);
      pulled += chunk.length;
      yield chunk;
    }
  }
  const hash = createHash('sha256');
  let _reads = 0;
  const summary = await readDidl(input(), {
    onDatastream: async ({ bytes }) => {
      stream = bytes;
      for await (const chunk of bytes as AsyncIterable<Buffer>) {
        consumed += chunk.length;
        hash.update(chunk);
        _reads++;
        await sleep(Math.ceil(chunk.length / CHUNK)); // about 1 ms per 64 KiB: a slow disk
      }
    },
  });
  assert.equal(summary.records, 1);
  assert.equal(consumed, payload.length);
  assert.equal(hash.digest('hex'), sha256(payload));
  assert.ok(maxBuffered <= LIMIT, `the datastream stream held ${maxBuffered} bytes pushed but not read`);
  assert.ok(maxAhead <= LIMIT, `the reader read ${maxAhead} decoded bytes ahead of the consumer`);
});
