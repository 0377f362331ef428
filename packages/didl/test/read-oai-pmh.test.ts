import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sha256 } from './helpers.ts';
import { base64Lines, bytesOf, DC, DIDL, DII, fixity, HTTP, OAI_DC, OUR_NS, read, split } from './read-helpers.ts';

const OAI = 'http://www.openarchives.org/OAI/2.0/';

function envelope(request: string, body: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?>
<OAI-PMH xmlns="${OAI}" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:schemaLocation="${OAI} http://www.openarchives.org/OAI/2.0/OAI-PMH.xsd">
  <responseDate>2024-05-01T12:00:00Z</responseDate>
  ${request}
  ${body}
</OAI-PMH>
`;
}

function header(identifier: string, datestamp: string, sets: string[], deleted = false): string {
  return `<header${deleted ? ' status="deleted"' : ''}>
        <identifier>${identifier}</identifier>
        <datestamp>${datestamp}</datestamp>
        ${sets.map((set) => `<setSpec>${set}</setSpec>`).join('\n        ')}
      </header>`;
}

/** Our profile with a By-Value datastream, as a record's metadata (no XML declaration). */
function didlByValue(id: string, payload: Buffer): string {
  return `<didl:DIDL ${OUR_NS}>
          <didl:Item>
            <didl:Descriptor><didl:Statement mimeType="application/xml"><dii:Identifier>${id}</dii:Identifier></didl:Statement></didl:Descriptor>
            <didl:Descriptor><didl:Statement mimeType="application/xml"><http:header><http:Content-Type>text/plain</http:Content-Type><http:Content-Length>${payload.length}</http:Content-Length></http:header></didl:Statement></didl:Descriptor>
            <didl:Component>
              <didl:Descriptor><didl:Statement mimeType="application/xml">${fixity(sha256(payload))}</didl:Statement></didl:Descriptor>
              <didl:Resource mimeType="text/plain" ref="${id}"/>
              <didl:Resource mimeType="text/plain" encoding="base64">
${base64Lines(payload)}
              </didl:Resource>
            </didl:Component>
          </didl:Item>
        </didl:DIDL>`;
}

/** Another producer's DIDL: default namespace, By-Reference only. */
function didlByReference(id: string): string {
  return `<DIDL xmlns="${DIDL}"><Item>
          <Descriptor><Statement mimeType="application/xml"><dii:Identifier xmlns:dii="${DII}">${id}</dii:Identifier></Statement></Descriptor>
          <Descriptor><Statement mimeType="application/xml"><h:header xmlns:h="${HTTP}"><h:Content-Type>image/png</h:Content-Type><h:ETag>"abc"</h:ETag></h:header></Statement></Descriptor>
          <Component><Resource mimeType="image/png" ref="${id}"/></Component>
        </Item></DIDL>`;
}

const first = Buffer.from('first record, carried By-Value\n');
const listRecords = envelope(
  `<request verb="ListRecords" metadataPrefix="oai_didl" set="papers">http://www.example.org/oai</request>`,
  `<ListRecords>
    <record>
      ${header('oai:www.example.org:papers/a.txt', '2024-04-30T10:00:00Z', ['papers', 'papers:text'])}
      <metadata>
        ${didlByValue('http://www.example.org/papers/a.txt', first)}
      </metadata>
      <about><provenance xmlns="http://www.openarchives.org/OAI/2.0/provenance"><originDescription/></provenance></about>
    </record>
    <record>
      ${header('oai:www.example.org:papers/gone.txt', '2024-04-29', ['papers'], true)}
    </record>
    <record>
      ${header('oai:www.example.org:images/b.png', '2024-04-28T08:00:00Z', [])}
      <metadata>
        ${didlByReference('http://www.example.org/images/b.png')}
      </metadata>
    </record>
    <resumptionToken completeListSize="7" cursor="0" expirationDate="2024-05-02T12:00:00Z">papers!3!oai_didl</resumptionToken>
  </ListRecords>`,
);

test('ListRecords: two DIDL records and a deleted one, with the page envelope and resumptionToken', async () => {
  const { records, streams, summary } = await read(listRecords);
  assert.equal(summary.kind, 'oai-pmh');
  assert.equal(summary.records, 3);
  assert.deepEqual(summary.page, {
    responseDate: '2024-05-01T12:00:00Z',
    request: { url: 'http://www.example.org/oai', attributes: { verb: 'ListRecords', metadataPrefix: 'oai_didl', set: 'papers' } },
    verb: 'ListRecords',
    errors: [],
    resumptionToken: { value: 'papers!3!oai_didl', completeListSize: 7, cursor: 0, expirationDate: '2024-05-02T12:00:00Z' },
  });
  assert.equal(records.length, 3);
  const [a, gone, b] = records as [(typeof records)[0], (typeof records)[0], (typeof records)[0]];

  assert.deepEqual(a.header, {
    identifier: 'oai:www.example.org:papers/a.txt',
    datestamp: '2024-04-30T10:00:00Z',
    setSpecs: ['papers', 'papers:text'],
    deleted: false,
  });
  assert.equal(a.error, undefined);
  assert.equal(a.didl!.identifier, 'http://www.example.org/papers/a.txt');
  assert.deepEqual(a.didl!.item.headers, [
    { name: 'Content-Type', value: 'text/plain' },
    { name: 'Content-Length', value: String(first.length) },
  ]);
  assert.deepEqual(a.didl!.item.components[0]!.resources, [
    { mimeType: 'text/plain', ref: 'http://www.example.org/papers/a.txt' },
    { mimeType: 'text/plain', byValue: { encoding: 'base64', size: first.length, sha256: sha256(first) } },
  ]);

  assert.deepEqual(gone.header, { identifier: 'oai:www.example.org:papers/gone.txt', datestamp: '2024-04-29', setSpecs: ['papers'], deleted: true });
  assert.equal(gone.didl, undefined);
  assert.equal(gone.error, undefined);

  assert.deepEqual(b.header, { identifier: 'oai:www.example.org:images/b.png', datestamp: '2024-04-28T08:00:00Z', setSpecs: [], deleted: false });
  assert.equal(b.didl!.identifier, 'http://www.example.org/images/b.png');
  assert.deepEqual(b.didl!.item.headers, [
    { name: 'Content-Type', value: 'image/png' },
    { name: 'ETag', value: '"abc"' },
  ]);
  assert.deepEqual(b.didl!.item.components, [{ resources: [{ mimeType: 'image/png', ref: 'http://www.example.org/images/b.png' }], descriptors: [] }]);

  // The one datastream knows its record's OAI header.
  assert.equal(streams.length, 1);
  assert.deepEqual(streams[0]!.info, {
    header: a.header,
    identifier: 'http://www.example.org/papers/a.txt',
    itemPath: [],
    componentIndex: 0,
    resourceIndex: 1,
    mimeType: 'text/plain',
    // The digest its Descriptor promised before the Resource (a caller holding it may decline the bytes).
    promisedSha256: sha256(first),
  });
  assert.ok(streams[0]!.bytes.equals(first));
});

test('ListRecords read in small chunks gives the same records and page', async () => {
  const whole = await read(listRecords);
  for (const size of [1, 7, 100]) {
    const parts = await read(split(listRecords, size));
    assert.deepEqual(parts.records, whole.records, `chunks of ${size}`);
    assert.deepEqual(parts.summary, whole.summary, `chunks of ${size}`);
    assert.ok(parts.streams[0]!.bytes.equals(first), `chunks of ${size}`);
  }
});

test('onRecord is awaited in order, one record at a time', async () => {
  const seen: string[] = [];
  let busy = false;
  await read(listRecords, {
    onRecord: async (record) => {
      assert.equal(busy, false, 'onRecord called again before the previous call finished');
      busy = true;
      await new Promise((resolve) => setTimeout(resolve, 5));
      seen.push(record.header!.identifier);
      busy = false;
    },
  });
  assert.deepEqual(seen, ['oai:www.example.org:papers/a.txt', 'oai:www.example.org:papers/gone.txt', 'oai:www.example.org:images/b.png']);
});

test('GetRecord: one record with its DIDL, no resumptionToken', async () => {
  const payload = bytesOf(700, 29);
  const xml = envelope(
    `<request verb="GetRecord" identifier="oai:www.example.org:data.bin" metadataPrefix="oai_didl">http://www.example.org/oai</request>`,
    `<GetRecord><record>
      ${header('oai:www.example.org:data.bin', '2024-04-01', ['data'])}
      <metadata>${didlByValue('http://www.example.org/data.bin', payload)}</metadata>
    </record></GetRecord>`,
  );
  const { records, streams, summary } = await read(xml);
  assert.equal(summary.page.verb, 'GetRecord');
  assert.equal(summary.page.resumptionToken, undefined);
  assert.deepEqual(summary.page.request!.attributes, { verb: 'GetRecord', identifier: 'oai:www.example.org:data.bin', metadataPrefix: 'oai_didl' });
  assert.equal(records.length, 1);
  assert.equal(records[0]!.header!.identifier, 'oai:www.example.org:data.bin');
  assert.deepEqual(records[0]!.header!.setSpecs, ['data']);
  assert.equal(records[0]!.didl!.identifier, 'http://www.example.org/data.bin');
  assert.equal(records[0]!.didl!.item.components[0]!.resources[1]!.byValue!.sha256, sha256(payload));
  assert.equal(streams[0]!.info.header!.identifier, 'oai:www.example.org:data.bin');
  assert.ok(streams[0]!.bytes.equals(payload));
});

test('GetRecord in another metadata format: the record is reported, the payload skipped and named', async () => {
  const xml = envelope(
    `<request verb="GetRecord" identifier="oai:x:1" metadataPrefix="oai_dc">http://www.example.org/oai</request>`,
    `<GetRecord><record>${header('oai:x:1', '2024-01-01', [])}<metadata><oai_dc:dc xmlns:oai_dc="${OAI_DC}" xmlns:dc="${DC}"><dc:title>t</dc:title></oai_dc:dc></metadata></record></GetRecord>`,
  );
  const { records } = await read(xml);
  assert.equal(records.length, 1);
  assert.equal(records[0]!.didl, undefined);
  assert.equal(records[0]!.otherMetadataNamespace, OAI_DC);
  assert.equal(records[0]!.header!.identifier, 'oai:x:1');
});

test('ListIdentifiers: headers only, deleted ones included, empty resumptionToken', async () => {
  const xml = envelope(
    `<request verb="ListIdentifiers" metadataPrefix="oai_didl" resumptionToken="papers!3!oai_didl">http://www.example.org/oai</request>`,
    `<ListIdentifiers>
      ${header('oai:www.example.org:papers/c.txt', '2024-04-27', ['papers'])}
      ${header('oai:www.example.org:papers/d.txt', '2024-04-26', ['papers', 'old'], true)}
      ${header('oai:www.example.org:papers/e.txt', '2024-04-25', [])}
      <resumptionToken completeListSize="7" cursor="3"/>
    </ListIdentifiers>`,
  );
  let datastreams = 0;
  const { records, summary } = await read(xml, { onDatastream: () => void datastreams++ });
  assert.equal(datastreams, 0);
  assert.equal(summary.records, 3);
  assert.equal(summary.page.verb, 'ListIdentifiers');
  assert.deepEqual(summary.page.resumptionToken, { value: '', completeListSize: 7, cursor: 3 });
  assert.deepEqual(
    records.map((record) => [record.header, record.didl, record.error]),
    [
      [{ identifier: 'oai:www.example.org:papers/c.txt', datestamp: '2024-04-27', setSpecs: ['papers'], deleted: false }, undefined, undefined],
      [{ identifier: 'oai:www.example.org:papers/d.txt', datestamp: '2024-04-26', setSpecs: ['papers', 'old'], deleted: true }, undefined, undefined],
      [{ identifier: 'oai:www.example.org:papers/e.txt', datestamp: '2024-04-25', setSpecs: [], deleted: false }, undefined, undefined],
    ],
  );
});

test('an OAI-PMH error response is reported in page.errors', async () => {
  const xml = envelope(
    `<request verb="ListRecords" metadataPrefix="oai_didl" from="2030-01-01">http://www.example.org/oai</request>`,
    `<error code="noRecordsMatch">No records match &lt;from=2030-01-01&gt;.</error>
  <error code="badArgument">  from is in the future  </error>`,
  );
  let records = 0;
  const { summary } = await read(xml, { onRecord: () => void records++ });
  assert.equal(records, 0);
  assert.deepEqual(summary, {
    kind: 'oai-pmh',
    records: 0,
    page: {
      responseDate: '2024-05-01T12:00:00Z',
      request: { url: 'http://www.example.org/oai', attributes: { verb: 'ListRecords', metadataPrefix: 'oai_didl', from: '2030-01-01' } },
      errors: [
        { code: 'noRecordsMatch', message: 'No records match <from=2030-01-01>.' },
        { code: 'badArgument', message: 'from is in the future' },
      ],
    },
  });
});

test('lenientIdentifier: several dii:Identifiers, or none (DIDLDocumentId, then the OAI header), as DSpace, aDORe and DARE write them', async () => {
  const didl = (attributes: string, identifiers: string[]) =>
    `<didl:DIDL xmlns:didl="${DIDL}" xmlns:dii="${DII}"${attributes}><didl:Item>${identifiers
      .map((id) => `<didl:Descriptor><didl:Statement mimeType="application/xml"><dii:Identifier>${id}</dii:Identifier></didl:Statement></didl:Descriptor>`)
      .join('')}</didl:Item></didl:DIDL>`;
  const record = (id: string, metadata: string) => `<record>${header(id, '2024-05-01', [])}<metadata>${metadata}</metadata></record>`;
  const page = envelope(
    '<request verb="ListRecords">http://repo.example/oai</request>',
    `<ListRecords>${record('oai:a', didl('', ['URN:NBN:NL:UI:17-548', 'info:doi/10.1000/548']))}${record('oai:b', didl(' DIDLDocumentId="info:lanl-repo/i/1"', []))}${record('oai:c', didl('', []))}</ListRecords>`,
  );
  const strict = await read(page, { recordErrors: 'report' });
  assert.deepEqual(
    strict.records.map((r) => r.error?.code),
    ['ERR_DIDL_REPEATED_IDENTIFIER', 'ERR_DIDL_NO_IDENTIFIER', 'ERR_DIDL_NO_IDENTIFIER'],
  );
  const lenient = await read(page, { recordErrors: 'report', lenientIdentifier: true });
  assert.deepEqual(
    lenient.records.map((r) => r.error),
    [undefined, undefined, undefined],
  );
  const [a, b, c] = lenient.records.map((r) => r.didl!);
  assert.equal(a!.identifier, 'URN:NBN:NL:UI:17-548');
  assert.deepEqual(a!.item.otherIdentifiers, ['info:doi/10.1000/548']);
  assert.equal(a!.identifierFrom, undefined);
  assert.equal(b!.identifier, 'info:lanl-repo/i/1');
  assert.equal(b!.identifierFrom, 'DIDLDocumentId');
  assert.equal(c!.identifier, 'oai:c');
  assert.equal(c!.identifierFrom, 'oai-header');
});

test('declineHeld: declined bytes get no stream and no onDatastream call, yet are measured and checked against the promise', async () => {
  const asked: string[] = [];
  const declined = await read(listRecords, {
    declineHeld: (promisedSha256) => {
      asked.push(promisedSha256);
      return true;
    },
  });
  assert.deepEqual(asked, [sha256(first)], 'asked once, with the digest the record promised');
  assert.equal(declined.streams.length, 0, 'no stream was handed over');
  const byValue = declined.records[0]!.didl!.item.components[0]!.resources[1]!.byValue;
  assert.deepEqual(byValue, { encoding: 'base64', size: first.length, sha256: sha256(first) });
  assert.equal(declined.records[0]!.error, undefined);

  // Other bytes under the same promise: declined all the same, and the record is refused.
  const other = Buffer.from('other bytes, the same length!!\n');
  assert.equal(other.length, first.length);
  const swapped = listRecords.replace(base64Lines(first), base64Lines(other));
  const refused = await read(swapped, { recordErrors: 'report', declineHeld: () => true });
  assert.equal(refused.streams.length, 0);
  assert.equal(refused.records[0]!.error?.code, 'ERR_DIDL_DIGEST_MISMATCH');

  // Not declined: delivered as usual.
  const kept = await read(listRecords, { declineHeld: () => false });
  assert.ok(kept.streams[0]!.bytes.equals(first));
});
