// The scenarios of test/hostile-source.test.ts (and bench/hostile-source.mjs, which runs the worst
// of each class): what the hostile source does, the options the harvest is given (short
// deadlines, where the defaults are minutes or hours), and what the harvest must end with.
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  type Behaviour,
  byReferenceRecord,
  byValueRecord,
  cleanRecords,
  didlText,
  envelopeEnd,
  envelopeStart,
  escapeXml,
  fileRoute,
  GiB,
  gzipped,
  type Handler,
  type HostileServer,
  identifyXml,
  KiB,
  listOf,
  listWith,
  MiB,
  oaiRecord,
  page,
  pump,
  redirectRoute,
  repeated,
  trickle,
} from './hostile-source-server.ts';

export type ScenarioClass =
  | 'compression bombs'
  | 'endless and trickling'
  | 'deep and huge XML'
  | 'size and digest lies'
  | 'redirects'
  | 'forbidden refs'
  | 'token loops and endless lists'
  | 'hostile identifiers'
  | 'bad encodings'
  | 'connections';

export interface Scenario {
  name: string;
  class: ScenarioClass;
  behaviour: Behaviour;
  /** Options of `oaibag harvest` besides the base URL and --archive. */
  args?: string[];
  /** The documented exit code: 0 ok, 1 records failed, 3 the source or its list failed. */
  exit: 0 | 1 | 3;
  /** The code of the one `[ERR_…]` line on stderr; null: no such line. */
  code: string | null;
  /** What that line says. */
  says?: RegExp;
  /** Bound on the bytes under the archive's tmp/ while the harvest runs. */
  tmpBytes: number;
  /** The worst of its class (bench/hostile-source.mjs runs it). */
  worst?: boolean;
  /**
   * The source fails the same way every time it is asked, and the harvester asks again as the
   * default retry policy says (6 retries, 1 s doubling with jitter: 63 to 79 s of waiting).
   */
  retried?: boolean;
  /** Takes tens of seconds on this machine: run early, with the longer timeout. */
  slow?: boolean;
  /** A known bug: the scenario asserts the right behaviour and is reported, not hidden (it runs early: it is slow). */
  todo?: string;
  /** Records that must be stored, each under its own identifier (as the header gives it) with its own bytes. */
  stored?: (server: HostileServer) => Record<string, string>;
  /** `oaibag restore` of the archive afterwards: 0 all written, 1 a resource refused (a path that would leave the site); nothing outside the site either way. */
  restore?: 0 | 1;
}

const xml = { 'content-type': 'text/xml; charset=utf-8' };
/** A little more than the clean records and a batch bag's metadata. */
const SMALL_TMP = 256 * KiB;

/** A ListRecords answer of the clean records plus `records`, generated per request. */
const plus = (records: (server: HostileServer) => Promise<string[]>): Behaviour => ({ listRecords: listOf(records) });

/** The clean page plus one By-Reference record of `/files/hostile.bin` (its route given), promising `content`. */
function withDatastream(route: Handler, content: Buffer | string, promise: { contentLength?: string | null; sha256?: string | null } = {}): Behaviour {
  return {
    listRecords: listOf(async (server) => [
      await byReferenceRecord(`${server.origin}/files/hostile.bin`, `${server.origin}/files/hostile.bin`, content, promise),
    ]),
    paths: { '/files/hostile.bin': route },
  };
}

/** The clean page plus one By-Reference record whose ref is `ref` (written in place of one the didl writer accepts: it refuses all but http(s)). */
function withRef(ref: (server: HostileServer) => string): Behaviour {
  return plus(async (server) => {
    const record = await byReferenceRecord(`${server.origin}/files/elsewhere.bin`, 'http://placeholder.invalid/', 'x');
    return [record.replace('http://placeholder.invalid/', escapeXml(ref(server)))];
  });
}

/** A record around `metadata`, a DIDL Statement's content written as it is (hostile XML). */
function* recordAround(server: HostileServer, metadata: Iterable<string>): Generator<string> {
  yield `<record><header><identifier>${server.origin}/files/hostile.xml</identifier><datestamp>2020-01-01T00:00:00Z</datestamp></header><metadata>`;
  yield `<didl:DIDL xmlns:didl="urn:mpeg:mpeg21:2002:02-DIDL-NS" xmlns:dii="urn:mpeg:mpeg21:2002:01-DII-NS"><didl:Item><didl:Descriptor><didl:Statement mimeType="application/xml">`;
  yield* metadata;
  yield `</didl:Statement></didl:Descriptor></didl:Item></didl:DIDL></metadata></record>`;
}

/** A whole page whose one hostile record is `metadata`, then the list's end. */
const hostileXml = (metadata: (server: HostileServer) => Iterable<string>): Behaviour => ({
  listRecords: listWith(function* (server) {
    yield* recordAround(server, metadata(server));
    yield envelopeEnd('ListRecords');
  }),
});

/** Answers with `chunks` then, once they are sent, a page with a resumption token chosen by `next` (undefined: none). */
function listing(next: (token: string | null, server: HostileServer) => { token?: string; records: boolean }): Handler {
  return async (req, res, server) => {
    const token = new URL(req.url ?? '/', server.origin).searchParams.get('resumptionToken');
    const answer = next(token, server);
    const body = page(server, answer.records ? await cleanRecords(server) : [], answer.token);
    res.writeHead(200, xml);
    res.end(body);
  };
}

/** The clean page and a third record, cut in that record's middle (the connection closed) on the first `times` requests. */
function closedMidRecord(times: number): Handler {
  return async (_req, res, server) => {
    const body = page(server, [...(await cleanRecords(server)), await byValueRecord(`${server.origin}/files/cut.txt`, 'cut '.repeat(1000))]);
    res.writeHead(200, { ...xml, 'content-length': String(Buffer.byteLength(body)) });
    if (server.requests.filter((path) => path.includes('verb=ListRecords')).length > times) res.end(body);
    else res.write(body.slice(0, body.length - 2000), () => res.destroy());
  };
}

/** The response's socket, to write an HTTP response by hand (headers trickled, or a lie the http module would not tell). */
function rawSocket(res: ServerResponse) {
  return res.socket!;
}

async function trickleHeaders(_req: IncomingMessage, res: ServerResponse): Promise<void> {
  const socket = rawSocket(res);
  for (const byte of `HTTP/1.1 200 OK\r\nContent-Type: text/xml\r\nX-Slow: ${'a'.repeat(1000)}`) {
    if (socket.destroyed) return;
    socket.write(byte);
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

export const SCENARIOS: Scenario[] = [
  // -------------------------------------------------------------------------------------------
  // Compression bombs: generated and compressed as they are sent, 10 GiB of spaces each.
  {
    name: 'a gzip ListRecords page that inflates to 10 GiB',
    class: 'compression bombs',
    worst: true,
    behaviour: {
      listRecords: (_req, res, server) => {
        res.writeHead(200, { ...xml, 'content-encoding': 'gzip' });
        gzipped(
          res,
          (function* () {
            yield envelopeStart(server, 'ListRecords');
            yield* repeated(10 * GiB);
          })(),
        );
      },
    },
    exit: 3,
    code: 'ERR_HARVEST_LIMIT',
    says: /--max-compression-ratio/,
    tmpBytes: SMALL_TMP,
  },
  {
    name: 'a deflate ListRecords page that inflates to 10 GiB',
    class: 'compression bombs',
    behaviour: {
      listRecords: (_req, res, server) => {
        res.writeHead(200, { ...xml, 'content-encoding': 'deflate' });
        gzipped(
          res,
          (function* () {
            yield envelopeStart(server, 'ListRecords');
            yield* repeated(10 * GiB, '\n');
          })(),
          'deflate',
        );
      },
    },
    exit: 3,
    code: 'ERR_HARVEST_LIMIT',
    says: /--max-compression-ratio/,
    tmpBytes: SMALL_TMP,
  },
  {
    name: 'a gzip Identify that inflates to 10 GiB',
    class: 'compression bombs',
    behaviour: {
      identify: (_req, res, server) => {
        res.writeHead(200, { ...xml, 'content-encoding': 'gzip' });
        gzipped(
          res,
          (function* () {
            yield identifyXml(server).replace('</repositoryName>', '');
            yield* repeated(10 * GiB);
          })(),
        );
      },
    },
    exit: 3,
    code: 'ERR_HARVEST_LIMIT',
    tmpBytes: 0,
  },
  {
    name: 'a By-Reference datastream sent gzip-encoded, 10 GiB inflated, 100 bytes promised',
    class: 'compression bombs',
    behaviour: withDatastream((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'gzip' });
      gzipped(res, repeated(10 * GiB, '\0'));
    }, Buffer.alloc(100)),
    exit: 1,
    code: 'ERR_HARVEST_VERIFY',
    says: /more bytes than the record's Content-Length 100/,
    tmpBytes: SMALL_TMP,
  },
  {
    name: 'a page sent with Content-Encoding: gzip, gzip',
    class: 'compression bombs',
    behaviour: {
      listRecords: (_req, res, server) => {
        res.writeHead(200, { ...xml, 'content-encoding': 'gzip, gzip' });
        gzipped(res, [page(server, [])]);
      },
    },
    exit: 3,
    code: 'ERR_HARVEST_PROTOCOL',
    says: /Content-Encoding/,
    tmpBytes: SMALL_TMP,
  },

  // -------------------------------------------------------------------------------------------
  // Endless and trickling bodies and headers.
  {
    name: 'a page of records that never ends',
    class: 'endless and trickling',
    behaviour: {
      listRecords: listWith(async function* (server) {
        for (let n = 0; ; n++) yield await byValueRecord(`${server.origin}/files/endless-${n}.txt`, `record ${n} of a page that never ends\n`);
      }),
    },
    args: ['--max-page-records', '1000'],
    exit: 3,
    code: 'ERR_HARVEST_LIMIT',
    says: /--max-page-records/,
    tmpBytes: 8 * MiB,
  },
  {
    name: 'a page of records that never ends, at the default limits (5,000 records)',
    class: 'endless and trickling',
    worst: true,
    slow: true,
    behaviour: {
      listRecords: listWith(async function* (server) {
        for (let n = 0; ; n++) yield await byValueRecord(`${server.origin}/files/endless-${n}.txt`, `record ${n} of a page that never ends\n`);
      }),
    },
    exit: 3,
    code: 'ERR_HARVEST_LIMIT',
    says: /--max-page-records/,
    tmpBytes: 32 * MiB,
  },
  {
    name: 'a page of whitespace that never ends',
    class: 'endless and trickling',
    behaviour: { listRecords: listWith(() => repeated(Number.MAX_SAFE_INTEGER)) },
    args: ['--max-page-size', '64M'],
    exit: 3,
    code: 'ERR_HARVEST_LIMIT',
    says: /--max-page-size/,
    tmpBytes: SMALL_TMP,
  },
  {
    name: "a record whose metadata's text never ends",
    class: 'endless and trickling',
    behaviour: hostileXml(() => repeated(Number.MAX_SAFE_INTEGER, 'x') as unknown as Iterable<string>),
    exit: 3,
    code: 'ERR_HARVEST_PROTOCOL',
    says: /refused \(ERR_DIDL_TOO_LARGE\)/,
    tmpBytes: SMALL_TMP,
  },
  {
    name: 'a By-Reference datastream that never ends, Content-Length 100 promised',
    class: 'endless and trickling',
    behaviour: withDatastream(
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        void pump(res, repeated(Number.MAX_SAFE_INTEGER, 'z'));
      },
      Buffer.alloc(100, 'z'),
    ),
    exit: 1,
    code: 'ERR_HARVEST_VERIFY',
    says: /more bytes than the record's Content-Length 100/,
    tmpBytes: SMALL_TMP,
  },
  {
    name: 'a By-Reference datastream that never ends, no size promised',
    class: 'endless and trickling',
    behaviour: withDatastream(
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        void pump(res, repeated(Number.MAX_SAFE_INTEGER, 'z'));
      },
      'z',
      { contentLength: null, sha256: null },
    ),
    args: ['--max-datastream-size', '8M'],
    exit: 1,
    code: 'ERR_HARVEST_LIMIT',
    says: /--max-datastream-size/,
    tmpBytes: 9 * MiB,
  },
  {
    name: 'a By-Value datastream whose base64 never ends, Content-Length 100 in the DIDL',
    class: 'endless and trickling',
    behaviour: {
      listRecords: listWith(function* (server) {
        yield `<record><header><identifier>${server.origin}/files/base64.bin</identifier><datestamp>2020-01-01T00:00:00Z</datestamp></header><metadata>`;
        yield `<didl:DIDL xmlns:didl="urn:mpeg:mpeg21:2002:02-DIDL-NS" xmlns:dii="urn:mpeg:mpeg21:2002:01-DII-NS" xmlns:http="http://www.openarchives.org/OAI/2.0/http_header/"><didl:Item>`;
        yield `<didl:Descriptor><didl:Statement mimeType="application/xml"><dii:Identifier>${server.origin}/files/base64.bin</dii:Identifier></didl:Statement></didl:Descriptor>`;
        yield `<didl:Descriptor><didl:Statement mimeType="application/xml"><http:header><http:Content-Length>100</http:Content-Length></http:header></didl:Statement></didl:Descriptor>`;
        yield `<didl:Component><didl:Resource mimeType="application/octet-stream" encoding="base64">`;
        yield* repeated(Number.MAX_SAFE_INTEGER, 'A');
      }),
    },
    args: ['--max-page-size', '64M'],
    exit: 3,
    code: 'ERR_HARVEST_LIMIT',
    says: /--max-page-size/,
    tmpBytes: SMALL_TMP,
  },
  {
    name: 'a page body that trickles a byte a second',
    class: 'endless and trickling',
    behaviour: {
      listRecords: (_req, res, server) => {
        res.writeHead(200, xml);
        void pump(res, trickle(`${envelopeStart(server, 'ListRecords')}${' '.repeat(10_000)}`));
      },
    },
    args: ['--page-deadline', '3s', '--idle-timeout', '2s'],
    exit: 3,
    code: 'ERR_HARVEST_LIMIT',
    says: /--page-deadline/,
    tmpBytes: SMALL_TMP,
  },
  {
    name: "a page's headers that trickle a byte a second",
    class: 'endless and trickling',
    behaviour: { listRecords: trickleHeaders },
    args: ['--page-deadline', '3s', '--idle-timeout', '30s'],
    exit: 3,
    code: 'ERR_HARVEST_LIMIT',
    says: /--page-deadline/,
    tmpBytes: SMALL_TMP,
  },
  {
    name: 'a By-Reference datastream that trickles a byte a second',
    class: 'endless and trickling',
    behaviour: withDatastream(
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '100' });
        void pump(res, trickle('t'));
      },
      Buffer.alloc(100, 't'),
    ),
    args: ['--datastream-deadline', '3s', '--idle-timeout', '2s'],
    exit: 1,
    code: 'ERR_HARVEST_LIMIT',
    says: /--datastream-deadline/,
    tmpBytes: SMALL_TMP,
  },
  {
    name: "a By-Reference datastream's headers that trickle a byte a second",
    class: 'endless and trickling',
    behaviour: withDatastream(trickleHeaders, 'x'),
    args: ['--datastream-deadline', '3s', '--idle-timeout', '30s'],
    exit: 1,
    code: 'ERR_HARVEST_LIMIT',
    says: /--datastream-deadline/,
    tmpBytes: SMALL_TMP,
  },

  // -------------------------------------------------------------------------------------------
  // Deep and huge XML.
  {
    name: 'elements nested 1,000,000 deep',
    class: 'deep and huge XML',
    behaviour: hostileXml(function* () {
      for (let n = 0; n < 1_000_000; n += 1000) yield '<d>'.repeat(1000);
      for (let n = 0; n < 1_000_000; n += 1000) yield '</d>'.repeat(1000);
    }),
    exit: 3,
    code: 'ERR_HARVEST_PROTOCOL',
    says: /refused \(ERR_DIDL_TOO_LARGE\).*deeper than/,
    tmpBytes: SMALL_TMP,
  },
  {
    name: 'an element name of 16 MiB',
    class: 'deep and huge XML',
    behaviour: hostileXml(function* () {
      yield '<n';
      for (let n = 0; n < 16; n++) yield 'n'.repeat(MiB);
      yield '/>';
    }),
    exit: 3,
    code: 'ERR_HARVEST_PROTOCOL',
    says: /refused \(ERR_DIDL_TOO_LARGE\).*64 KiB/,
    tmpBytes: SMALL_TMP,
  },
  {
    name: '100,000 attributes on one tag',
    class: 'deep and huge XML',
    behaviour: hostileXml(function* () {
      yield '<e';
      for (let n = 0; n < 100_000; n += 1000) yield Array.from({ length: 1000 }, (_, k) => ` a${n + k}="v"`).join('');
      yield '/>';
    }),
    exit: 3,
    code: 'ERR_HARVEST_PROTOCOL',
    says: /refused \(ERR_DIDL_TOO_LARGE\).*1024 attributes/,
    tmpBytes: SMALL_TMP,
  },
  {
    name: 'a repeated attribute',
    retried: true,
    class: 'deep and huge XML',
    behaviour: hostileXml(() => ['<e a="1" b="2" a="3"/>']),
    exit: 3,
    code: 'ERR_HARVEST_PROTOCOL',
    says: /failed 7 times: not well-formed XML: attribute a appears twice/,
    tmpBytes: SMALL_TMP,
  },
  {
    name: 'an attribute value of 16 MiB',
    class: 'deep and huge XML',
    behaviour: hostileXml(function* () {
      yield '<e a="';
      for (let n = 0; n < 16; n++) yield 'v'.repeat(MiB);
      yield '"/>';
    }),
    exit: 3,
    code: 'ERR_HARVEST_PROTOCOL',
    says: /refused \(ERR_DIDL_TOO_LARGE\).*64 KiB/,
    tmpBytes: SMALL_TMP,
  },
  {
    name: 'billion laughs: a DOCTYPE with nested entities',
    class: 'deep and huge XML',
    behaviour: {
      listRecords: (_req, res, server) => {
        let entities = '<!ENTITY lol0 "lol">';
        for (let n = 1; n < 10; n++) entities += `<!ENTITY lol${n} "${`&lol${n - 1};`.repeat(10)}">`;
        const body = envelopeStart(server, 'ListRecords')
          .replace('<OAI-PMH', `<!DOCTYPE OAI-PMH [${entities}]>\n<OAI-PMH`)
          .replace('<ListRecords>', '<ListRecords>&lol9;');
        res.writeHead(200, xml);
        res.end(`${body}${envelopeEnd('ListRecords')}`);
      },
    },
    exit: 3,
    code: 'ERR_HARVEST_PROTOCOL',
    says: /refused \(ERR_DIDL_DOCTYPE\)/,
    tmpBytes: SMALL_TMP,
  },
  {
    name: 'an external entity (XXE) naming /etc/passwd',
    class: 'deep and huge XML',
    behaviour: {
      listRecords: (_req, res, server) => {
        const body = envelopeStart(server, 'ListRecords')
          .replace('<OAI-PMH', '<!DOCTYPE OAI-PMH [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>\n<OAI-PMH')
          .replace('<ListRecords>', '<ListRecords>&xxe;');
        res.writeHead(200, xml);
        res.end(`${body}${envelopeEnd('ListRecords')}`);
      },
    },
    exit: 3,
    code: 'ERR_HARVEST_PROTOCOL',
    says: /refused \(ERR_DIDL_DOCTYPE\)/,
    tmpBytes: SMALL_TMP,
  },
  {
    name: 'a page of 20 records of 3,000 By-Reference Components each',
    class: 'deep and huge XML',
    worst: true,
    behaviour: {
      listRecords: async (_req, res, server) => {
        const records: string[] = [...(await cleanRecords(server))];
        for (let r = 0; r < 20; r++) {
          const components = Array.from({ length: 3000 }, (_, n) => ({ mimeType: 'text/plain', ref: `${server.origin}/files/part-${r}-${n}.txt` }));
          records.push(oaiRecord(`${server.origin}/files/parts-${r}`, await didlText({ identifier: `${server.origin}/files/parts-${r}`, components })));
        }
        res.writeHead(200, xml);
        res.end(page(server, records));
      },
      paths: new Proxy({} as Record<string, Handler>, {
        get: (_routes, path) => (typeof path === 'string' && path.startsWith('/files/part-') ? fileRoute(path) : undefined),
      }),
    },
    // Each part costs the harvester until its page ends (catalog rows, manifest lines, PREMIS
    // events): the page is refused at the record that brings it past --max-page-parts, before
    // that record's datastreams are fetched. (5,000 here, quick; the default in the next one.)
    args: ['--max-page-parts', '5000'],
    exit: 3,
    code: 'ERR_HARVEST_LIMIT',
    says: /more than 5000 datastreams before its end \(limit 5000, --max-page-parts\)/,
    tmpBytes: 64 * MiB,
  },
  {
    name: 'a page of 20 records of 3,000 By-Reference Components each, at the default --max-page-parts (10,000)',
    class: 'deep and huge XML',
    slow: true,
    behaviour: {
      listRecords: async (_req, res, server) => {
        const records: string[] = [...(await cleanRecords(server))];
        for (let r = 0; r < 20; r++) {
          const components = Array.from({ length: 3000 }, (_, n) => ({ mimeType: 'text/plain', ref: `${server.origin}/files/part-${r}-${n}.txt` }));
          records.push(oaiRecord(`${server.origin}/files/parts-${r}`, await didlText({ identifier: `${server.origin}/files/parts-${r}`, components })));
        }
        res.writeHead(200, xml);
        res.end(page(server, records));
      },
      paths: new Proxy({} as Record<string, Handler>, {
        get: (_routes, path) => (typeof path === 'string' && path.startsWith('/files/part-') ? fileRoute(path) : undefined),
      }),
    },
    // Each part costs the harvester until its page ends (catalog rows, manifest lines, PREMIS
    // events): the page is refused at the record that brings it past --max-page-parts (10,000),
    // before that record's datastreams are fetched: 9,000 are.
    exit: 3,
    code: 'ERR_HARVEST_LIMIT',
    says: /more than 10000 datastreams before its end \(limit 10000, --max-page-parts\)/,
    tmpBytes: 64 * MiB,
  },
  {
    name: 'a resumption token of 2 MB',
    class: 'deep and huge XML',
    behaviour: { listRecords: listing(() => ({ token: 't'.repeat(2_000_000), records: true })) },
    exit: 3,
    code: 'ERR_HARVEST_LIMIT',
    says: /--max-token-length/,
    tmpBytes: SMALL_TMP,
  },

  // -------------------------------------------------------------------------------------------
  // Size and digest lies.
  {
    name: 'a By-Reference datastream larger than its promised Content-Length',
    class: 'size and digest lies',
    worst: true,
    behaviour: withDatastream(fileRoute(Buffer.alloc(4 * MiB, 'l')), Buffer.alloc(4 * MiB, 'l'), { contentLength: '100' }),
    exit: 1,
    code: 'ERR_HARVEST_VERIFY',
    says: /content-length differs from the record's/,
    tmpBytes: SMALL_TMP,
  },
  {
    name: 'a By-Reference datastream whose HTTP Content-Length promises more than it sends',
    class: 'size and digest lies',
    behaviour: withDatastream(
      (_req, res) => {
        const socket = rawSocket(res);
        socket.end('HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 1000\r\n\r\nonly ten b');
      },
      Buffer.alloc(1000, 'b'),
    ),
    exit: 1,
    code: 'ERR_HARVEST_UNREACHABLE',
    says: /other side closed/,
    tmpBytes: SMALL_TMP,
  },
  {
    name: 'a By-Value datastream longer than its Content-Length',
    class: 'size and digest lies',
    behaviour: plus(async (server) => [await byValueRecord(`${server.origin}/files/long.txt`, 'x'.repeat(1000), { contentLength: '5' })]),
    exit: 1,
    code: 'ERR_DIDL_LENGTH_MISMATCH',
    says: /Content-Length/,
    tmpBytes: SMALL_TMP,
  },
  {
    name: 'a By-Value datastream shorter than its Content-Length',
    class: 'size and digest lies',
    behaviour: plus(async (server) => [await byValueRecord(`${server.origin}/files/short.txt`, 'x'.repeat(10), { contentLength: '1000' })]),
    exit: 1,
    code: 'ERR_DIDL_LENGTH_MISMATCH',
    says: /Content-Length/,
    tmpBytes: SMALL_TMP,
  },
  {
    name: 'a By-Value datastream with a wrong SHA-256',
    class: 'size and digest lies',
    behaviour: plus(async (server) => [await byValueRecord(`${server.origin}/files/digest.txt`, 'some bytes', { sha256: '0'.repeat(64) })]),
    exit: 1,
    code: 'ERR_DIDL_DIGEST_MISMATCH',
    tmpBytes: SMALL_TMP,
  },
  {
    name: 'a By-Reference datastream with a wrong SHA-256',
    class: 'size and digest lies',
    behaviour: withDatastream(fileRoute('the real bytes'), 'the real bytes', { sha256: 'f'.repeat(64) }),
    exit: 1,
    code: 'ERR_HARVEST_VERIFY',
    says: /sha-256 of the bytes received differs/,
    tmpBytes: SMALL_TMP,
  },

  // -------------------------------------------------------------------------------------------
  // Redirects.
  {
    name: 'a redirect loop',
    class: 'redirects',
    behaviour: {
      ...withDatastream(redirectRoute('/files/loop-b'), 'x'),
      paths: { '/files/hostile.bin': redirectRoute('/files/loop-b'), '/files/loop-b': redirectRoute('/files/hostile.bin') },
    },
    exit: 1,
    code: 'ERR_HARVEST_REDIRECTS',
    says: /loop|more than 10 redirects/,
    tmpBytes: SMALL_TMP,
  },
  {
    name: 'a chain of 12 redirects',
    class: 'redirects',
    worst: true,
    behaviour: {
      ...withDatastream(redirectRoute('/files/hop-1'), 'x'),
      paths: {
        '/files/hostile.bin': redirectRoute('/files/hop-1'),
        ...Object.fromEntries(Array.from({ length: 12 }, (_, n) => [`/files/hop-${n + 1}`, redirectRoute(`/files/hop-${n + 2}`, 301 + (n % 2))])),
        '/files/hop-13': fileRoute('x'),
      },
    },
    exit: 1,
    code: 'ERR_HARVEST_REDIRECTS',
    says: /loop|more than 10 redirects/,
    tmpBytes: SMALL_TMP,
  },
  {
    name: 'a redirect to the cloud metadata service 169.254.169.254',
    class: 'redirects',
    behaviour: withDatastream(redirectRoute('http://169.254.169.254/latest/meta-data/iam/security-credentials/'), 'x'),
    exit: 1,
    code: 'ERR_HARVEST_REF_REFUSED',
    says: /refused|only http and https/,
    tmpBytes: SMALL_TMP,
  },
  {
    name: 'a redirect to a private address 10.0.0.1',
    class: 'redirects',
    behaviour: withDatastream(redirectRoute('http://10.0.0.1/admin', 307), 'x'),
    exit: 1,
    code: 'ERR_HARVEST_REF_REFUSED',
    says: /refused|only http and https/,
    tmpBytes: SMALL_TMP,
  },
  {
    name: 'a redirect to file:///etc/passwd',
    class: 'redirects',
    behaviour: withDatastream(redirectRoute('file:///etc/passwd', 301), 'x'),
    exit: 1,
    code: 'ERR_HARVEST_REF_REFUSED',
    says: /refused|only http and https/,
    tmpBytes: SMALL_TMP,
  },

  // -------------------------------------------------------------------------------------------
  // Forbidden refs: refused before any connection (none of these addresses is ever reached).
  {
    name: 'a ref to file:///etc/passwd',
    class: 'forbidden refs',
    behaviour: withRef(() => 'file:///etc/passwd'),
    exit: 1,
    code: 'ERR_DIDL_BAD_REF',
    says: /scheme file/,
    tmpBytes: SMALL_TMP,
  },
  {
    name: 'a ref to the link-local metadata service 169.254.169.254',
    class: 'forbidden refs',
    worst: true,
    behaviour: withRef(() => 'http://169.254.169.254/latest/meta-data/'),
    exit: 1,
    code: 'ERR_HARVEST_REF_REFUSED',
    says: /refused|only http and https/,
    tmpBytes: SMALL_TMP,
  },
  {
    name: 'a ref to the private address 10.0.0.1',
    class: 'forbidden refs',
    behaviour: withRef(() => 'http://10.0.0.1/'),
    exit: 1,
    code: 'ERR_HARVEST_REF_REFUSED',
    says: /refused|only http and https/,
    tmpBytes: SMALL_TMP,
  },
  {
    name: 'a ref to an IPv4-mapped private address [::ffff:192.168.0.1]',
    class: 'forbidden refs',
    behaviour: withRef(() => 'http://[::ffff:192.168.0.1]/'),
    exit: 1,
    code: 'ERR_HARVEST_REF_REFUSED',
    says: /refused|only http and https/,
    tmpBytes: SMALL_TMP,
  },
  {
    name: 'a ref to the IPv6 link-local address [fe80::1]',
    class: 'forbidden refs',
    behaviour: withRef(() => 'http://[fe80::1]/'),
    exit: 1,
    code: 'ERR_HARVEST_REF_REFUSED',
    says: /refused|only http and https/,
    tmpBytes: SMALL_TMP,
  },

  // -------------------------------------------------------------------------------------------
  // Token loops and endless lists.
  {
    name: 'a token loop A -> B -> A',
    class: 'token loops and endless lists',
    behaviour: { listRecords: listing((token) => ({ token: token === 'A' ? 'B' : 'A', records: token === null })) },
    exit: 3,
    code: 'ERR_HARVEST_PROTOCOL',
    says: /tokenLoop: the resumption token A came back a second time, also after 2 restarts/,
    tmpBytes: SMALL_TMP,
  },
  {
    name: 'a list that never ends (a new token on every page)',
    class: 'token loops and endless lists',
    worst: true,
    behaviour: { listRecords: listing((token) => ({ token: `page-${Number(token?.slice(5) ?? 0) + 1}`, records: true })) },
    args: ['--max-list-pages', '20'],
    exit: 3,
    code: 'ERR_HARVEST_LIMIT',
    says: /--max-list-pages/,
    tmpBytes: SMALL_TMP,
  },
  {
    name: 'empty pages forever, each with a new token',
    class: 'token loops and endless lists',
    behaviour: { listRecords: listing((token) => ({ token: `empty-${Number(token?.slice(6) ?? 0) + 1}`, records: token === null })) },
    exit: 3,
    code: 'ERR_HARVEST_LIMIT',
    says: /--max-empty-pages/,
    tmpBytes: SMALL_TMP,
  },

  // -------------------------------------------------------------------------------------------
  // Hostile identifiers.
  {
    name: 'an identifier ../../etc/passwd',
    class: 'hostile identifiers',
    behaviour: plus(async () => [await byValueRecord('../../etc/passwd', 'root:x:0:0::/root:/bin/sh\n')]),
    exit: 0,
    code: null,
    stored: () => ({ '../../etc/passwd': 'root:x:0:0::/root:/bin/sh\n' }),
    restore: 1,
    tmpBytes: SMALL_TMP,
  },
  {
    name: 'an identifier URL with ../ segments and %2e%2e',
    class: 'hostile identifiers',
    behaviour: plus(async (server) => [await byValueRecord(`${server.origin}/files/%2e%2e/%2e%2e/%2e%2e/etc/passwd`, 'traversal\n')]),
    exit: 0,
    code: null,
    stored: (server) => ({ [`${server.origin}/files/%2e%2e/%2e%2e/%2e%2e/etc/passwd`]: 'traversal\n' }),
    restore: 1,
    tmpBytes: SMALL_TMP,
  },
  {
    name: 'an identifier with a NUL character',
    retried: true,
    class: 'hostile identifiers',
    behaviour: plus(async (server) => [oaiRecord(`${server.origin}/files/nul\0.txt`, '')]),
    exit: 3,
    code: 'ERR_HARVEST_PROTOCOL',
    says: /failed 7 times: not well-formed XML: character U\+0000/,
    tmpBytes: SMALL_TMP,
  },
  {
    name: 'an identifier of 100 KB',
    class: 'hostile identifiers',
    worst: true,
    behaviour: plus(async (server) => [await byValueRecord(`${server.origin}/files/${'i'.repeat(100_000)}.txt`, 'long name\n')]),
    exit: 0,
    code: null,
    stored: (server) => ({ [`${server.origin}/files/${'i'.repeat(100_000)}.txt`]: 'long name\n' }),
    restore: 1,
    tmpBytes: SMALL_TMP,
  },
  {
    name: 'an identifier with a carriage return and a fake log line, in a record that fails',
    class: 'hostile identifiers',
    behaviour: plus(async (server) => [
      (await byValueRecord(`${server.origin}/files/cr.txt`, 'some bytes', { sha256: '0'.repeat(64) })).replace(
        `<identifier>${server.origin}/files/cr.txt</identifier>`,
        `<identifier>${server.origin}/files/cr.txt&#13;oaibag: harvest #1 complete: 0 records [ERR_NONE]</identifier>`,
      ),
    ]),
    exit: 1,
    code: 'ERR_DIDL_DIGEST_MISMATCH',
    says: /cr\.txt\\x0doaibag: harvest #1 complete/,
    tmpBytes: SMALL_TMP,
  },
  {
    name: 'a datestamp with ../ in it',
    class: 'hostile identifiers',
    behaviour: plus(async (server) => [
      (await byValueRecord(`${server.origin}/files/datestamp.txt`, 'dated\n')).replace(
        '<datestamp>2020-01-01T00:00:00Z</datestamp>',
        '<datestamp>../../../../tmp/x</datestamp>',
      ),
    ]),
    exit: 1,
    code: 'ERR_ARCHIVE_PATH',
    says: /datestamp "\.\.\/\.\.\/\.\.\/\.\.\/tmp\/x" is not YYYY-MM-DD/,
    tmpBytes: SMALL_TMP,
  },
  {
    name: 'identifiers that differ only in case',
    class: 'hostile identifiers',
    behaviour: plus(async (server) => [
      await byValueRecord(`${server.origin}/files/Twin.txt`, 'upper\n'),
      await byValueRecord(`${server.origin}/files/twin.txt`, 'lower\n'),
    ]),
    exit: 0,
    code: null,
    stored: (server) => ({ [`${server.origin}/files/Twin.txt`]: 'upper\n', [`${server.origin}/files/twin.txt`]: 'lower\n' }),
    restore: 0,
    tmpBytes: SMALL_TMP,
  },
  {
    name: 'identifiers that differ only in Unicode normalisation (NFC and NFD)',
    class: 'hostile identifiers',
    behaviour: plus(async (server) => [
      await byValueRecord(`${server.origin}/files/${'café'.normalize('NFC')}.txt`, 'composed\n'),
      await byValueRecord(`${server.origin}/files/${'café'.normalize('NFD')}.txt`, 'decomposed\n'),
    ]),
    exit: 0,
    code: null,
    stored: (server) => ({
      [`${server.origin}/files/${'café'.normalize('NFC')}.txt`]: 'composed\n',
      [`${server.origin}/files/${'café'.normalize('NFD')}.txt`]: 'decomposed\n',
    }),
    restore: 0,
    tmpBytes: SMALL_TMP,
  },

  // -------------------------------------------------------------------------------------------
  // Bad encodings.
  {
    name: 'a page with bytes that are not UTF-8',
    class: 'bad encodings',
    worst: true,
    behaviour: {
      listRecords: async (_req, res, server) => {
        const records = await cleanRecords(server);
        const bad = Buffer.concat([
          Buffer.from(`${envelopeStart(server, 'ListRecords')}${records.join('')}<!-- `),
          Buffer.from([0xc3, 0x28, 0xff, 0xfe]),
          Buffer.from(` -->${envelopeEnd('ListRecords')}`),
        ]);
        res.writeHead(200, xml);
        res.end(bad);
      },
    },
    exit: 3,
    code: 'ERR_HARVEST_PROTOCOL',
    says: /refused \(ERR_DIDL_ENCODING\).*not valid UTF-8/,
    tmpBytes: SMALL_TMP,
  },
  {
    name: 'a page declaring encoding ISO-8859-1',
    class: 'bad encodings',
    behaviour: {
      listRecords: async (_req, res, server) => {
        const body = `${envelopeStart(server, 'ListRecords', '<?xml version="1.0" encoding="ISO-8859-1"?>\n')}${(await cleanRecords(server)).join('')}${envelopeEnd('ListRecords')}`;
        res.writeHead(200, { 'content-type': 'text/xml; charset=iso-8859-1' });
        res.end(Buffer.from(body, 'latin1'));
      },
    },
    exit: 3,
    code: 'ERR_HARVEST_PROTOCOL',
    says: /refused \(ERR_DIDL_ENCODING\).*ISO-8859-1/,
    tmpBytes: SMALL_TMP,
  },
  {
    name: 'a page in UTF-16',
    class: 'bad encodings',
    behaviour: {
      listRecords: async (_req, res, server) => {
        const body = `${envelopeStart(server, 'ListRecords', '<?xml version="1.0" encoding="UTF-16"?>\n')}${(await cleanRecords(server)).join('')}${envelopeEnd('ListRecords')}`;
        res.writeHead(200, { 'content-type': 'text/xml; charset=utf-16' });
        res.end(Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(body, 'utf16le')]));
      },
    },
    exit: 3,
    code: 'ERR_HARVEST_PROTOCOL',
    says: /refused \(ERR_DIDL_ENCODING\).*UTF-16/,
    tmpBytes: SMALL_TMP,
  },

  // -------------------------------------------------------------------------------------------
  // Connections.
  {
    name: 'a connection closed in the middle of a record, every time',
    retried: true,
    class: 'connections',
    worst: true,
    behaviour: { listRecords: closedMidRecord(Number.POSITIVE_INFINITY) },
    exit: 3,
    code: 'ERR_HARVEST_PROTOCOL',
    says: /failed 7 times: other side closed/,
    tmpBytes: SMALL_TMP,
  },
  {
    name: 'a connection closed in the middle of a record twice, then the page whole',
    class: 'connections',
    behaviour: { listRecords: closedMidRecord(2) },
    exit: 0,
    code: null,
    tmpBytes: SMALL_TMP,
  },
  {
    name: 'Identify reset after its headers twice, then whole',
    class: 'connections',
    behaviour: {
      identify: (_req, res, server) => {
        if (server.requests.filter((path) => path.includes('verb=Identify')).length > 2) {
          res.writeHead(200, xml);
          res.end(identifyXml(server));
          return;
        }
        res.writeHead(200, { ...xml, 'content-length': '5000' });
        res.write('<?xml version="1.0"?>', () => res.destroy());
      },
    },
    exit: 0,
    code: null,
    tmpBytes: SMALL_TMP,
  },
];

export { escapeXml };
