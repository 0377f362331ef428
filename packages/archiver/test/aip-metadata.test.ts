/**
 * metadata/didl.xml written again from the parsed record (the path taken when a record's
 * markup was too large to keep as received): each By-Value Resource's pointer names its own
 * payload file, whatever the order of the Components, and the file validates against didl.xsd.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { DidlDocument, DidlResource } from '@oaibag/didl';
import { validateXmlSchema } from '../../../test/xml-schema.ts';
import { didlRecordXml, type StoredPayload } from '../src/bag/aip-metadata.ts';

test('the rebuilt didl.xml points each By-Value Resource at its own payload, names escaped, and validates', async () => {
  const byReference: DidlResource = { mimeType: 'application/pdf', ref: 'http://example.org/big.pdf' };
  const first: DidlResource = { mimeType: 'text/plain', byValue: { encoding: 'base64', size: 5, sha256: 'a'.repeat(64) } };
  const second: DidlResource = { mimeType: 'text/plain', byValue: { encoding: 'base64', size: 7, sha256: 'b'.repeat(64) } };
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
    [first, { name: 'say "a" & <b>.txt', sha256: 'a'.repeat(64) }],
    [second, { name: 'page-2', sha256: 'b'.repeat(64) }],
  ]);
  const xml = await didlRecordXml(document, (resource) => stored.get(resource));
  const pointers = [...xml.matchAll(/<oaibag:byValue [^>]*\/>/g)].map((match) => match[0]);
  assert.deepEqual(pointers, [
    `<oaibag:byValue xmlns:oaibag="urn:oaibag:aip:1" payload="data/page-2" size="7" sha256="${'b'.repeat(64)}"/>`,
    `<oaibag:byValue xmlns:oaibag="urn:oaibag:aip:1" payload="data/say &quot;a&quot; &amp; &lt;b&gt;.txt" size="5" sha256="${'a'.repeat(64)}"/>`,
  ]);
  const result = validateXmlSchema('didl.xsd', xml, 'didl.xml');
  assert.ok(result.ok, result.output);
});
