/**
 * The XML checks every package's tests rely on (test/xml-schema.ts) really reject what is wrong:
 * a schema check that always passed would make every schema assertion in the suite vacuous.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { canonicalXml, checkWellFormed, validateXmlSchema, validateXmlSchemaAll } from './xml-schema.ts';

const OAI = 'http://www.openarchives.org/OAI/2.0/';
const DIDL = 'urn:mpeg:mpeg21:2002:02-DIDL-NS';
const errorResponse = (inside = '') =>
  `<?xml version="1.0" encoding="UTF-8"?>\n<OAI-PMH xmlns="${OAI}">${inside}<responseDate>2026-11-22T00:00:00Z</responseDate>` +
  `<request>http://example.org/oai</request><error code="badVerb">Illegal verb</error></OAI-PMH>\n`;
const didl = (resource: string) => `<didl:DIDL xmlns:didl="${DIDL}"><didl:Item><didl:Component>${resource}</didl:Component></didl:Item></didl:DIDL>`;

test('a valid document validates; an invalid one fails with the reason and its line', () => {
  assert.deepEqual(validateXmlSchema('OAI-PMH.xsd', errorResponse()), { ok: true, output: '' });
  const wrong = validateXmlSchema('OAI-PMH.xsd', errorResponse('<surprise/>'), 'response.xml');
  assert.equal(wrong.ok, false);
  assert.match(wrong.output, /^response\.xml:2: Element '\{http:\/\/www\.openarchives\.org\/OAI\/2\.0\/\}surprise': This element is not expected/m);
  assert.match(wrong.output, /^response\.xml fails to validate$/m);
  // A datatype, not only the structure: OAI-PMH's error code is an enumeration.
  assert.equal(validateXmlSchema('OAI-PMH.xsd', errorResponse().replace('badVerb', 'noSuchCode')).ok, false);
});

test('imported schemas are checked too: a DIDL Resource with an attribute DIDL does not allow fails', () => {
  assert.ok(validateXmlSchema('didl.xsd', didl('<didl:Resource mimeType="text/plain" ref="http://example.org/a"/>')).ok);
  const wrong = validateXmlSchema('didl.xsd', didl('<didl:Resource mimeType="text/plain" colour="red"/>'));
  assert.equal(wrong.ok, false);
  assert.match(wrong.output, /colour/);
  // The strict wildcard of <metadata>: a payload in a namespace no loaded schema declares fails.
  const page = (payload: string) =>
    `<OAI-PMH xmlns="${OAI}"><responseDate>2026-11-22T00:00:00Z</responseDate><request verb="GetRecord">http://example.org/oai</request>` +
    `<GetRecord><record><header><identifier>x</identifier><datestamp>2026-11-22T00:00:00Z</datestamp></header>` +
    `<metadata>${payload}</metadata></record></GetRecord></OAI-PMH>`;
  assert.ok(validateXmlSchema('OAI-PMH-with-payloads.xsd', page(didl('<didl:Resource mimeType="text/plain" ref="http://example.org/a"/>'))).ok);
  assert.match(
    validateXmlSchema('OAI-PMH.xsd', page(didl(''))).output,
    /No matching global element declaration available, but demanded by the strict wildcard/,
  );
});

test('a batch names each failing document, and a document that is not well-formed fails', () => {
  const result = validateXmlSchemaAll('OAI-PMH.xsd', [
    { label: 'good', xml: errorResponse() },
    { label: 'invalid', xml: errorResponse('<surprise/>') },
    { label: 'broken', xml: '<OAI-PMH><responseDate></OAI-PMH>' },
  ]);
  assert.equal(result.ok, false);
  assert.deepEqual(
    result.output.split('\n').filter((line) => line.endsWith('fails to validate')),
    ['invalid fails to validate', 'broken fails to validate'],
  );
  assert.match(result.output, /^broken:1: Opening and ending tag mismatch/m);
  assert.deepEqual(validateXmlSchemaAll('OAI-PMH.xsd', []), { ok: true, output: '' });
});

test('files: validated and checked for well-formedness by path', () => {
  const dir = mkdtempSync(join(tmpdir(), 'oaibag-xml-schema-'));
  try {
    const good = join(dir, 'say "a" & <b>.xml');
    const bad = join(dir, 'bad.xml');
    writeFileSync(good, errorResponse());
    writeFileSync(bad, '<premis><object></premis>');
    assert.ok(validateXmlSchema('OAI-PMH.xsd', { file: good }).ok);
    assert.ok(checkWellFormed({ file: good }).ok);
    const broken = checkWellFormed({ file: bad });
    assert.equal(broken.ok, false);
    assert.match(broken.output, /bad\.xml:1: Opening and ending tag mismatch: object/);
    assert.equal(validateXmlSchema('OAI-PMH.xsd', { file: bad }).ok, false);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('no network: a schema that imports by URL, or a file that is missing, is an error, not a skipped import', () => {
  const dir = mkdtempSync(join(tmpdir(), 'oaibag-xml-schema-'));
  try {
    const schema = (location: string) =>
      `<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" targetNamespace="urn:t">` +
      `<xs:import namespace="http://www.w3.org/XML/1998/namespace" schemaLocation="${location}"/>` +
      `<xs:element name="a" type="xs:string"/></xs:schema>`;
    writeFileSync(join(dir, 'by-url.xsd'), schema('http://www.w3.org/2001/xml.xsd'));
    writeFileSync(join(dir, 'missing.xsd'), schema('absent.xsd'));
    assert.throws(
      () => validateXmlSchema(join(dir, 'by-url.xsd'), '<t:a xmlns:t="urn:t"/>'),
      /needs http:\/\/www\.w3\.org\/2001\/xml\.xsd, not an existing local file/,
    );
    assert.throws(() => validateXmlSchema(join(dir, 'missing.xsd'), '<t:a xmlns:t="urn:t"/>'), /absent\.xsd, not an existing local file/);
    assert.throws(() => validateXmlSchema('no-such.xsd', '<a/>'), /no schema .*no-such\.xsd/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('canonical XML normalises attribute values as XML requires, and refuses what is not well-formed', () => {
  assert.equal(
    canonicalXml('<?xml version="1.0"?>\n<ex:note xmlns:ex="urn:x" text="a\nb\tc" kept="d&#10;e" empty=\'\'/><!-- after -->'),
    '<ex:note xmlns:ex="urn:x" empty="" kept="d&#xA;e" text="a b c"></ex:note>\n<!-- after -->',
  );
  assert.throws(() => canonicalXml('<a>'), /not well-formed/);
});
