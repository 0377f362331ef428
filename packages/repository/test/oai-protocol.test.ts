import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync, rmSync, unlinkSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { gunzipSync, inflateSync } from 'node:zlib';
import {
  allPayloadsSchema,
  errorCodes,
  HTTP_HEADER_XSD,
  type HttpAnswer,
  headers,
  httpRequest,
  type RunningRepository,
  startRepository,
  tempDir,
  validate,
  validateAll,
  writeTree,
} from './repository-helpers.ts';

// The OAI-PMH 2.0 protocol end to end: a real repository over a site built here, real HTTP.
// Every response this file receives is kept and validated against the schemas at the end.

interface SiteFile {
  path: string;
  content: string | Buffer;
  /** mtime, and so the datestamp the first scan of an empty index gives the file. */
  date: string;
}

/** Bytes of every kind (high bits, zeros), so base64 is tested on more than ASCII. */
const PNG_BYTES = Buffer.from(Array.from({ length: 80 }, (_, i) => (i * 37 + 11) % 256));

// Eleven exported files, one second or more apart; byValueMax is 100 in the main repository,
// so data.json (exactly 100 bytes) goes By-Value and big.pdf (101 bytes) By-Reference only.
const MAIN_FILES: SiteFile[] = [
  { path: 'index.html', content: '<!doctype html><title>Home</title>\n', date: '2020-01-01T00:00:00Z' },
  { path: 'a.txt', content: 'plain text a\n', date: '2020-01-02T00:00:00Z' },
  { path: 'docs/b.txt', content: 'plain text b\n', date: '2020-01-03T00:00:00Z' },
  { path: 'docs/c.html', content: '<p>c</p>\n', date: '2020-01-04T00:00:00Z' },
  { path: 'img/d.png', content: PNG_BYTES, date: '2020-01-04T12:00:00Z' },
  { path: 'img/e.gif', content: 'GIF89a\x01\x00\x01\x00', date: '2020-01-05T23:59:59Z' },
  { path: 'style.css', content: 'body { margin: 0 }\n', date: '2020-01-06T00:00:00Z' },
  { path: 'data.json', content: `{"pad":"${'x'.repeat(89)}"}\n`, date: '2020-01-07T00:00:00Z' },
  { path: 'big.pdf', content: `%PDF-1.4\n${'y'.repeat(92)}`, date: '2020-01-08T00:00:00Z' },
  { path: 'notes/i.txt', content: 'plain text i\n', date: '2020-01-09T00:00:00Z' },
  { path: 'notes/a b&c.txt', content: 'a name to escape\n', date: '2020-01-09T12:00:00Z' },
];
/** An editor backup: never exported, so never in a list, nor the earliest datestamp. */
const BACKUP: SiteFile = { path: 'a.txt~', content: 'old a\n', date: '2019-06-01T00:00:00Z' };
const MAIN_SETS: Record<string, string> = {
  'index.html': 'mime:text:html',
  'a.txt': 'mime:text:plain',
  'docs/b.txt': 'mime:text:plain',
  'docs/c.html': 'mime:text:html',
  'img/d.png': 'mime:image:png',
  'img/e.gif': 'mime:image:gif',
  'style.css': 'mime:text:css',
  'data.json': 'mime:application:json',
  'big.pdf': 'mime:application:pdf',
  'notes/i.txt': 'mime:text:plain',
  'notes/a b&c.txt': 'mime:text:plain',
};

const FORMATS = [
  {
    prefix: 'oai_dc',
    schema: 'http://www.openarchives.org/OAI/2.0/oai_dc.xsd',
    namespace: 'http://www.openarchives.org/OAI/2.0/oai_dc/',
  },
  { prefix: 'http_header', schema: '<base>/oai/schemas/http_header.xsd', namespace: 'http://www.openarchives.org/OAI/2.0/http_header/' },
  {
    prefix: 'oai_didl',
    schema: 'http://standards.iso.org/ittf/PubliclyAvailableStandards/MPEG-21_schema_files/did/didl.xsd',
    namespace: 'urn:mpeg:mpeg21:2002:02-DIDL-NS',
  },
];

/** Every OAI-PMH response of this file, for the schema test at the end. */
const collected: Array<{ label: string; xml: string }> = [];

const seconds = (iso: string) => Date.parse(iso) / 1000;

function writeDatedTree(root: string, files: SiteFile[]): void {
  writeTree(root, Object.fromEntries(files.map((file) => [file.path, file.content])));
  for (const file of files) utimesSync(join(root, file.path), seconds(file.date), seconds(file.date));
}

/** The identifier (URL) of a path, each segment percent-encoded as encodeURIComponent does. */
function idOf(baseUrl: string, path: string): string {
  return `${baseUrl}/${path.split('/').map(encodeURIComponent).join('/')}`;
}

function pathOf(baseUrl: string, identifier: string): string {
  assert.ok(identifier.startsWith(`${baseUrl}/`), `${identifier} is not below ${baseUrl}`);
  return identifier
    .slice(baseUrl.length + 1)
    .split('/')
    .map(decodeURIComponent)
    .join('/');
}

function fileBytes(file: SiteFile): Buffer {
  return Buffer.from(file.content);
}

function mainFile(path: string): SiteFile {
  return MAIN_FILES.find((file) => file.path === path)!;
}

/** GET (or POST) the endpoint; the answer must be an OAI-PMH document, which is kept. */
async function call(endpoint: string, query: string | Record<string, string>, label = ''): Promise<string> {
  const text = typeof query === 'string' ? query : new URLSearchParams(query).toString();
  const answer = await httpRequest(`${endpoint}?${text}`);
  return collect(answer, label || `GET ${text}`);
}

async function post(endpoint: string, body: string, contentType = 'application/x-www-form-urlencoded'): Promise<HttpAnswer> {
  return httpRequest(endpoint, { method: 'POST', headers: { 'Content-Type': contentType }, body });
}

function collect(answer: HttpAnswer, label: string): string {
  assert.equal(answer.status, 200, `${label}: ${answer.text}`);
  assert.equal(answer.headers['content-type'], 'text/xml; charset=utf-8', label);
  assert.match(answer.text, /^<\?xml version="1\.0" encoding="UTF-8"\?>\n<OAI-PMH /, label);
  collected.push({ label, xml: answer.text });
  return answer.text;
}

function unescapeXml(text: string): string {
  return text
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&amp;/g, '&');
}

function attributesOf(text: string): Record<string, string> {
  return Object.fromEntries([...text.matchAll(/([\w:.-]+)="([^"]*)"/g)].map((match) => [match[1]!, unescapeXml(match[2]!)]));
}

/** Texts of every `<name>…</name>` (no attributes), unescaped. */
function texts(xml: string, name: string): string[] {
  return [...xml.matchAll(new RegExp(`<${name}>([^<]*)</${name}>`, 'g'))].map((match) => unescapeXml(match[1]!));
}

function text(xml: string, name: string): string {
  const all = texts(xml, name);
  assert.equal(all.length, 1, `one <${name}> expected in ${xml}`);
  return all[0]!;
}

/** The `request` element: its attributes (the echoed arguments) and its URL. */
function requestElement(xml: string): { args: Record<string, string>; url: string } {
  const match = /<request\b([^>]*)>([^<]*)<\/request>/.exec(xml);
  assert.ok(match, `no request element in ${xml}`);
  return { args: attributesOf(match[1]!), url: unescapeXml(match[2]!) };
}

/** The resumptionToken element in either spelling of an empty one (`<x/>`, `<x></x>`). */
function tokenElement(xml: string): { value: string; cursor: number; completeListSize: number } | undefined {
  const matches = [...xml.matchAll(/<resumptionToken\b([^>]*?)(?:\/>|>([^<]*)<\/resumptionToken>)/g)];
  if (matches.length === 0) return undefined;
  assert.equal(matches.length, 1, 'one resumptionToken per page');
  const attributes = attributesOf(matches[0]![1]!);
  assert.match(attributes.cursor ?? '', /^\d+$/, 'the resumptionToken carries a cursor');
  assert.match(attributes.completeListSize ?? '', /^\d+$/, 'the resumptionToken carries a completeListSize');
  return { value: unescapeXml(matches[0]![2] ?? ''), cursor: Number(attributes.cursor), completeListSize: Number(attributes.completeListSize) };
}

function withoutResponseDate(xml: string): string {
  return xml.replace(/<responseDate>[^<]*<\/responseDate>/, '<responseDate/>');
}

/** A whole list: the first page, then every resumptionToken followed; no page is an error. */
async function harvest(endpoint: string, params: Record<string, string>): Promise<{ pages: string[]; identifiers: string[] }> {
  const pages = [await call(endpoint, params)];
  for (let token = tokenElement(pages.at(-1)!); token && token.value !== ''; token = tokenElement(pages.at(-1)!)) {
    assert.ok(pages.length < 50, 'the list never ends');
    pages.push(await call(endpoint, { verb: params.verb!, resumptionToken: token.value }));
  }
  for (const page of pages) assert.deepEqual(errorCodes(page), [], page);
  return { pages, identifiers: pages.flatMap((page) => headers(page).map((header) => header.identifier)) };
}

function sorted(values: string[]): string[] {
  return [...values].sort();
}

/** The main site's identifiers of the files `keepFile` selects. */
function expectedIds(baseUrl: string, keepFile: (file: SiteFile) => boolean): string[] {
  return sorted(MAIN_FILES.filter(keepFile).map((file) => idOf(baseUrl, file.path)));
}

/** The `didl:Resource` elements of a record: attributes and, for By-Value, the decoded bytes. */
function didlResources(xml: string): Array<{ attributes: Record<string, string>; bytes?: Buffer }> {
  return [...xml.matchAll(/<didl:Resource\b([^>]*?)(?:\/>|>([^<]*)<\/didl:Resource>)/g)].map((match) => {
    const attributes = attributesOf(match[1]!);
    return match[2] === undefined ? { attributes } : { attributes, bytes: Buffer.from(match[2].replace(/\s+/g, ''), 'base64') };
  });
}

/** The `http:*` header fields of a record (http_header format or the DIDL's descriptor). */
function httpFields(xml: string): Record<string, string> {
  return Object.fromEntries([...xml.matchAll(/<http:([A-Za-z][\w-]*)>([^<]*)<\/http:\1>/g)].map((match) => [match[1]!, unescapeXml(match[2]!)]));
}

const httpDate = (iso: string) => new Date(iso).toUTCString();

describe('a site of eleven files', () => {
  const site = tempDir();
  const work = tempDir();
  const workZero = tempDir();
  let main: RunningRepository;
  /** The same site with byValueMax 0: every oai_didl record is By-Reference only. */
  let zero: RunningRepository;

  before(async () => {
    writeDatedTree(site.path, [...MAIN_FILES, BACKUP]);
    // The By-Value boundary cases below rely on these sizes.
    assert.equal(fileBytes(mainFile('data.json')).length, 100);
    assert.equal(fileBytes(mainFile('big.pdf')).length, 101);
    main = await startRepository(site.path, work.path, {
      repositoryName: 'Test site <A & B>',
      adminEmails: ['admin@example.org', 'ops@example.org'],
      pageRecords: 3,
      pageIdentifiers: 3,
      byValueMax: 100,
    });
    zero = await startRepository(site.path, workZero.path, { byValueMax: 0 });
  });

  after(async () => {
    await main?.stop();
    await zero?.stop();
    for (const dir of [site, work, workZero]) dir.cleanup();
  });

  test('Identify describes the repository', async () => {
    const xml = await call(main.endpoint, { verb: 'Identify' });
    assert.deepEqual(errorCodes(xml), []);
    assert.equal(text(xml, 'repositoryName'), 'Test site <A & B>');
    assert.equal(text(xml, 'baseURL'), `${main.baseUrl}/oai`);
    assert.equal(text(xml, 'protocolVersion'), '2.0');
    assert.deepEqual(texts(xml, 'adminEmail'), ['admin@example.org', 'ops@example.org']);
    // The oldest datestamp of the index; the older backup file is not exported.
    assert.equal(text(xml, 'earliestDatestamp'), '2020-01-01T00:00:00Z');
    assert.equal(text(xml, 'deletedRecord'), 'persistent');
    assert.equal(text(xml, 'granularity'), 'YYYY-MM-DDThh:mm:ssZ');
    assert.deepEqual(sorted(texts(xml, 'compression')), ['deflate', 'gzip']);
  });

  test('gzip and deflate Content-Encoding are honoured', async () => {
    for (const query of ['verb=Identify', 'verb=ListRecords&metadataPrefix=oai_didl']) {
      const url = `${main.endpoint}?${query}`;
      const identity = await httpRequest(url);
      assert.equal(identity.headers['content-encoding'], undefined);
      for (const [coding, decode] of [
        ['gzip', gunzipSync],
        ['deflate', inflateSync], // HTTP's deflate is the zlib format
      ] as const) {
        const answer = await httpRequest(url, { headers: { 'Accept-Encoding': coding } });
        assert.equal(answer.status, 200);
        assert.equal(answer.headers['content-encoding'], coding, `${query} with ${coding}`);
        assert.match(String(answer.headers.vary), /\bAccept-Encoding\b/i);
        assert.notEqual(answer.body.subarray(0, 5).toString('latin1'), '<?xml', 'the body is encoded');
        const decoded = decode(answer.body).toString('utf8');
        // The token carries the list's upper bound (a second before its responseDate): two
        // requests a second boundary apart get different ones.
        const comparable = (xml: string) => withoutResponseDate(xml).replace(/(<resumptionToken[^>]*>)[^<]*</g, '$1…<');
        assert.equal(comparable(decoded), comparable(identity.text), `${query} with ${coding}`);
        collect({ ...answer, text: decoded }, `GET ${query} (${coding})`);
      }
    }
  });

  test('ListMetadataFormats lists oai_dc, http_header and oai_didl, for the repository and for an item', async () => {
    const expected = FORMATS.map((format) => ({ ...format, schema: format.schema.replace('<base>', main.baseUrl) }));
    const queries: Array<Record<string, string>> = [
      { verb: 'ListMetadataFormats' },
      { verb: 'ListMetadataFormats', identifier: idOf(main.baseUrl, 'a.txt') },
      { verb: 'ListMetadataFormats', identifier: idOf(main.baseUrl, 'notes/a b&c.txt') },
    ];
    for (const query of queries) {
      const xml = await call(main.endpoint, query);
      assert.deepEqual(errorCodes(xml), [], xml);
      const formats = [...xml.matchAll(/<metadataFormat>(.*?)<\/metadataFormat>/gs)].map((match) => ({
        prefix: text(match[1]!, 'metadataPrefix'),
        schema: text(match[1]!, 'schema'),
        namespace: text(match[1]!, 'metadataNamespace'),
      }));
      const byPrefix = (a: { prefix: string }, b: { prefix: string }) => (a.prefix < b.prefix ? -1 : 1);
      assert.deepEqual(formats.sort(byPrefix), [...expected].sort(byPrefix));
    }
    // The http_header schema is served where ListMetadataFormats says.
    const schema = await httpRequest(expected[1]!.schema);
    assert.equal(schema.status, 200);
    assert.deepEqual(schema.body, readFileSync(HTTP_HEADER_XSD));
  });

  test('ListMetadataFormats for an unknown identifier is idDoesNotExist', async () => {
    for (const identifier of [idOf(main.baseUrl, 'no-such.txt'), 'http://elsewhere.example.org/a.txt', idOf(main.baseUrl, BACKUP.path)]) {
      const xml = await call(main.endpoint, { verb: 'ListMetadataFormats', identifier });
      assert.deepEqual(errorCodes(xml), ['idDoesNotExist'], identifier);
      assert.deepEqual(requestElement(xml).args, { verb: 'ListMetadataFormats', identifier });
    }
  });

  test('ListSets gives the MIME set hierarchy with readable names', async () => {
    const xml = await call(main.endpoint, { verb: 'ListSets' });
    assert.deepEqual(errorCodes(xml), []);
    const sets = [...xml.matchAll(/<set>(.*?)<\/set>/gs)].map((match) => [text(match[1]!, 'setSpec'), text(match[1]!, 'setName')]);
    assert.deepEqual(
      sets.sort((a, b) => (a[0]! < b[0]! ? -1 : 1)),
      [
        ['mime', 'Files by MIME type'],
        ['mime:application', 'MIME type application/*'],
        ['mime:application:json', 'MIME type application/json'],
        ['mime:application:pdf', 'MIME type application/pdf'],
        ['mime:image', 'MIME type image/*'],
        ['mime:image:gif', 'MIME type image/gif'],
        ['mime:image:png', 'MIME type image/png'],
        ['mime:text', 'MIME type text/*'],
        ['mime:text:css', 'MIME type text/css'],
        ['mime:text:html', 'MIME type text/html'],
        ['mime:text:plain', 'MIME type text/plain'],
      ],
    );
  });

  test('ListSets refuses any resumptionToken with badResumptionToken', async () => {
    const issued = tokenElement(await call(main.endpoint, { verb: 'ListIdentifiers', metadataPrefix: 'oai_dc' }))!.value;
    for (const token of ['abc', issued]) {
      const xml = await call(main.endpoint, { verb: 'ListSets', resumptionToken: token });
      assert.deepEqual(errorCodes(xml), ['badResumptionToken']);
      assert.deepEqual(requestElement(xml).args, { verb: 'ListSets', resumptionToken: token });
    }
  });

  test('GetRecord in oai_dc', async () => {
    const file = mainFile('a.txt');
    const identifier = idOf(main.baseUrl, file.path);
    const xml = await call(main.endpoint, { verb: 'GetRecord', identifier, metadataPrefix: 'oai_dc' });
    assert.deepEqual(errorCodes(xml), []);
    const [header, ...others] = headers(xml);
    assert.equal(others.length, 0);
    assert.equal(header!.identifier, identifier);
    assert.equal(header!.datestamp, file.date);
    assert.equal(header!.deleted, false);
    assert.ok(header!.setSpecs.includes('mime:text:plain'));
    assert.equal(text(xml, 'dc:identifier'), identifier);
    assert.deepEqual(sorted(texts(xml, 'dc:format')), sorted(['text/plain', `${fileBytes(file).length} bytes`]));
    assert.equal(text(xml, 'dc:date'), file.date);
    assert.equal(text(xml, 'dc:type'), 'Text');
  });

  test('GetRecord in http_header gives the headers a GET of the file returns', async () => {
    for (const [path, type] of [
      ['img/d.png', 'image/png'],
      ['notes/a b&c.txt', 'text/plain'],
    ] as const) {
      const file = mainFile(path);
      const identifier = idOf(main.baseUrl, path);
      const xml = await call(main.endpoint, { verb: 'GetRecord', identifier, metadataPrefix: 'http_header' });
      assert.deepEqual(errorCodes(xml), []);
      assert.equal(headers(xml)[0]!.identifier, identifier);
      const fields = httpFields(xml);
      const get = await httpRequest(identifier);
      assert.equal(get.status, 200);
      assert.deepEqual(get.body, fileBytes(file));
      assert.equal(fields['Content-Type'], type);
      assert.equal(fields['Content-Type'], get.headers['content-type']);
      assert.equal(fields['Content-Length'], String(fileBytes(file).length));
      assert.equal(fields['Content-Length'], get.headers['content-length']);
      assert.equal(fields['Last-Modified'], httpDate(file.date));
      assert.equal(fields['Last-Modified'], get.headers['last-modified']);
      assert.ok(fields.ETag, 'an ETag');
      assert.equal(fields.ETag, get.headers.etag);
    }
  });

  test('GetRecord in oai_didl carries the bytes By-Value with their sha-256', async () => {
    // d.png is binary, data.json exactly byValueMax (100) bytes long.
    for (const path of ['img/d.png', 'data.json', 'a.txt']) {
      const file = mainFile(path);
      const identifier = idOf(main.baseUrl, path);
      const xml = await call(main.endpoint, { verb: 'GetRecord', identifier, metadataPrefix: 'oai_didl' });
      assert.deepEqual(errorCodes(xml), []);
      const byValue = didlResources(xml).filter((resource) => resource.bytes !== undefined);
      assert.equal(byValue.length, 1, `${path}: one By-Value Resource`);
      assert.equal(byValue[0]!.attributes.encoding, 'base64');
      assert.deepEqual(byValue[0]!.bytes, fileBytes(file), path);
      assert.equal(text(xml, 'premis:messageDigestAlgorithm'), 'SHA-256');
      assert.equal(text(xml, 'premis:messageDigest'), createHash('sha256').update(fileBytes(file)).digest('hex'));
      assert.ok(xml.includes(`<dii:Identifier>${identifier.replace(/&/g, '&amp;')}</dii:Identifier>`));
    }
  });

  test('GetRecord in oai_didl is By-Reference only above byValueMax, and the reference serves the same bytes and headers', async () => {
    const cases = [
      { repository: () => main, path: 'big.pdf' }, // 101 bytes, byValueMax 100
      { repository: () => zero, path: 'a.txt' }, // byValueMax 0
      { repository: () => zero, path: 'img/d.png' },
    ];
    for (const { repository, path } of cases) {
      const { baseUrl, endpoint } = repository();
      const file = mainFile(path);
      const identifier = idOf(baseUrl, path);
      const xml = await call(endpoint, { verb: 'GetRecord', identifier, metadataPrefix: 'oai_didl' });
      assert.deepEqual(errorCodes(xml), []);
      const resources = didlResources(xml);
      assert.equal(resources.length, 1, `${path}: only a By-Reference Resource`);
      assert.equal(resources[0]!.bytes, undefined);
      assert.equal(resources[0]!.attributes.encoding, undefined);
      const ref = resources[0]!.attributes.ref!;
      assert.equal(ref, identifier);
      const recordHeaders = httpFields(xml);
      const headerRecord = httpFields(await call(endpoint, { verb: 'GetRecord', identifier, metadataPrefix: 'http_header' }));
      assert.deepEqual(recordHeaders, headerRecord, 'the DIDL header Descriptor and the http_header record agree');

      const get = await httpRequest(ref);
      assert.equal(get.status, 200);
      assert.deepEqual(get.body, fileBytes(file));
      assert.equal(text(xml, 'premis:messageDigest'), createHash('sha256').update(get.body).digest('hex'));
      assert.equal(resources[0]!.attributes.mimeType, get.headers['content-type']);
      assert.equal(get.headers['content-type'], recordHeaders['Content-Type']);
      assert.equal(get.headers['content-length'], recordHeaders['Content-Length']);
      assert.equal(get.headers['last-modified'], recordHeaders['Last-Modified']);
      assert.equal(get.headers.etag, recordHeaders.ETag);
      assert.equal(recordHeaders['Last-Modified'], httpDate(file.date));
    }
  });

  test('ListIdentifiers and ListRecords select by from and until, inclusive, in both granularities', async () => {
    const between = (from: string, until: string) => (file: SiteFile) => file.date >= from && file.date <= until;
    const cases: Array<{ params: Record<string, string>; keep: (file: SiteFile) => boolean }> = [
      // A day as until takes its last second (e.gif at 23:59:59), not the next day's first.
      { params: { from: '2020-01-03', until: '2020-01-05' }, keep: between('2020-01-03T00:00:00Z', '2020-01-05T23:59:59Z') },
      { params: { from: '2020-01-04T00:00:00Z', until: '2020-01-05T23:59:58Z' }, keep: between('2020-01-04T00:00:00Z', '2020-01-05T23:59:58Z') },
      { params: { from: '2020-01-04T00:00:01Z', until: '2020-01-05T23:59:59Z' }, keep: between('2020-01-04T00:00:01Z', '2020-01-05T23:59:59Z') },
      { params: { from: '2020-01-08' }, keep: (file) => file.date >= '2020-01-08' },
      { params: { until: '2020-01-01' }, keep: (file) => file.date < '2020-01-02' },
      { params: { until: '2020-01-02T00:00:00Z' }, keep: (file) => file.date <= '2020-01-02T00:00:00Z' },
      { params: {}, keep: () => true },
      // The extremes of the date syntax, far outside the datestamps (and before 1970).
      { params: { from: '0001-01-01', until: '9999-12-31' }, keep: () => true },
      { params: { from: '1969-12-31T23:59:59Z' }, keep: () => true },
    ];
    for (const { params, keep: keepFile } of cases) {
      const expected = expectedIds(main.baseUrl, keepFile);
      assert.ok(expected.length > 0);
      for (const verb of ['ListIdentifiers', 'ListRecords']) {
        const { identifiers } = await harvest(main.endpoint, { verb, metadataPrefix: 'oai_dc', ...params });
        assert.deepEqual(sorted(identifiers), expected, `${verb} ${JSON.stringify(params)}`);
      }
    }
  });

  test('sets select an item in the set or below it, by whole set parts only', async () => {
    const inSet = (spec: string) => (file: SiteFile) => MAIN_SETS[file.path] === spec || MAIN_SETS[file.path]!.startsWith(`${spec}:`);
    for (const set of ['mime', 'mime:text', 'mime:text:plain', 'mime:image', 'mime:application:pdf']) {
      const expected = expectedIds(main.baseUrl, inSet(set));
      for (const verb of ['ListIdentifiers', 'ListRecords']) {
        const { pages, identifiers } = await harvest(main.endpoint, { verb, metadataPrefix: 'oai_dc', set });
        assert.deepEqual(sorted(identifiers), expected, `${verb} set=${set}`);
        for (const header of pages.flatMap(headers)) assert.ok(header.setSpecs.includes(MAIN_SETS[pathOf(main.baseUrl, header.identifier)]!));
      }
    }
    assert.equal(expectedIds(main.baseUrl, inSet('mime:text')).length, 7, 'mime:text takes text/plain, text/html and text/css');
    const combined = await harvest(main.endpoint, { verb: 'ListIdentifiers', metadataPrefix: 'oai_dc', set: 'mime:text', from: '2020-01-04' });
    assert.deepEqual(
      sorted(combined.identifiers),
      expectedIds(main.baseUrl, (file) => inSet('mime:text')(file) && file.date >= '2020-01-04'),
    );
    // A set is matched part by part: mime:text:pl is not a prefix of mime:text:plain.
    for (const set of ['mime:text:pl', 'mime:tex', 'mime:video']) {
      for (const verb of ['ListIdentifiers', 'ListRecords']) {
        const xml = await call(main.endpoint, { verb, metadataPrefix: 'oai_dc', set });
        assert.deepEqual(errorCodes(xml), ['noRecordsMatch'], `${verb} set=${set}`);
      }
    }
  });

  test('ListIdentifiers pages: every item once, cursor and completeListSize right, an empty token at the end', async () => {
    const { pages, identifiers } = await harvest(main.endpoint, { verb: 'ListIdentifiers', metadataPrefix: 'oai_dc' });
    assert.equal(identifiers.length, MAIN_FILES.length, 'no item twice');
    assert.deepEqual(
      sorted(identifiers),
      expectedIds(main.baseUrl, () => true),
    );
    assert.deepEqual(
      pages.map((page) => headers(page).length),
      [3, 3, 3, 2],
    );
    pages.forEach((page, number) => {
      const token = tokenElement(page)!;
      assert.ok(token, `page ${number} has a resumptionToken`);
      assert.equal(token.cursor, 3 * number, `cursor of page ${number}`);
      assert.equal(token.completeListSize, MAIN_FILES.length);
      assert.equal(token.value === '', number === pages.length - 1, `only the last page's token is empty (page ${number})`);
    });
    // A resumed request echoes only the verb and the token.
    const second = requestElement(pages[1]!).args;
    assert.deepEqual(Object.keys(second).sort(), ['resumptionToken', 'verb']);
    assert.equal(second.resumptionToken, tokenElement(pages[0]!)!.value);
  });

  test('ListRecords pages by pageRecords with the same rules', async () => {
    const { pages, identifiers } = await harvest(main.endpoint, { verb: 'ListRecords', metadataPrefix: 'oai_didl' });
    assert.equal(identifiers.length, MAIN_FILES.length);
    assert.deepEqual(
      sorted(identifiers),
      expectedIds(main.baseUrl, () => true),
    );
    assert.deepEqual(
      pages.map((page) => page.match(/<record>/g)?.length),
      [3, 3, 3, 2],
    );
    assert.deepEqual(
      pages.map((page) => page.match(/<metadata>/g)?.length),
      [3, 3, 3, 2],
    );
    assert.deepEqual(
      pages.map((page) => tokenElement(page)!.cursor),
      [0, 3, 6, 9],
    );
    assert.deepEqual(
      pages.map((page) => tokenElement(page)!.completeListSize),
      [11, 11, 11, 11],
    );
    assert.equal(tokenElement(pages.at(-1)!)!.value, '');
  });

  test('a list that fits one page has no resumptionToken', async () => {
    // Three items with pages of three: exactly full, still one page.
    for (const params of [{ set: 'mime:image' }, { from: '2020-01-08' }] as Array<Record<string, string>>) {
      for (const verb of ['ListIdentifiers', 'ListRecords']) {
        const xml = await call(main.endpoint, { verb, metadataPrefix: 'oai_dc', ...params });
        assert.deepEqual(errorCodes(xml), []);
        assert.ok(headers(xml).length > 0 && headers(xml).length <= 3);
        assert.equal(tokenElement(xml), undefined, `${verb} ${JSON.stringify(params)}`);
        assert.ok(!xml.includes('resumptionToken'));
      }
    }
    assert.equal(expectedIds(main.baseUrl, (file) => file.date >= '2020-01-08').length, 3);
  });

  test('a resumptionToken used again gives the same page', async () => {
    for (const verb of ['ListIdentifiers', 'ListRecords']) {
      const first = await call(main.endpoint, { verb, metadataPrefix: 'oai_didl' });
      const token = tokenElement(first)!.value;
      const once = await call(main.endpoint, { verb, resumptionToken: token });
      await harvest(main.endpoint, { verb, metadataPrefix: 'oai_didl' }); // the list run to its end meanwhile
      const again = await call(main.endpoint, { verb, resumptionToken: token });
      assert.deepEqual(errorCodes(once), []);
      assert.equal(withoutResponseDate(again), withoutResponseDate(once), verb);
      assert.equal(tokenElement(once)!.cursor, 3);
    }
  });

  test('a resumptionToken is bound to its verb, and a changed one is refused', async () => {
    const identifiersToken = tokenElement(await call(main.endpoint, { verb: 'ListIdentifiers', metadataPrefix: 'oai_dc' }))!.value;
    const recordsToken = tokenElement(await call(main.endpoint, { verb: 'ListRecords', metadataPrefix: 'oai_dc' }))!.value;
    const flipped = `${identifiersToken.slice(0, 5)}${identifiersToken[5] === 'A' ? 'B' : 'A'}${identifiersToken.slice(6)}`;
    const cases: Array<[string, string]> = [
      ['ListRecords', identifiersToken],
      ['ListIdentifiers', recordsToken],
      ['ListIdentifiers', flipped],
      ['ListIdentifiers', 'not-a-token'],
    ];
    for (const [verb, resumptionToken] of cases) {
      const xml = await call(main.endpoint, { verb, resumptionToken });
      assert.deepEqual(errorCodes(xml), ['badResumptionToken'], `${verb} ${resumptionToken}`);
      assert.deepEqual(requestElement(xml).args, { verb, resumptionToken });
    }
  });

  test('every error condition has its exact code', async () => {
    const a = encodeURIComponent(idOf(main.baseUrl, 'a.txt'));
    const cases: Array<[string, string]> = [
      ['', 'badVerb'],
      ['metadataPrefix=oai_dc', 'badVerb'],
      ['verb=Identify&verb=Identify', 'badVerb'],
      ['verb=Identify&verb=ListSets', 'badVerb'],
      ['verb=Frobnicate', 'badVerb'],
      ['verb=identify', 'badVerb'],
      ['verb=LISTRECORDS&metadataPrefix=oai_dc', 'badVerb'],
      ['verb=ListRecords', 'badArgument'],
      ['verb=ListIdentifiers&set=mime', 'badArgument'],
      [`verb=GetRecord&identifier=${a}`, 'badArgument'],
      ['verb=GetRecord&metadataPrefix=oai_dc', 'badArgument'],
      ['verb=Identify&extra=1', 'badArgument'],
      ['verb=ListSets&set=mime', 'badArgument'],
      ['verb=ListRecords&metadataPrefix=oai_dc&identifier=x', 'badArgument'],
      ['verb=ListIdentifiers&metadataPrefix=oai_dc&metadataPrefix=oai_dc', 'badArgument'],
      ['verb=ListIdentifiers&metadataPrefix=oai_dc&set=mime&set=mime', 'badArgument'],
      ['verb=ListIdentifiers&metadataPrefix=oai_dc&from=2020-13-01', 'badArgument'],
      ['verb=ListIdentifiers&metadataPrefix=oai_dc&from=2020-02-30', 'badArgument'],
      ['verb=ListIdentifiers&metadataPrefix=oai_dc&until=2020-01-01T00:00:00', 'badArgument'],
      ['verb=ListIdentifiers&metadataPrefix=oai_dc&from=2020-01-01T00:00:00.5Z', 'badArgument'],
      ['verb=ListIdentifiers&metadataPrefix=oai_dc&from=2020-01-01&until=2020-01-05T00:00:00Z', 'badArgument'],
      ['verb=ListIdentifiers&metadataPrefix=oai_dc&from=2020-01-05&until=2020-01-04', 'badArgument'],
      ['verb=ListIdentifiers&metadataPrefix=oai_dc&from=2020-01-04T00:00:01Z&until=2020-01-04T00:00:00Z', 'badArgument'],
      ['verb=ListIdentifiers&resumptionToken=abc&metadataPrefix=oai_dc', 'badArgument'],
      ['verb=ListRecords&resumptionToken=abc&set=mime', 'badArgument'],
      ['verb=ListRecords&resumptionToken=abc&resumptionToken=abc', 'badArgument'],
      ['verb=ListIdentifiers&metadataPrefix=oai_dc&set=not%20a%20set', 'badArgument'],
      [`verb=GetRecord&identifier=${a}&metadataPrefix=marc21`, 'cannotDisseminateFormat'],
      ['verb=ListRecords&metadataPrefix=marc21', 'cannotDisseminateFormat'],
      ['verb=ListIdentifiers&metadataPrefix=marc21&set=mime', 'cannotDisseminateFormat'],
      [`verb=GetRecord&identifier=${encodeURIComponent(idOf(main.baseUrl, 'no-such.txt'))}&metadataPrefix=oai_dc`, 'idDoesNotExist'],
      [`verb=GetRecord&identifier=${encodeURIComponent(idOf(main.baseUrl, BACKUP.path))}&metadataPrefix=oai_dc`, 'idDoesNotExist'],
      // One item, one identifier: another spelling of the same URL is not it.
      [`verb=GetRecord&identifier=${encodeURIComponent(`${main.baseUrl}/notes/a%20b&c.txt`)}&metadataPrefix=oai_dc`, 'idDoesNotExist'],
      ['verb=GetRecord&identifier=urn%3Ax%3Ay&metadataPrefix=oai_dc', 'idDoesNotExist'],
      [`verb=GetRecord&identifier=${encodeURIComponent(`${main.baseUrl}/docs`)}&metadataPrefix=oai_dc`, 'idDoesNotExist'],
      [`verb=GetRecord&identifier=${encodeURIComponent(`${main.baseUrl}/`)}&metadataPrefix=oai_dc`, 'idDoesNotExist'],
      ['verb=ListIdentifiers&metadataPrefix=oai_dc&from=2021-01-01&until=2021-12-31', 'noRecordsMatch'],
      ['verb=ListRecords&metadataPrefix=oai_didl&until=2019-12-31T23:59:59Z', 'noRecordsMatch'],
      ['verb=ListRecords&metadataPrefix=oai_dc&set=mime:video', 'noRecordsMatch'],
      ['verb=ListIdentifiers&metadataPrefix=oai_dc&until=1969-12-31T23:59:59Z', 'noRecordsMatch'],
    ];
    for (const [query, code] of cases) {
      const xml = await call(main.endpoint, query);
      assert.deepEqual(errorCodes(xml), [code], `?${query}`);
      assert.ok(!/<(Identify|ListMetadataFormats|ListSets|GetRecord|ListIdentifiers|ListRecords)>/.test(xml), `?${query}: errors only`);
      const request = requestElement(xml);
      assert.equal(request.url, main.endpoint, `?${query}`);
      // Arguments are echoed unless the request was illegal (section 3.2).
      const echoed = code === 'badVerb' || code === 'badArgument' ? {} : Object.fromEntries(new URLSearchParams(query));
      assert.deepEqual(request.args, echoed, `?${query}`);
    }
  });

  test('the request element echoes the arguments of a legal request', async () => {
    const cases: Array<Record<string, string>> = [
      { verb: 'Identify' },
      { verb: 'ListSets' },
      { verb: 'ListMetadataFormats', identifier: idOf(main.baseUrl, 'notes/a b&c.txt') },
      { verb: 'GetRecord', identifier: idOf(main.baseUrl, 'notes/a b&c.txt'), metadataPrefix: 'oai_didl' },
      { verb: 'ListIdentifiers', metadataPrefix: 'http_header', from: '2020-01-02', until: '2020-01-09', set: 'mime:text' },
      { verb: 'ListRecords', metadataPrefix: 'oai_dc', from: '2020-01-02T00:00:00Z', set: 'mime:image:png' },
    ];
    for (const args of cases) {
      const xml = await call(main.endpoint, args);
      assert.deepEqual(errorCodes(xml), [], JSON.stringify(args));
      assert.deepEqual(requestElement(xml), { args, url: main.endpoint });
    }
  });

  test('a POST form gives the same answer as a GET', async () => {
    const queries = [
      'verb=Identify',
      `verb=GetRecord&metadataPrefix=oai_didl&identifier=${encodeURIComponent(idOf(main.baseUrl, 'notes/a b&c.txt'))}`,
      'verb=ListIdentifiers&metadataPrefix=oai_dc&set=mime:text&from=2020-01-02',
      'verb=ListRecords&metadataPrefix=oai_dc&until=2020-01-01T00:00:00Z',
      'verb=identify',
      'verb=ListRecords',
    ];
    for (const query of queries) {
      const get = await call(main.endpoint, query);
      for (const type of ['application/x-www-form-urlencoded', 'Application/X-WWW-Form-Urlencoded; charset=UTF-8']) {
        const posted = collect(await post(main.endpoint, query, type), `POST ${query}`);
        assert.equal(withoutResponseDate(posted), withoutResponseDate(get), `POST ${query} as ${type}`);
      }
    }
  });

  test('a POST of another type is 415, a body over 64 KiB is 413, a PUT is 405', async () => {
    for (const type of ['text/plain', 'application/json', 'multipart/form-data; boundary=x']) {
      const answer = await post(main.endpoint, 'verb=Identify', type);
      assert.equal(answer.status, 415, type);
    }
    const prefix = 'verb=Identify&pad=';
    const atLimit = `${prefix}${'x'.repeat(64 * 1024 - prefix.length)}`;
    assert.equal(Buffer.byteLength(atLimit), 64 * 1024);
    const accepted = await post(main.endpoint, atLimit);
    assert.equal(accepted.status, 200, 'exactly 64 KiB is accepted');
    assert.deepEqual(errorCodes(collect(accepted, 'POST 64 KiB')), ['badArgument']);
    const refused = await post(main.endpoint, `${atLimit}x`);
    assert.equal(refused.status, 413);
    for (const [method, body] of [
      ['PUT', 'verb=Identify'],
      ['DELETE', undefined],
    ] as const) {
      const answer = await httpRequest(`${main.endpoint}?verb=Identify`, { method, ...(body === undefined ? {} : { body }) });
      assert.equal(answer.status, 405, method);
      assert.match(String(answer.headers.allow), /\bPOST\b/);
      assert.match(String(answer.headers.allow), /\bGET\b/);
    }
  });
});

describe('a site where files are deleted', () => {
  const site = tempDir();
  const work = tempDir();
  let repository: RunningRepository;
  let beforeDeletion: { sets: string; formats: string };
  let deletedAt = 0;
  const gone = 'pics/only.gif';

  before(async () => {
    writeDatedTree(site.path, [
      { path: 'keep.txt', content: 'kept\n', date: '2020-01-01T00:00:00Z' },
      { path: gone, content: 'GIF89a', date: '2020-01-02T00:00:00Z' },
    ]);
    repository = await startRepository(site.path, work.path);
    const identifier = idOf(repository.baseUrl, gone);
    beforeDeletion = {
      sets: await call(repository.endpoint, { verb: 'ListSets' }),
      formats: await call(repository.endpoint, { verb: 'ListMetadataFormats', identifier }),
    };
    deletedAt = Math.floor(Date.now() / 1000);
    unlinkSync(join(site.path, gone));
    await repository.repository.scan();
  });

  after(async () => {
    await repository?.stop();
    site.cleanup();
    work.cleanup();
  });

  test('ListSets lists only sets with live members', async () => {
    assert.deepEqual(texts(beforeDeletion.sets, 'setSpec'), ['mime', 'mime:image', 'mime:image:gif', 'mime:text', 'mime:text:plain']);
    const xml = await call(repository.endpoint, { verb: 'ListSets' });
    assert.deepEqual(errorCodes(xml), []);
    assert.deepEqual(sorted(texts(xml, 'setSpec')), ['mime', 'mime:text', 'mime:text:plain']);
  });

  test('ListMetadataFormats for a deleted item is noMetadataFormats', async () => {
    assert.deepEqual(errorCodes(beforeDeletion.formats), []);
    const identifier = idOf(repository.baseUrl, gone);
    const xml = await call(repository.endpoint, { verb: 'ListMetadataFormats', identifier });
    assert.deepEqual(errorCodes(xml), ['noMetadataFormats']);
    assert.deepEqual(requestElement(xml).args, { verb: 'ListMetadataFormats', identifier });
  });

  test('GetRecord of a deleted item is its header with status="deleted", valid against OAI-PMH.xsd alone', async () => {
    const identifier = idOf(repository.baseUrl, gone);
    for (const metadataPrefix of ['oai_dc', 'http_header', 'oai_didl']) {
      const xml = await call(repository.endpoint, { verb: 'GetRecord', identifier, metadataPrefix });
      assert.deepEqual(errorCodes(xml), []);
      const [header, ...others] = headers(xml);
      assert.equal(others.length, 0);
      assert.equal(header!.identifier, identifier);
      assert.equal(header!.deleted, true, metadataPrefix);
      assert.match(xml, /<header status="deleted">/);
      assert.ok(!xml.includes('<metadata'), 'a deleted record has no metadata');
      // The deletion is a change: it is dated when it was seen, so incremental harvests get it.
      assert.ok(seconds(header!.datestamp) >= deletedAt, `${header!.datestamp} is not after the deletion`);
      const result = validate(xml, 'OAI-PMH.xsd');
      assert.ok(result.ok, result.output);
    }
  });

  test('an error response is valid against OAI-PMH.xsd alone', async () => {
    for (const query of ['verb=nope', 'verb=ListRecords', `verb=ListMetadataFormats&identifier=${encodeURIComponent(idOf(repository.baseUrl, gone))}`]) {
      const xml = await call(repository.endpoint, query);
      assert.equal(errorCodes(xml).length, 1);
      const result = validate(xml, 'OAI-PMH.xsd');
      assert.ok(result.ok, result.output);
    }
  });

  // Last in this group: it brings the deleted file back.
  test('an item created again after its deletion is live at once in GetRecord, as its URL is', async () => {
    const identifier = idOf(repository.baseUrl, gone);
    writeDatedTree(site.path, [{ path: gone, content: 'GIF89a again', date: '2020-03-01T00:00:00Z' }]);
    const record = await call(repository.endpoint, { verb: 'GetRecord', identifier, metadataPrefix: 'http_header' });
    const file = await httpRequest(identifier);
    assert.equal(file.status, 200);
    assert.deepEqual(errorCodes(record), []);
    assert.equal(headers(record)[0]!.deleted, false, 'the record must not say deleted while the URL serves the file');
    assert.equal(httpFields(record)['Content-Length'], String(Buffer.byteLength('GIF89a again')));
  });
});

describe('an empty site', () => {
  const site = tempDir();
  const work = tempDir();
  let repository: RunningRepository;

  before(async () => {
    repository = await startRepository(site.path, work.path);
  });

  after(async () => {
    await repository?.stop();
    site.cleanup();
    work.cleanup();
  });

  test('ListSets over an empty site is noSetHierarchy', async () => {
    const xml = await call(repository.endpoint, { verb: 'ListSets' });
    assert.deepEqual(errorCodes(xml), ['noSetHierarchy']);
    assert.deepEqual(requestElement(xml).args, { verb: 'ListSets' });
    assert.deepEqual(errorCodes(await call(repository.endpoint, { verb: 'ListIdentifiers', metadataPrefix: 'oai_dc' })), ['noRecordsMatch']);
    assert.deepEqual(errorCodes(await call(repository.endpoint, { verb: 'Identify' })), []);
  });
});

describe('a ListRecords page bounded by pageBytes', () => {
  const site = tempDir();
  const work = tempDir();
  let repository: RunningRepository;
  // A 50-byte file first (more than pageBytes on its own), then four of 8 bytes.
  const files: SiteFile[] = [
    { path: 'big.txt', content: `${'b'.repeat(49)}\n`, date: '2020-01-01T00:00:00Z' },
    ...[1, 2, 3, 4].map((n) => ({ path: `s${n}.txt`, content: `small ${n}\n`, date: `2020-01-0${n + 1}T00:00:00Z` })),
  ];

  before(async () => {
    writeDatedTree(site.path, files);
    repository = await startRepository(site.path, work.path, { pageRecords: 10, pageBytes: 20 });
  });

  after(async () => {
    await repository?.stop();
    site.cleanup();
    work.cleanup();
  });

  test('a page stops before the record that would take it past pageBytes, and carries at least one', async () => {
    const { pages, identifiers } = await harvest(repository.endpoint, { verb: 'ListRecords', metadataPrefix: 'oai_didl' });
    const paths = pages.map((page) => headers(page).map((header) => pathOf(repository.baseUrl, header.identifier)));
    // 50 bytes go alone (more than 20, but a page holds at least one); then 8 + 8 = 16 fits and
    // a third 8 would make 24.
    assert.deepEqual(paths, [['big.txt'], ['s1.txt', 's2.txt'], ['s3.txt', 's4.txt']]);
    for (const page of pages) {
      const byValue = didlResources(page).filter((resource) => resource.bytes !== undefined);
      assert.equal(byValue.length, headers(page).length, 'every record By-Value');
    }
    assert.deepEqual(
      pages.map((page) => tokenElement(page)!.cursor),
      [0, 1, 3],
    );
    assert.deepEqual(
      pages.map((page) => tokenElement(page)!.completeListSize),
      [5, 5, 5],
    );
    assert.equal(identifiers.length, files.length);
  });

  test('pageBytes does not bound pages without By-Value bytes', async () => {
    for (const params of [
      { verb: 'ListRecords', metadataPrefix: 'oai_dc' },
      { verb: 'ListIdentifiers', metadataPrefix: 'oai_didl' },
    ]) {
      const xml = await call(repository.endpoint, params);
      assert.equal(headers(xml).length, files.length, params.verb);
      assert.equal(tokenElement(xml), undefined);
    }
  });
});

describe('resumption tokens and the index file', () => {
  const files: SiteFile[] = [1, 2, 3, 4, 5, 6, 7].map((n) => ({ path: `f${n}.txt`, content: `file ${n}\n`, date: `2020-02-0${n}T00:00:00Z` }));

  async function withSite(work: (siteDir: string, workDir: string) => Promise<void>): Promise<void> {
    const site = tempDir();
    const state = tempDir();
    try {
      writeDatedTree(site.path, files);
      await work(site.path, state.path);
    } finally {
      site.cleanup();
      state.cleanup();
    }
  }

  test('tokens survive a restart of the server over the same index', async () => {
    await withSite(async (siteDir, workDir) => {
      const first = await startRepository(siteDir, workDir, { pageIdentifiers: 3 });
      let page: string;
      try {
        page = await call(first.endpoint, { verb: 'ListIdentifiers', metadataPrefix: 'oai_dc' });
      } finally {
        await first.stop();
      }
      const seen = headers(page).map((header) => pathOf(first.baseUrl, header.identifier));
      const token = tokenElement(page)!;
      assert.equal(token.completeListSize, 7);

      const second = await startRepository(siteDir, workDir, { pageIdentifiers: 3 });
      try {
        assert.equal(second.repository.indexFile, first.repository.indexFile);
        const pages: string[] = [];
        for (let next = token.value; next !== ''; next = tokenElement(pages.at(-1)!)!.value) {
          assert.ok(pages.length < 10);
          pages.push(await call(second.endpoint, { verb: 'ListIdentifiers', resumptionToken: next }));
          assert.deepEqual(errorCodes(pages.at(-1)!), [], pages.at(-1));
        }
        assert.deepEqual(
          pages.map((each) => tokenElement(each)!.cursor),
          [3, 6],
        );
        for (const each of pages) seen.push(...headers(each).map((header) => pathOf(second.baseUrl, header.identifier)));
        assert.deepEqual(sorted(seen), sorted(files.map((file) => file.path)));
      } finally {
        await second.stop();
      }
    });
  });

  test('a token is refused once the index file is replaced by a new one', async () => {
    await withSite(async (siteDir, workDir) => {
      const first = await startRepository(siteDir, workDir, { pageIdentifiers: 3 });
      let token: string;
      try {
        token = tokenElement(await call(first.endpoint, { verb: 'ListIdentifiers', metadataPrefix: 'oai_dc' }))!.value;
      } finally {
        await first.stop();
      }
      for (const suffix of ['', '-wal', '-shm']) rmSync(`${first.repository.indexFile}${suffix}`, { force: true });

      const second = await startRepository(siteDir, workDir, { pageIdentifiers: 3 });
      try {
        const xml = await call(second.endpoint, { verb: 'ListIdentifiers', resumptionToken: token });
        assert.deepEqual(errorCodes(xml), ['badResumptionToken']);
        assert.deepEqual(requestElement(xml).args, { verb: 'ListIdentifiers', resumptionToken: token });
        // The new index serves the same list with tokens of its own.
        const fresh = tokenElement(await call(second.endpoint, { verb: 'ListIdentifiers', metadataPrefix: 'oai_dc' }))!;
        assert.equal(fresh.completeListSize, 7);
        assert.notEqual(fresh.value, token);
      } finally {
        await second.stop();
      }
    });
  });
});

test('every response of this file is valid OAI-PMH with its payload schemas', () => {
  assert.ok(collected.length > 100, `only ${collected.length} responses were collected`);
  const verbs = new Set(
    collected.flatMap((entry) => [...(/<(Identify|ListMetadataFormats|ListSets|GetRecord|ListIdentifiers|ListRecords)>/.exec(entry.xml) ?? [])].slice(1)),
  );
  assert.equal(verbs.size, 6, 'every verb answered at least once');
  const dir = tempDir('repo-xsd-');
  try {
    const result = validateAll(collected, allPayloadsSchema(dir.path));
    const failures = result.output.split('\n').filter((line) => line !== '' && !line.endsWith(' validates'));
    assert.ok(result.ok, failures.slice(0, 40).join('\n'));
  } finally {
    dir.cleanup();
  }
});
