// A hostile OAI-PMH source for test/hostile-source.test.ts and bench/hostile-source.mjs (issue
// 24): one node:http server on 127.0.0.1 that answers like a well-behaved oai_didl repository
// (two clean records, one By-Value and one By-Reference, written with the didl package's
// writer) until a scenario swaps one of its answers for a hostile one: a compression bomb, a
// body that never ends or trickles, XML built to be expensive, lies about sizes and digests,
// redirects and refs into places a harvester must not go, token loops, hostile identifiers,
// bad encodings, a connection closed mid-record. Large bodies are generated as they are sent
// (with backpressure), never held. The runner starts the built `oaibag` as a child process
// and measures what the brief bounds: its peak RSS (through hostile-source-rss.cjs), the
// bytes of the archive's tmp/ (polled every 50 ms) and its time (killed past a bound).
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdir, readFile, rm, stat } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { createDeflate, createGzip } from 'node:zlib';
import { type DidlWriteInput, writeDidl } from '../packages/didl/src/index.ts';

export const BIN = fileURLToPath(new URL('../packages/archiver/bin/oaibag.js', import.meta.url));
export const RSS_PROBE = fileURLToPath(new URL('./hostile-source-rss.cjs', import.meta.url));

const KiB = 1024;
const MiB = 1024 * KiB;
const GiB = 1024 * MiB;
const DATESTAMP = '2020-01-01T00:00:00Z';

// ---------------------------------------------------------------------------------------------
// The server

type Chunk = string | Buffer;
export type Handler = (req: IncomingMessage, res: ServerResponse, server: HostileServer) => void | Promise<void>;

/** What a scenario changes: each answer not given is the clean one. */
export interface Behaviour {
  identify?: Handler;
  listMetadataFormats?: Handler;
  listRecords?: Handler;
  /** Other paths (datastreams, redirects), by pathname. */
  paths?: Record<string, Handler>;
}

export interface HostileServer {
  origin: string;
  /** The OAI-PMH base URL. */
  baseUrl: string;
  behaviour: Behaviour;
  /** Every request's path, in order. */
  requests: string[];
  close(): Promise<void>;
}

export async function startHostileServer(): Promise<HostileServer> {
  const sockets = new Set<Socket>();
  const server: Server = createServer();
  const hostile: HostileServer = {
    origin: '',
    baseUrl: '',
    behaviour: {},
    requests: [],
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
  });
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    res.on('error', () => undefined);
    hostile.requests.push(req.url ?? '/');
    const url = new URL(req.url ?? '/', hostile.origin);
    const behaviour = hostile.behaviour;
    const verb = url.searchParams.get('verb');
    let handler: Handler | undefined;
    if (url.pathname === '/oai') {
      handler =
        verb === 'Identify'
          ? (behaviour.identify ?? cleanIdentify)
          : verb === 'ListMetadataFormats'
            ? (behaviour.listMetadataFormats ?? cleanFormats)
            : verb === 'ListRecords'
              ? (behaviour.listRecords ?? cleanListRecords)
              : undefined;
    } else {
      handler = behaviour.paths?.[url.pathname] ?? CLEAN_PATHS[url.pathname];
    }
    if (!handler) {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('not here\n');
      return;
    }
    Promise.resolve(handler(req, res, hostile)).catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  hostile.origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  hostile.baseUrl = `${hostile.origin}/oai`;
  return hostile;
}

// ---------------------------------------------------------------------------------------------
// Sending

/** Writes `source` to `res` with backpressure, stopping when the client has gone. */
export async function pump(res: ServerResponse, source: Iterable<Chunk> | AsyncIterable<Chunk>, end = true): Promise<void> {
  for await (const chunk of source) {
    if (res.destroyed) return;
    if (!res.write(chunk)) await drainedOrClosed(res);
  }
  if (end && !res.destroyed) res.end();
}

function drainedOrClosed(res: ServerResponse): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

/** `source` gzip-compressed (or deflate, level 9) as it is read: a bomb of gigabytes is never held. */
export function gzipped(res: ServerResponse, source: Iterable<Chunk> | AsyncIterable<Chunk>, format: 'gzip' | 'deflate' = 'gzip'): void {
  const gzip = format === 'gzip' ? createGzip({ level: 9 }) : createDeflate({ level: 9 });
  Readable.from(source, { objectMode: false })
    .on('error', () => undefined)
    .pipe(gzip)
    .pipe(res);
  res.on('close', () => gzip.destroy());
}

/** `bytes` of `fill`, one MiB at a time. */
export function* repeated(bytes: number, fill = ' '): Generator<Buffer> {
  const block = Buffer.alloc(MiB, fill);
  for (let sent = 0; sent < bytes; sent += block.length) yield sent + block.length <= bytes ? block : block.subarray(0, bytes - sent);
}

/** A byte every `everyMs` for as long as the client listens. */
export async function* trickle(text: string, everyMs = 1000): AsyncGenerator<string> {
  for (let at = 0; ; at++) {
    yield text[at % text.length]!;
    await sleep(everyMs);
  }
}

const sha256 = (bytes: Buffer | string): string => createHash('sha256').update(bytes).digest('hex');
const xml = { 'content-type': 'text/xml; charset=utf-8' };

// ---------------------------------------------------------------------------------------------
// OAI-PMH

export function envelopeStart(server: HostileServer, verb: string, declaration = '<?xml version="1.0" encoding="UTF-8"?>\n'): string {
  return (
    `${declaration}<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">` +
    `<responseDate>${new Date().toISOString().slice(0, 19)}Z</responseDate><request verb="${verb}">${server.baseUrl}</request><${verb}>`
  );
}

export const envelopeEnd = (verb: string): string => `</${verb}></OAI-PMH>\n`;

export function identifyXml(server: HostileServer): string {
  return (
    envelopeStart(server, 'Identify') +
    `<repositoryName>Hostile</repositoryName><baseURL>${server.baseUrl}</baseURL><protocolVersion>2.0</protocolVersion>` +
    `<adminEmail>nobody@oaibag.invalid</adminEmail><earliestDatestamp>2000-01-01T00:00:00Z</earliestDatestamp>` +
    `<deletedRecord>persistent</deletedRecord><granularity>YYYY-MM-DDThh:mm:ssZ</granularity>${envelopeEnd('Identify')}`
  );
}

const cleanIdentify: Handler = (_req, res, server) => {
  res.writeHead(200, xml);
  res.end(identifyXml(server));
};

const cleanFormats: Handler = (_req, res, server) => {
  res.writeHead(200, xml);
  res.end(
    envelopeStart(server, 'ListMetadataFormats') +
      `<metadataFormat><metadataPrefix>oai_didl</metadataPrefix><schema>http://standards.iso.org/ittf/PubliclyAvailableStandards/MPEG-21_schema_files/did/didl.xsd</schema>` +
      `<metadataNamespace>urn:mpeg:mpeg21:2002:02-DIDL-NS</metadataNamespace></metadataFormat>${envelopeEnd('ListMetadataFormats')}`,
  );
};

/** One OAI-PMH record around `didl` (a DIDL document without its XML declaration). */
export const oaiRecord = (identifier: string, didl: string, datestamp = DATESTAMP): string =>
  `<record><header><identifier>${identifier}</identifier><datestamp>${datestamp}</datestamp></header><metadata>${didl}</metadata></record>\n`;

/** A DIDL document as the didl package writes it, as one string. */
export async function didlText(input: DidlWriteInput): Promise<string> {
  let text = '';
  for await (const part of writeDidl(input, { xmlDeclaration: false, schemaLocation: false })) text += part;
  return text;
}

async function* once(bytes: Buffer): AsyncGenerator<Buffer> {
  yield bytes;
}

/** A By-Value record of `content`, with its true Content-Length and SHA-256 unless told otherwise. */
export async function byValueRecord(
  identifier: string,
  content: Buffer | string,
  lies: { contentLength?: string; sha256?: string; didlIdentifier?: string } = {},
): Promise<string> {
  const bytes = Buffer.from(content);
  const didl = await didlText({
    identifier: lies.didlIdentifier ?? identifier,
    headers: [
      { name: 'Content-Type', value: 'text/plain' },
      { name: 'Content-Length', value: lies.contentLength ?? String(bytes.length) },
    ],
    components: [{ mimeType: 'text/plain', byValue: once(bytes), digest: { algorithm: 'SHA-256', value: lies.sha256 ?? sha256(bytes) } }],
  });
  return oaiRecord(escapeXml(identifier), didl);
}

/** A By-Reference record of `ref`, promising `content`'s Content-Length and SHA-256 (unless `promise` says otherwise; null: nothing). */
export async function byReferenceRecord(
  identifier: string,
  ref: string,
  content: Buffer | string,
  promise: { contentLength?: string | null; sha256?: string | null } = {},
): Promise<string> {
  const bytes = Buffer.from(content);
  const contentLength = promise.contentLength === undefined ? String(bytes.length) : promise.contentLength;
  const digest = promise.sha256 === undefined ? sha256(bytes) : promise.sha256;
  const didl = await didlText({
    identifier,
    headers: [{ name: 'Content-Type', value: 'text/plain' }, ...(contentLength !== null ? [{ name: 'Content-Length', value: contentLength }] : [])],
    components: [{ mimeType: 'text/plain', ref, ...(digest !== null ? { digest: { algorithm: 'SHA-256', value: digest } } : {}) }],
  });
  return oaiRecord(escapeXml(identifier), didl);
}

export const escapeXml = (text: string): string => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

export const CLEAN_A = 'the first clean datastream, By-Value\n';
export const CLEAN_B = 'the second clean datastream, By-Reference\n';

/** The clean page: two records that always harvest. */
export async function cleanRecords(server: HostileServer): Promise<string[]> {
  return [
    await byValueRecord(`${server.origin}/files/clean-a.txt`, CLEAN_A),
    await byReferenceRecord(`${server.origin}/files/clean-b.txt`, `${server.origin}/files/clean-b.txt`, CLEAN_B),
  ];
}

/** A ListRecords page of `records`, with `token` as its resumption token (none: the last page). */
export function page(server: HostileServer, records: string[], token?: string): string {
  const resumption = token === undefined ? '' : `<resumptionToken>${escapeXml(token)}</resumptionToken>`;
  return `${envelopeStart(server, 'ListRecords')}${records.join('')}${resumption}${envelopeEnd('ListRecords')}`;
}

const cleanListRecords: Handler = async (_req, res, server) => {
  const body = page(server, await cleanRecords(server));
  res.writeHead(200, xml);
  res.end(body);
};

/** A datastream route: `bytes` with their true length. */
export const fileRoute =
  (bytes: Buffer | string, headers: Record<string, string> = {}): Handler =>
  (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(Buffer.byteLength(bytes)), ...headers });
    res.end(bytes);
  };

export const redirectRoute =
  (location: string, status = 302): Handler =>
  (_req, res) => {
    res.writeHead(status, { location, 'content-length': '0' });
    res.end();
  };

const CLEAN_PATHS: Record<string, Handler> = { '/files/clean-b.txt': fileRoute(CLEAN_B) };

/** A ListRecords answer with the clean records and then `extra` (XML text, generated as it is sent). */
export function listWith(extra: (server: HostileServer) => Iterable<Chunk> | AsyncIterable<Chunk>, headers: Record<string, string> = xml): Handler {
  return async (_req, res, server) => {
    const records = await cleanRecords(server);
    res.writeHead(200, headers);
    await pump(
      res,
      (async function* () {
        yield envelopeStart(server, 'ListRecords');
        yield* records;
        yield* extra(server);
      })(),
    );
  };
}

/** The clean page with `records` (text) added after the clean ones. */
export function listOf(records: (server: HostileServer) => Promise<string[]>): Handler {
  return async (_req, res, server) => {
    const body = page(server, [...(await cleanRecords(server)), ...(await records(server))]);
    res.writeHead(200, { ...xml, 'content-length': String(Buffer.byteLength(body)) });
    res.end(body);
  };
}

export { GiB, KiB, MiB };

// ---------------------------------------------------------------------------------------------
// Running oaibag

export interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** Peak resident set size of the child, bytes (undefined when it was killed). */
  peakRss: number | undefined;
  /** Largest total size of the files under the archive's tmp/ seen while it ran. */
  peakTmp: number;
  /** Killed after `timeoutMs`. */
  timedOut: boolean;
  ms: number;
}

export interface RunOptions {
  /** The child's working folder. */
  cwd: string;
  /** The archive whose tmp/ is watched. */
  archive: string;
  /** Where the RSS probe writes (outside cwd and the archive). */
  rssFile: string;
  timeoutMs: number;
}

/** Total size of the files under `dir` (0 when it is missing); files that vanish while it looks are skipped. */
export async function treeBytes(dir: string): Promise<number> {
  let entries: import('node:fs').Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  let total = 0;
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) total += await treeBytes(path);
    else
      total += await stat(path).then(
        (info) => info.size,
        () => 0,
      );
  }
  return total;
}

/** `oaibag ...args` as a child process (async spawn: the source lives in this process). */
export async function runOaibag(args: string[], options: RunOptions): Promise<Run> {
  await rm(options.rssFile, { force: true });
  const started = Date.now();
  const env = { ...process.env, NODE_OPTIONS: `--require ${RSS_PROBE}`, OAIBAG_TEST_RSS_FILE: options.rssFile };
  const child = spawn(process.execPath, [BIN, ...args], { cwd: options.cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
  child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill('SIGKILL');
  }, options.timeoutMs);
  let peakTmp = 0;
  let polling = false;
  const tmp = join(options.archive, 'tmp');
  const poll = setInterval(() => {
    if (polling) return;
    polling = true;
    void treeBytes(tmp).then((bytes) => {
      peakTmp = Math.max(peakTmp, bytes);
      polling = false;
    });
  }, 50);
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.on('close', (c, s) => resolve([c, s])));
  clearTimeout(timer);
  clearInterval(poll);
  peakTmp = Math.max(peakTmp, await treeBytes(tmp));
  const rss = await readFile(options.rssFile, 'utf8').then(
    (text) => Number(text) * 1024,
    () => undefined,
  );
  return { code, signal, stdout, stderr, peakRss: rss, peakTmp, timedOut, ms: Date.now() - started };
}
