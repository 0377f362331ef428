// End to end: the harvester against oai_didl repositories that are not ours, written here as
// small node:http servers on 127.0.0.1 that answer the way DSpace's DIDL crosswalk, LANL's
// aDORe and the Dutch DARE/NARCIS repositories do: By-Reference URLs that redirect to a
// handle resolver, a file server or a CDN on another origin; items without bitstreams;
// identifiers from DIDLDocumentId; several dii:Identifiers; inline MARC/MODS Resources.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { audit, Catalog, type HarvestOptions, harvest, restoreSite, verifyArchive, verifyBag } from '../packages/archiver/src/index.ts';
import { premisXml, recordElement, recordsXml } from './batch-bags.ts';

const FAST_RETRY = { retries: 1, baseDelayMs: 5, maxDelayMs: 20 };
const USER = 'harvester';
const PASSWORD = 'open sesame';
const AUTHORIZATION = `Basic ${Buffer.from(`${USER}:${PASSWORD}`).toString('base64')}`;
const temporaries: string[] = [];
const servers: Server[] = [];
after(async () => {
  for (const server of servers) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
  for (const dir of temporaries) rmSync(dir, { recursive: true, force: true });
});

// ---------------------------------------------------------------------------------------------
// Servers

type Route = (req: IncomingMessage, res: ServerResponse) => void;

interface TestServer {
  origin: string;
  port: number;
  /** Every request: its path and its Authorization header. */
  seen: Array<{ path: string; authorization: string | undefined }>;
  routes: Map<string, Route>;
  /** Connections open now. */
  open: Set<Socket>;
}

async function startServer(): Promise<TestServer> {
  const routes = new Map<string, Route>();
  const seen: TestServer['seen'] = [];
  const open = new Set<Socket>();
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url!, 'http://x').pathname);
    seen.push({ path: req.url!, authorization: req.headers.authorization });
    const route = routes.get(path);
    if (route) route(req, res);
    else {
      res.writeHead(404);
      res.end();
    }
  });
  server.on('connection', (socket: Socket) => {
    open.add(socket);
    socket.on('close', () => open.delete(socket));
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return { origin: `http://127.0.0.1:${port}`, port, seen, routes, open };
}

const redirect =
  (status: number, location: string): Route =>
  (_req, res) => {
    res.writeHead(status, { location });
    res.end(`moved to ${location}`);
  };
const file =
  (bytes: string | Buffer, headers: Record<string, string> = {}): Route =>
  (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(Buffer.byteLength(bytes)), ...headers });
    res.end(bytes);
  };
const sha256 = (bytes: string | Buffer): string => createHash('sha256').update(bytes).digest('hex');

/**
 * An OAI-PMH repository that lists `records` (record elements as text) in one ListRecords
 * page; with `auth`, every OAI request and every path under /bitstream/ needs the password.
 */
async function startRepository(records: () => string[], options: { auth?: boolean; prefix?: string } = {}): Promise<TestServer> {
  const repository = await startServer();
  const oai: Route = (req, res) => {
    if (options.auth && req.headers.authorization !== AUTHORIZATION) {
      res.writeHead(401, { 'www-authenticate': 'Basic realm="repository"' });
      res.end();
      return;
    }
    const verb = new URL(req.url!, 'http://x').searchParams.get('verb');
    const body =
      verb === 'Identify'
        ? `<Identify><repositoryName>Test</repositoryName><baseURL>${repository.origin}/oai</baseURL><protocolVersion>2.0</protocolVersion><adminEmail>a@b.c</adminEmail><earliestDatestamp>2000-01-01T00:00:00Z</earliestDatestamp><deletedRecord>persistent</deletedRecord><granularity>YYYY-MM-DDThh:mm:ssZ</granularity></Identify>`
        : verb === 'ListMetadataFormats'
          ? `<ListMetadataFormats><metadataFormat><metadataPrefix>oai_dc</metadataPrefix><schema>http://www.openarchives.org/OAI/2.0/oai_dc.xsd</schema><metadataNamespace>http://www.openarchives.org/OAI/2.0/oai_dc/</metadataNamespace></metadataFormat><metadataFormat><metadataPrefix>${options.prefix ?? 'oai_didl'}</metadataPrefix><schema>http://standards.iso.org/ittf/PubliclyAvailableStandards/MPEG-21_schema_files/did/didl.xsd</schema><metadataNamespace>urn:mpeg:mpeg21:2002:02-DIDL-NS</metadataNamespace></metadataFormat></ListMetadataFormats>`
          : `<ListRecords>${records().join('\n')}</ListRecords>`;
    res.writeHead(200, { 'content-type': 'text/xml; charset=utf-8' });
    res.end(
      `<?xml version="1.0" encoding="UTF-8"?>\n<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">` +
        `<responseDate>2026-11-25T00:00:00Z</responseDate><request verb="${verb}">${repository.origin}/oai</request>${body}</OAI-PMH>`,
    );
  };
  repository.routes.set('/oai', oai);
  return repository;
}

function oaiRecord(identifier: string, didl: string, datestamp = '2008-03-05T12:00:00Z'): string {
  return `<record><header><identifier>${identifier}</identifier><datestamp>${datestamp}</datestamp></header><metadata>${didl}</metadata></record>`;
}

/** A DIDL as DSpace's DIDL crosswalk writes it: DIDLInfo, urn:hdl identifier, oai_dc, one Component per bitstream. */
function dspaceDidl(handle: string, components: string[]): string {
  return (
    `<didl:DIDL  xmlns:didl="urn:mpeg:mpeg21:2002:02-DIDL-NS"   xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:schemaLocation="urn:mpeg:mpeg21:2002:02-DIDL-NS http://standards.iso.org/ittf/PubliclyAvailableStandards/MPEG-21_schema_files/did/didl.xsd ">` +
    `<didl:DIDLInfo><dcterms:created xmlns:dcterms="http://purl.org/dc/terms/">2008-03-05T12:00:00Z</dcterms:created> </didl:DIDLInfo>` +
    `<didl:Item id="uuid-${handle.replace(/\W/g, '')}"><didl:Descriptor><didl:Statement mimeType="application/xml; charset=utf-8">` +
    `<dii:Identifier xmlns:dii="urn:mpeg:mpeg21:2002:01-DII-NS">urn:hdl:${handle}</dii:Identifier></didl:Statement></didl:Descriptor>` +
    `<didl:Descriptor><didl:Statement mimeType="application/xml; charset=utf-8"><oai_dc:dc xmlns:oai_dc="http://www.openarchives.org/OAI/2.0/oai_dc/" xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>Item ${handle}</dc:title></oai_dc:dc></didl:Statement></didl:Descriptor>` +
    (components.length === 0 ? '<P>There are no files associated with this item.</P>' : components.join('')) +
    `</didl:Item></didl:DIDL>`
  );
}

const byReference = (ref: string, mimeType = 'application/pdf') =>
  `<didl:Component id="uuid-c"><didl:Resource ref="${ref}" mimeType="${mimeType}"></didl:Resource></didl:Component>`;
const byValue = (bytes: string, mimeType = 'text/plain') =>
  `<didl:Component><didl:Resource mimeType="${mimeType}" encoding="base64">${Buffer.from(bytes).toString('base64')}</didl:Resource></didl:Component>`;

function archiveDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'oaibag-other-'));
  temporaries.push(dir);
  return join(dir, 'archive');
}

async function run(repository: TestServer, archive: string, extra: Partial<HarvestOptions> = {}) {
  const lines: string[] = [];
  const summary = await harvest({ baseUrl: `${repository.origin}/oai`, archiveDir: archive, retry: FAST_RETRY, log: (line) => lines.push(line), ...extra });
  return { summary, lines };
}

function catalogRows(archive: string) {
  const catalog = Catalog.open(archive, { create: false });
  try {
    const versions = catalog
      .statement('SELECT v.*, r.identifier, b.bag_path FROM versions v JOIN resources r ON r.id = v.resource_id JOIN bags b ON b.id = v.bag_id ORDER BY v.id')
      .all() as Array<Record<string, unknown>>;
    const failures = catalog.statement('SELECT * FROM failures WHERE resolved_at IS NULL ORDER BY id').all() as Array<Record<string, unknown>>;
    const fetches = new Map(versions.map((version) => [String(version.identifier), catalog.versionFetches(Number(version.id))]));
    return { versions, failures, fetches };
  } finally {
    catalog.close();
  }
}

const bagOf = (archive: string, versions: Array<Record<string, unknown>>, identifier: string): string =>
  join(archive, String(versions.find((version) => version.identifier === identifier)!.bag_path));

// ---------------------------------------------------------------------------------------------

test('DSpace, aDORe and DARE-shaped records: redirects to other hosts followed, credentials kept at home, every record archived', async () => {
  const files = await startServer(); // a separate file server / CDN: another origin
  const pdf = Buffer.from('%PDF-1.4 a DSpace bitstream\n');
  const marc = 'the aDORe datastream bytes';
  const thesis = Buffer.from('%PDF-1.7 a DARE object file\n');
  let repository!: TestServer;
  repository = await startRepository(
    () => [
      // DSpace: an item without bitstreams (the crosswalk writes a bare <P>).
      oaiRecord('oai:dspace.test:123456789/7', dspaceDidl('123456789/7', [])),
      // DSpace: a bitstream whose URL (unescaped name) goes through a handle resolver and a
      // 303 to the file server; and a small bitstream By-Value.
      oaiRecord(
        'oai:dspace.test:123456789/8',
        dspaceDidl('123456789/8', [byReference(`${repository.origin}/bitstream/123456789/8/1/my paper (final).pdf`), byValue('license text')]),
      ),
      // aDORe: the identifier is the DIDLDocumentId; an inline MARC Resource; a datastream
      // behind an OpenURL resolver that answers 307 to a host name (localhost), not an address.
      oaiRecord(
        'info:lanl-repo/i/1',
        `<didl:DIDL xmlns:didl="urn:mpeg:mpeg21:2002:02-DIDL-NS" xmlns:diext="http://library.lanl.gov/2004/diext/" DIDLDocumentId="info:lanl-repo/i/1" diext:DIDLDocumentCreated="2008-03-05T12:00:00Z"><didl:Item>` +
          `<didl:Item><didl:Component><didl:Resource mimeType="application/xml"><marc:record xmlns:marc="http://www.loc.gov/MARC21/slim"><marc:leader>00000nam</marc:leader></marc:record></didl:Resource></didl:Component></didl:Item>` +
          `<didl:Item><didl:Component><didl:Resource mimeType="text/plain" ref="${repository.origin}/resolver?url_ver=Z39.88-2004&amp;rft_id=info:lanl-repo/ds/5&amp;svc_id=info:lanl-repo/svc/getDatastream"/></didl:Component></didl:Item>` +
          `</didl:Item></didl:DIDL>`,
      ),
      // DARE: two dii:Identifiers on the top Item, a jump-off page, descriptive metadata inline,
      // and an object file with a SHA-256 digest on a file server reached by a 301.
      oaiRecord(
        'oai:dare.test:548',
        `<didl:DIDL xmlns:didl="urn:mpeg:mpeg21:2002:02-DIDL-NS" xmlns:dii="urn:mpeg:mpeg21:2002:01-DII-NS" xmlns:dip="urn:mpeg:mpeg21:2005:01-DIP-NS" xmlns:premis="http://www.loc.gov/premis/v3"><didl:Item>` +
          `<didl:Descriptor><didl:Statement mimeType="application/xml"><dii:Identifier>URN:NBN:NL:UI:17-548</dii:Identifier></didl:Statement></didl:Descriptor>` +
          `<didl:Descriptor><didl:Statement mimeType="application/xml"><dii:Identifier>info:doi/10.1000/548</dii:Identifier></didl:Statement></didl:Descriptor>` +
          `<didl:Descriptor><didl:Statement mimeType="text/xml"><dcterms:modified xmlns:dcterms="http://purl.org/dc/terms/">2009-02-13T16:15:43Z</dcterms:modified></didl:Statement></didl:Descriptor>` +
          `<didl:Item><didl:Descriptor><didl:Statement mimeType="application/xml"><dip:ObjectType>info:eu-repo/semantics/descriptiveMetadata</dip:ObjectType></didl:Statement></didl:Descriptor>` +
          `<didl:Component><didl:Resource mimeType="application/xml"><mods xmlns="http://www.loc.gov/mods/v3"><titleInfo><title>A thesis</title></titleInfo></mods></didl:Resource></didl:Component></didl:Item>` +
          `<didl:Item><didl:Descriptor><didl:Statement mimeType="application/xml"><dip:ObjectType>info:eu-repo/semantics/objectFile</dip:ObjectType></didl:Statement></didl:Descriptor>` +
          `<didl:Component><didl:Descriptor><didl:Statement mimeType="application/xml"><premis:fixity><premis:messageDigestAlgorithm>SHA-256</premis:messageDigestAlgorithm><premis:messageDigest>${sha256(thesis)}</premis:messageDigest></premis:fixity></didl:Statement></didl:Descriptor>` +
          `<didl:Resource mimeType="application/pdf" ref="${repository.origin}/548/thesis.pdf"/></didl:Component></didl:Item>` +
          `</didl:Item></didl:DIDL>`,
      ),
    ],
    { auth: true },
  );
  repository.routes.set('/bitstream/123456789/8/1/my paper (final).pdf', (req, res) => {
    // DSpace behind a login: the bitstream URL needs the password, then hands over to the store.
    if (req.headers.authorization !== AUTHORIZATION) return void res.writeHead(401).end();
    redirect(302, `${repository.origin}/handle/123456789/8/file`)(req, res);
  });
  repository.routes.set('/handle/123456789/8/file', redirect(303, `${files.origin}/store/ab/cd/abcd.pdf`));
  repository.routes.set('/resolver', redirect(307, `http://localhost:${files.port}/datastreams/5`));
  repository.routes.set('/548/thesis.pdf', redirect(301, `${files.origin}/dare/thesis.pdf`));
  files.routes.set('/store/ab/cd/abcd.pdf', file(pdf, { 'content-type': 'application/pdf' }));
  files.routes.set('/datastreams/5', file(marc, { 'content-type': 'text/plain' }));
  files.routes.set('/dare/thesis.pdf', file(thesis, { 'content-type': 'application/pdf' }));

  const archive = archiveDir();
  const { summary, lines } = await run(repository, archive, { credentials: { user: USER, password: PASSWORD } });
  assert.equal(summary.failed, 0, lines.join('\n'));
  assert.equal(summary.added, 4);

  // Credentials went to the repository's origin only, never to the file server.
  assert.ok(files.seen.length >= 3);
  assert.deepEqual(
    files.seen.filter((request) => request.authorization !== undefined),
    [],
  );
  assert.equal(repository.seen.find((request) => request.path.startsWith('/bitstream/'))?.authorization, AUTHORIZATION);
  // The file server's connections were closed with the harvest.
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.equal(files.open.size, 0);

  const { versions, fetches } = catalogRows(archive);
  const byId = (identifier: string) => versions.find((version) => version.identifier === identifier)!;
  // The item without bitstreams: an AIP with an empty payload and its metadata as received.
  assert.equal(byId('oai:dspace.test:123456789/7').payload_files, 0);
  assert.equal(byId('oai:dspace.test:123456789/7').size, 0);
  const bag = bagOf(archive, versions, 'oai:dspace.test:123456789/7');
  assert.equal((await verifyBag(bag)).valid, true);
  const records = recordsXml(archive, String(byId('oai:dspace.test:123456789/7').bag_path));
  const empty = recordElement(records, 'oai:dspace.test:123456789/7');
  assert.doesNotMatch(empty, /<payload |<revisit /, 'no payload file for an item without bitstreams');
  assert.match(empty, /<P>There are no files associated with this item\.<\/P>/);

  // The DSpace bitstream: fetched from the file server after two redirects, named in the catalog and in PREMIS.
  assert.equal(byId('oai:dspace.test:123456789/8').payload_files, 2);
  const dspaceFetch = fetches.get('oai:dspace.test:123456789/8')!;
  assert.equal(dspaceFetch.length, 1);
  assert.equal(dspaceFetch[0]!.url, `${files.origin}/store/ab/cd/abcd.pdf`);
  assert.deepEqual(dspaceFetch[0]!.redirects, [`${repository.origin}/handle/123456789/8/file`, `${files.origin}/store/ab/cd/abcd.pdf`]);
  assert.equal(dspaceFetch[0]!.ref, `${repository.origin}/bitstream/123456789/8/1/my%20paper%20(final).pdf`);
  const premis = premisXml(archive, String(byId('oai:dspace.test:123456789/8').bag_path));
  assert.ok(
    premis.includes(`part 1 by-reference ${dspaceFetch[0]!.ref} -&gt; ${repository.origin}/handle/123456789/8/file -&gt; ${files.origin}/store/ab/cd/abcd.pdf`),
    premis,
  );
  const manifest = readFileSync(join(bag, 'manifest-sha256.txt'), 'utf8');
  assert.ok(manifest.includes(sha256(pdf)) && manifest.includes(sha256('license text')));
  // A bitstream named by its own URL in the bag, as the repository serves it.
  const repositoryHost = new URL(repository.origin).host.replace(':', '_');
  assert.ok(manifest.includes(`  data/${repositoryHost}/bitstream/123456789/8/1/my paper (final).pdf\n`), manifest);

  // aDORe: identified by its DIDLDocumentId, the resolver's 307 to a host name followed.
  assert.equal(fetches.get('info:lanl-repo/i/1')![0]!.url, `http://localhost:${files.port}/datastreams/5`);
  assert.match(recordElement(records, 'info:lanl-repo/i/1'), /DIDLDocumentId="info:lanl-repo\/i\/1"/);
  // DARE: its two identifiers kept as received; the object file checked against its digest and
  // named by its URL.
  assert.match(recordElement(records, 'oai:dare.test:548'), /<dii:Identifier>URN:NBN:NL:UI:17-548<\/dii:Identifier>/);
  assert.equal(byId('oai:dare.test:548').sha256, sha256(thesis));
  assert.ok(manifest.includes(`${sha256(thesis)}  data/${repositoryHost}/548/thesis.pdf\n`), manifest);

  const report = await verifyArchive({ archiveDir: archive, jobs: 1 });
  assert.equal(report.damaged, 0);
  assert.equal(report.valid, 1, 'the four records are one batch bag');
});

test('a redirect loop, 11 hops and a wrong digest behind a redirect fail their record with a coded reason; 10 hops are followed', async () => {
  const files = await startServer();
  const body = 'the bytes at the end of the chain';
  let repository!: TestServer;
  const digest = (value: string) =>
    `<didl:Descriptor><didl:Statement mimeType="application/xml"><premis:fixity xmlns:premis="http://www.loc.gov/premis/v3"><premis:messageDigestAlgorithm>SHA-256</premis:messageDigestAlgorithm><premis:messageDigest>${value}</premis:messageDigest></premis:fixity></didl:Statement></didl:Descriptor>`;
  const component = (ref: string, extra = '') => `<didl:Component>${extra}<didl:Resource ref="${ref}" mimeType="text/plain"/></didl:Component>`;
  const didl = (id: string, inner: string) =>
    `<didl:DIDL xmlns:didl="urn:mpeg:mpeg21:2002:02-DIDL-NS" xmlns:dii="urn:mpeg:mpeg21:2002:01-DII-NS"><didl:Item><didl:Descriptor><didl:Statement mimeType="application/xml"><dii:Identifier>${id}</dii:Identifier></didl:Statement></didl:Descriptor>${inner}</didl:Item></didl:DIDL>`;
  repository = await startRepository(() => [
    oaiRecord('loop', didl('urn:x:loop', component(`${repository.origin}/loop/a`))),
    oaiRecord('ten', didl('urn:x:ten', component(`${repository.origin}/hop/10`))),
    oaiRecord('eleven', didl('urn:x:eleven', component(`${repository.origin}/hop/11`))),
    oaiRecord('bad-digest', didl('urn:x:bad', component(`${repository.origin}/moved`, digest('0'.repeat(64))))),
    oaiRecord('good-digest', didl('urn:x:good', component(`${repository.origin}/moved`, digest(sha256(body))))),
  ]);
  repository.routes.set('/loop/a', redirect(302, '/loop/b'));
  repository.routes.set('/loop/b', redirect(302, `${files.origin}/loop/c`));
  files.routes.set('/loop/c', redirect(307, `${repository.origin}/loop/a`));
  // /hop/n answers with a redirect to /hop/n-1 (alternating origins); /hop/0 is the file.
  for (let n = 1; n <= 11; n++) {
    const next = n - 1 === 0 ? '/hop/0' : `/hop/${n - 1}`;
    const route = redirect(n % 2 === 0 ? 301 : 308, `${n % 2 === 0 ? files.origin : repository.origin}${next}`);
    repository.routes.set(`/hop/${n}`, route);
    files.routes.set(`/hop/${n}`, route);
  }
  repository.routes.set('/hop/0', file(body));
  files.routes.set('/hop/0', file(body));
  repository.routes.set('/moved', redirect(302, `${files.origin}/final`));
  files.routes.set('/final', file(body));

  const archive = archiveDir();
  const { summary } = await run(repository, archive);
  assert.equal(summary.added, 2);
  assert.equal(summary.failed, 3);
  const { versions, failures, fetches } = catalogRows(archive);
  assert.deepEqual(versions.map((version) => version.identifier).sort(), ['good-digest', 'ten']);
  assert.equal(fetches.get('ten')![0]!.redirects.length, 10);
  const failure = (identifier: string) => failures.find((row) => row.identifier === identifier)!;
  assert.equal(failure('loop').code, 'ERR_HARVEST_REDIRECTS');
  assert.equal(failure('loop').stage, 'fetch');
  assert.match(
    String(failure('loop').message),
    new RegExp(`the redirects loop: ${repository.origin}/loop/a -> ${repository.origin}/loop/b -> ${files.origin}/loop/c -> ${repository.origin}/loop/a$`),
  );
  assert.equal(failure('eleven').code, 'ERR_HARVEST_REDIRECTS');
  assert.match(String(failure('eleven').message), /more than 10 redirects: .*\/hop\/11 -> .*\/hop\/0$/);
  assert.equal(failure('bad-digest').code, 'ERR_HARVEST_VERIFY');
  assert.equal(failure('bad-digest').expected, '0'.repeat(64));
  assert.equal(failure('bad-digest').found, sha256(body));
  // Nothing of a refused record is stored.
  assert.equal(readdirSync(join(archive, 'tmp')).length, 0);
});

test('refs and redirects into non-public networks are refused before any connection; a checked name is connected to at the address checked', async () => {
  const files = await startServer();
  let repository!: TestServer;
  const didl = (id: string, ref: string) =>
    `<didl:DIDL xmlns:didl="urn:mpeg:mpeg21:2002:02-DIDL-NS" xmlns:dii="urn:mpeg:mpeg21:2002:01-DII-NS"><didl:Item><didl:Descriptor><didl:Statement mimeType="application/xml"><dii:Identifier>${id}</dii:Identifier></didl:Statement></didl:Descriptor><didl:Component><didl:Resource ref="${ref}" mimeType="text/plain"/></didl:Component></didl:Item></didl:DIDL>`;
  repository = await startRepository(() => [
    oaiRecord('private-ref', didl('urn:x:1', 'http://10.20.30.40/secret')),
    oaiRecord('metadata-service', didl('urn:x:2', `${repository.origin}/to-metadata`)),
    oaiRecord('named-metadata', didl('urn:x:3', 'http://instance-data.test/latest/meta-data/')),
    oaiRecord('ipv6-mapped', didl('urn:x:4', 'http://[::ffff:192.168.1.1]/')),
    oaiRecord('other-scheme', didl('urn:x:5', `${repository.origin}/to-file`)),
    oaiRecord('pinned-name', didl('urn:x:6', `http://cdn.test:${files.port}/object`)),
  ]);
  repository.routes.set('/to-metadata', redirect(302, 'http://169.254.169.254/latest/meta-data/iam/'));
  repository.routes.set('/to-file', redirect(302, 'file:///etc/passwd'));
  files.routes.set('/object', file('from the CDN'));
  // Names that no real resolver knows: `cdn.test` is this machine, `instance-data.test` a
  // cloud metadata address. Success for the first proves the connection used the address checked.
  const resolveHost = async (hostname: string) => {
    if (hostname === 'cdn.test') return [{ address: '127.0.0.1', family: 4 }];
    if (hostname === 'instance-data.test') return [{ address: '169.254.169.254', family: 4 }];
    throw Object.assign(new Error(`unknown host ${hostname}`), { code: 'ENOTFOUND' });
  };
  const archive = archiveDir();
  const { summary } = await run(repository, archive, { resolveHost });
  assert.equal(summary.added, 1);
  assert.equal(summary.failed, 5);
  const { failures, fetches } = catalogRows(archive);
  const failure = (identifier: string) => failures.find((row) => row.identifier === identifier)!;
  assert.equal(failure('private-ref').code, 'ERR_HARVEST_REF_REFUSED');
  assert.match(String(failure('private-ref').message), /http:\/\/10\.20\.30\.40\/secret is refused: 10\.20\.30\.40 is a private address/);
  assert.equal(failure('metadata-service').code, 'ERR_HARVEST_REF_REFUSED');
  assert.match(String(failure('metadata-service').message), /169\.254\.169\.254 is a link-local address/);
  assert.equal(failure('named-metadata').code, 'ERR_HARVEST_REF_REFUSED');
  assert.match(String(failure('named-metadata').message), /instance-data\.test resolves to 169\.254\.169\.254 is a link-local address/);
  assert.equal(failure('ipv6-mapped').code, 'ERR_HARVEST_REF_REFUSED');
  assert.equal(failure('other-scheme').code, 'ERR_HARVEST_REF_REFUSED');
  assert.match(String(failure('other-scheme').message), /leads to a file URL; only http and https are followed/);
  assert.equal(fetches.get('pinned-name')![0]!.url, `http://cdn.test:${files.port}/object`);
});

test('a record without datastream is archived, skipped by restore with a count, shown by audit', async () => {
  const site = 'http://site.test';
  const didl = (id: string, inner: string) =>
    `<didl:DIDL xmlns:didl="urn:mpeg:mpeg21:2002:02-DIDL-NS" xmlns:dii="urn:mpeg:mpeg21:2002:01-DII-NS"><didl:Item><didl:Descriptor><didl:Statement mimeType="application/xml"><dii:Identifier>${id}</dii:Identifier></didl:Statement></didl:Descriptor>${inner}</didl:Item></didl:DIDL>`;
  const dc =
    '<didl:Descriptor><didl:Statement mimeType="application/xml"><oai_dc:dc xmlns:oai_dc="http://www.openarchives.org/OAI/2.0/oai_dc/" xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>About us</dc:title></oai_dc:dc></didl:Statement></didl:Descriptor>';
  const repository = await startRepository(() => [
    oaiRecord(`${site}/a.txt`, didl(`${site}/a.txt`, byValue('hello'))),
    oaiRecord(`${site}/about`, didl(`${site}/about`, dc)),
  ]);
  const archive = archiveDir();
  const { summary } = await run(repository, archive);
  assert.equal(summary.added, 2);
  assert.equal(summary.failed, 0);
  // Delivered again: recognised, no second AIP.
  const again = await run(repository, archive, { from: '2000-01-01T00:00:00Z' });
  assert.equal(again.summary.added + again.summary.modified + again.summary.touched, 0);

  const to = join(archive, '..', 'restored');
  const restored = await restoreSite({ archiveDir: archive, to });
  assert.equal(restored.restored, 1);
  assert.equal(restored.metadataOnly, 1);
  assert.equal(restored.problems, 0);
  assert.deepEqual(readdirSync(to), ['a.txt']);

  const catalog = Catalog.open(archive, { create: false });
  try {
    const rows = audit(catalog).rows;
    const about = rows.find((row) => row.identifier === `${site}/about`);
    assert.equal(about?.change, 'added');
    assert.equal(about?.after.size, 0);
  } finally {
    catalog.close();
  }
});

test('a repository that offers DIDL as `didl` (DSpace, DARE): the default prefix fails with a hint naming it; --prefix didl harvests', async () => {
  const repository = await startRepository(() => [oaiRecord('oai:dspace.test:1/1', dspaceDidl('1/1', [byValue('abc')]))], { prefix: 'didl' });
  const archive = archiveDir();
  await assert.rejects(run(repository, archive), (error: Error & { code?: string; hint?: string }) => {
    assert.equal(error.code, 'ERR_HARVEST_FORMAT');
    assert.match(error.message, /does not offer the metadata format oai_didl \(it offers oai_dc, didl\)/);
    assert.equal(error.hint, 'it offers MPEG-21 DIDL as didl: harvest with --prefix didl');
    return true;
  });
  const { summary } = await run(repository, archive, { prefix: 'didl' });
  assert.equal(summary.added, 1);
});

test('harvest dates: the one command-line grammar, sent to the repository as OAI-PMH UTC; a bad one asks nothing', async () => {
  const repository = await startRepository(() => []);
  const archive = archiveDir();
  await assert.rejects(run(repository, archive, { from: 'yesterday' }), { code: 'ERR_ARCHIVE_USAGE', message: /^--from "yesterday" is not a date/ });
  await assert.rejects(run(repository, archive, { until: '2024-01-31T12:00' }), { code: 'ERR_ARCHIVE_USAGE' });
  assert.equal(repository.seen.length, 0, 'nothing was asked of the repository');
  await run(repository, archive, { from: '2008-03-05T13:00+01:00', until: '2008-03-06' });
  const list = repository.seen.find((request) => request.path.includes('verb=ListRecords'));
  const query = new URL(list!.path, 'http://x').searchParams;
  assert.equal(query.get('from'), '2008-03-05T12:00:00Z');
  assert.equal(query.get('until'), '2008-03-06');
});

test('a ListRecords answered with a bare DIDL document, not OAI-PMH, fails the list with ERR_HARVEST_NOT_OAI (the page check harvest and urls share)', async () => {
  const repository = await startRepository(() => []);
  const oai = repository.routes.get('/oai')!;
  repository.routes.set('/oai', (req, res) => {
    if (new URL(req.url!, 'http://x').searchParams.get('verb') !== 'ListRecords') return oai(req, res);
    res.writeHead(200, { 'content-type': 'text/xml' });
    res.end(dspaceDidl('1/1', [byValue('abc')]));
  });
  await assert.rejects(run(repository, archiveDir()), {
    code: 'ERR_HARVEST_NOT_OAI',
    message: /^ListRecords of http:\/\/127\.0\.0\.1:\d+\/oai did not answer with an OAI-PMH response$/,
  });
});

test('a URL path longer than a file system allows: its bytes are kept under the by-digest name, the other records of the page stored (issue 24)', async () => {
  const site = 'http://site.test';
  // Forty segments of 200 bytes: each a legal file name, together 8 KB, past Linux's 4 KiB PATH_MAX.
  const long = `${site}/${Array.from({ length: 40 }, (_, i) => `${String(i).padStart(2, '0')}${'d'.repeat(198)}`).join('/')}/page.html`;
  const didl = (id: string, inner: string) =>
    `<didl:DIDL xmlns:didl="urn:mpeg:mpeg21:2002:02-DIDL-NS" xmlns:dii="urn:mpeg:mpeg21:2002:01-DII-NS"><didl:Item><didl:Descriptor><didl:Statement mimeType="application/xml"><dii:Identifier>${id}</dii:Identifier></didl:Statement></didl:Descriptor>${inner}</didl:Item></didl:DIDL>`;
  const repository = await startRepository(() => [
    oaiRecord(`${site}/before.txt`, didl(`${site}/before.txt`, byValue('before'))),
    oaiRecord(long, didl(long, byValue('deep down'))),
    oaiRecord(`${site}/after.txt`, didl(`${site}/after.txt`, byValue('after'))),
  ]);
  const archive = archiveDir();
  const { summary } = await run(repository, archive);
  // Read once: the long path used to fail the whole page (ENAMETOOLONG), which was asked again.
  assert.deepEqual(
    { records: summary.records, added: summary.added, failed: summary.failed, status: summary.status },
    { records: 3, added: 3, failed: 0, status: 'complete' },
  );
  const catalog = Catalog.open(archive, { create: false });
  try {
    const source = catalog.source(`${repository.origin}/oai`)!;
    const [version] = catalog.versions(source.id, long);
    const [part] = catalog.versionParts(version!.id);
    assert.match(part!.path, /^data\/_by-digest\//, `a short fallback path, not ${part!.path.slice(0, 80)}…`);
    assert.equal(readFileSync(join(archive, part!.bagPath, part!.path), 'utf8'), 'deep down');
  } finally {
    catalog.close();
  }
});
