#!/usr/bin/env node
// Hostile parse benchmark (issue 24, finding 9): how long the parsers take on inputs a source
// controls and shapes to be slow. Each case runs in a child process with a time limit, so a
// quadratic one is reported as "over the limit" instead of running for hours. The longest time
// the event loop was blocked is also the longest a SIGTERM waits to be handled. See bench/README.md.
// Run after `npx tsc -b`: `node bench/hostile-parse.mjs [--only a,b] [--timeout s]`.
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { resolve } from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { machineFacts, parseBenchArgs, sectionsArg, wholeNumberArg } from './bench-args.mjs';

const REPOSITORY = resolve(import.meta.dirname, '..');
const KiB = 1024;
const MiB = 1024 * KiB;

const USAGE = `usage: node bench/hostile-parse.mjs [--only case,case] [--timeout seconds] [--json]

  --only      the cases to run (default all): CASE_NAMES
  --timeout   seconds a case may take before it is killed and reported as over it (default 60)
  --json      print the results as JSON too
  --root DIR  a tree whose packages/didl/dist and packages/archiver/dist are measured instead of
              this repository's (an older commit built there: how bench/README.md got "before")`;

/** Distinct attribute names: a, b, …, then aa, ab, … (all ASCII letters). */
function attributeNames(count) {
  const letters = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ';
  const names = [];
  for (let length = 1; names.length < count; length++) {
    const total = letters.length ** length;
    for (let n = 0; n < total && names.length < count; n++) {
      let name = '';
      for (let k = 0, rest = n; k < length; k++, rest = Math.floor(rest / letters.length)) name += letters[rest % letters.length];
      names.push(name);
    }
  }
  return names;
}

/** A start tag of about `bytes` characters with as many distinct attributes as fit (at most `most`). */
function wideTag(bytes, value = '', most = bytes) {
  let tag = '<x';
  for (const name of attributeNames(most)) {
    const attribute = ` ${name}="${value}"`;
    if (tag.length + attribute.length + 2 > bytes) break;
    tag += attribute;
  }
  return `${tag}/>`;
}

function oaiPage(inner) {
  return `<?xml version="1.0" encoding="UTF-8"?>\n<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/"><responseDate>2026-01-01T00:00:00Z</responseDate><request verb="ListRecords">http://x/oai</request><ListRecords>${inner}</ListRecords></OAI-PMH>\n`;
}

function identifyAnswer(inner) {
  return `<?xml version="1.0" encoding="UTF-8"?>\n<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/"><responseDate>2026-01-01T00:00:00Z</responseDate><request verb="Identify">http://x/oai</request><Identify><repositoryName>R</repositoryName><baseURL>http://x/oai</baseURL><protocolVersion>2.0</protocolVersion><adminEmail>a@x</adminEmail><earliestDatestamp>2000-01-01</earliestDatestamp><deletedRecord>no</deletedRecord><granularity>YYYY-MM-DD</granularity>${inner}</Identify></OAI-PMH>\n`;
}

const FORMATS = `<?xml version="1.0" encoding="UTF-8"?>\n<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/"><responseDate>2026-01-01T00:00:00Z</responseDate><request verb="ListMetadataFormats">http://x/oai</request><ListMetadataFormats><metadataFormat><metadataPrefix>oai_didl</metadataPrefix><schema>http://x/didl.xsd</schema><metadataNamespace>urn:mpeg:mpeg21:2002:02-DIDL-NS</metadataNamespace></metadataFormat></ListMetadataFormats></OAI-PMH>\n`;

function formatsAnswer(inner) {
  return `<?xml version="1.0" encoding="UTF-8"?>\n<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/"><responseDate>2026-01-01T00:00:00Z</responseDate><request verb="ListMetadataFormats">http://x/oai</request><ListMetadataFormats>${inner}</ListMetadataFormats></OAI-PMH>\n`;
}

/** `unit` repeated to fill `bytes` of the answer `wrap` makes (the answer stays under `bytes`). */
function filled(wrap, unit, bytes) {
  if (unit === '') return wrap('');
  const room = bytes - wrap('').length;
  return wrap(unit.repeat(Math.max(0, Math.floor(room / unit.length))));
}

const RIGHTS = 'http://www.openarchives.org/OAI/2.0/rights/';
const identifySized = (bytes) => (unit) => filled(identifyAnswer, unit, bytes);

/** name → [description, run()] ; run returns a short result string. */
const CASES = {
  'tag-attributes': ['tokenizer: one 64 KiB start tag with every attribute distinct (~9,700), one write', () => tokenizeWrites([wideTag(64 * KiB - 16)])],
  'tag-1024-attributes': [
    'tokenizer: one start tag of 1,024 distinct attributes (the most accepted), one write',
    () => tokenizeWrites([wideTag(8 * KiB, '', 1024)]),
  ],
  'page-of-wide-tags': [
    'readDidl: a 16 MiB OAI-PMH page of 60 KiB start tags (~9,000 attributes each), 64 KiB chunks',
    () => readPage(wideTag(60 * KiB), 64 * KiB),
  ],
  'page-of-1024-attribute-tags': [
    'readDidl: a 16 MiB OAI-PMH page of start tags of 1,024 attributes each, 64 KiB chunks',
    () => readPage(wideTag(8 * KiB, '', 1024), 64 * KiB),
  ],
  'tag-gt-in-values': [
    "readDidl: a 60 KiB start tag whose ~7,500 attribute values are each '>' (the reader feeds the tokenizer up to each '>')",
    () => readPage(wideTag(60 * KiB, '>'), MiB, 1),
  ],
  'tag-gt-in-values-1000': [
    "readDidl: a 60 KiB start tag of 1,000 attributes whose values hold 50,000 '>' in all",
    () => readPage(wideTag(60 * KiB, '>'.repeat(50), 1000), MiB, 1),
  ],
  'tag-small-writes': [
    'tokenizer: a 60 KiB start tag of 1,000 attributes written 16 characters at a time (a source sending tiny chunks)',
    () => tokenizeWrites(pieces(wideTag(60 * KiB, 'v'.repeat(50), 1000), 16)),
  ],
  'comment-small-writes': [
    'tokenizer: a 60 KiB comment written 16 characters at a time',
    () => tokenizeWrites(pieces(`<a><!--${'-x'.repeat(30 * KiB)}--></a>`, 16)),
  ],
  'deep-namespaces': [
    'tokenizer: 998 nested elements each declaring a prefix, then 1 MiB of prefixed leaves (the prefix looked up 100,000 times)',
    () => tokenizeWrites([`<r>${'<a xmlns:p="urn:p">'.repeat(998)}`, '<p:leaf/>'.repeat(MiB / 9), `${'</a>'.repeat(998)}</r>`]),
  ],
  'identify-open-tags-256k': ["Identify: 256 KiB of '<granularity ' without any '>' after them", () => identify(identifySized(256 * KiB)('<granularity '))],
  'identify-open-tags-1m': ["Identify: 1 MiB of '<granularity ' without any '>' after them", () => identify(identifySized(MiB)('<granularity '))],
  'identify-unclosed-elements-1m': ["Identify: 1 MiB of '<granularity>x' (never closed)", () => identify(identifySized(MiB)('<granularity>x'))],
  'identify-one-huge-element': [
    'Identify: one element of 1 MiB of text (repositoryName)',
    () => identify(identifySized(MiB)('').replace('<repositoryName>R', `<repositoryName>${'r'.repeat(MiB - 1200)}`)),
  ],
  'identify-many-tiny-elements': ['Identify: 1 MiB of tiny <description/> elements', () => identify(identifySized(MiB)('<description/>'))],
  'identify-deep-rights': [
    'Identify with a rights description: 1 MiB of nested elements, each declaring a namespace',
    () =>
      identify(identifySized(MiB)(`<description><rightsManifest xmlns="${RIGHTS}"/></description><d xmlns:p="urn:p">`).replace(/<\/Identify>/, '</Identify>')),
  ],
  'formats-unclosed-1m': [
    "ListMetadataFormats: 1 MiB of '<metadataFormat>' never closed (the prefix asked for is not offered)",
    () => identify(identifySized(64 * KiB)(''), filled(formatsAnswer, '<metadataFormat>', MiB)),
  ],
  'formats-open-tags-1m': [
    "ListMetadataFormats: 1 MiB of '<metadataPrefix ' without any '>' after them",
    () => identify(identifySized(64 * KiB)(''), filled(formatsAnswer, '<metadataPrefix ', MiB)),
  ],
};

function handlers(own) {
  return {
    openTag() {},
    closeTag() {},
    text() {},
    cdata() {},
    comment() {},
    doctype() {},
    processingInstruction() {},
    error(reason) {
      throw new Error(reason);
    },
    ...own,
  };
}

function pieces(text, size) {
  const writes = [];
  for (let i = 0; i < text.length; i += size) writes.push(text.slice(i, i + size));
  return writes;
}

/** The tokenizer over these writes: the attributes of the last start tag, the length of the last comment, or the refusal. */
async function tokenizeWrites(writes) {
  const { XmlTokenizer } = await didl();
  let result = '';
  const tokenizer = new XmlTokenizer(
    handlers({
      openTag: (tag) => (result = `${Object.keys(tag.attributes).length} attributes`),
      comment: (text) => (result = `comment of ${text.length} characters`),
    }),
  );
  try {
    for (const piece of writes) tokenizer.write(piece);
    tokenizer.end();
    return result;
  } catch (error) {
    return `refused: ${error.message.slice(0, 100)}`;
  }
}

/** readDidl over an OAI-PMH page of `tag` repeated to about 16 MiB (or `count` times), in chunks of `size`. */
async function readPage(tag, size, count = Math.floor((16 * MiB) / tag.length)) {
  const { readDidl } = await didl();
  return readChunks(readDidl, Buffer.from(oaiPage(`<x>${tag.repeat(count)}</x>`)), size);
}

function didl() {
  return import(`${ROOT}/packages/didl/dist/index.js`);
}

async function readChunks(readDidl, page, size) {
  const chunks = [];
  for (let i = 0; i < page.length; i += size) chunks.push(page.subarray(i, i + size));
  try {
    await readDidl(chunks);
    return `read ${(page.length / MiB).toFixed(1)} MiB`;
  } catch (error) {
    return `${error.code ?? 'error'}: ${error.message.slice(0, 100)}`;
  }
}

/** identifyRepository against a loopback server answering Identify and ListMetadataFormats. */
async function identify(identifyXml, formatsXml = FORMATS) {
  // Identify and the OAI-PMH client are the harvest's machinery, no part of the public API: the
  // bench measures what they do with hostile answers, without a harvest around them.
  const { identifyRepository } = await import(`${ROOT}/packages/archiver/dist/oai/identify.js`);
  const { OaiClient } = await import(`${ROOT}/packages/archiver/dist/oai/oai-client.js`);
  const server = createServer((request, response) => {
    const verb = new URL(request.url, 'http://x').searchParams.get('verb');
    response.setHeader('content-type', 'text/xml; charset=utf-8');
    response.end(verb === 'Identify' ? identifyXml : formatsXml);
  });
  await new Promise((done) => server.listen(0, '127.0.0.1', done));
  const client = new OaiClient(`http://127.0.0.1:${server.address().port}/oai`, { compression: 'never', retry: { retries: 0, baseDelayMs: 1, maxDelayMs: 1 } });
  try {
    const facts = await identifyRepository(client, 'oai_didl');
    return `answered: granularity ${facts.granularity}, rights ${facts.rightsManifest === undefined ? 'none' : 'found'}`;
  } catch (error) {
    return `${error.code ?? 'error'}: ${error.message.slice(0, 120)}`;
  } finally {
    await client.close?.();
    server.close();
  }
}

async function runCase(name) {
  const [, run] = CASES[name];
  // Loaded and run once before the clock starts: compiling them (and undici's HTTP parser)
  // would count as blocking the loop.
  await didl();
  await identify(identifyAnswer(''));
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  // The monitor's timer has to be running before the loop blocks, or the block goes unseen.
  await new Promise((done) => setTimeout(done, 20));
  const start = performance.now();
  const result = await run();
  const ms = performance.now() - start;
  // The delay of a blocked loop is recorded when the monitor's timer fires next.
  await new Promise((done) => setTimeout(done, 50));
  delay.disable();
  process.stdout.write(`${JSON.stringify({ ms, blockedMs: delay.max / 1e6, result })}\n`);
}

function runChild(name, timeoutSeconds) {
  return new Promise((done) => {
    const child = spawn(process.execPath, [import.meta.filename, '--case', name, '--root', ROOT], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutSeconds * 1000);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (signal === 'SIGKILL') done({ name, overLimit: true, limitSeconds: timeoutSeconds });
      else if (code !== 0) done({ name, failed: `exit ${code}` });
      else done({ name, ...JSON.parse(out.trim().split('\n').pop()) });
    });
  });
}

const { args, usageError } = parseBenchArgs('hostile-parse', USAGE.replace('CASE_NAMES', Object.keys(CASES).join(', ')), {
  only: { type: 'string' },
  timeout: { type: 'string', default: '60' },
  json: { type: 'boolean', default: false },
  case: { type: 'string' },
  root: { type: 'string' },
});
const ROOT = args.root === undefined ? REPOSITORY : resolve(args.root);
if (args.case !== undefined) {
  if (!(args.case in CASES)) usageError(`unknown case ${args.case}`);
  await runCase(args.case);
} else {
  const timeout = wholeNumberArg(args.timeout, '--timeout', usageError);
  const names = sectionsArg(args.only, Object.keys(CASES), usageError);
  const results = [];
  for (const name of names) {
    const result = await runChild(name, timeout);
    results.push(result);
    const time = result.overLimit ? `> ${timeout} s (killed)` : result.failed ? result.failed : `${(result.ms / 1000).toFixed(3)} s`;
    const blocked = result.blockedMs === undefined ? '' : `, event loop blocked up to ${(result.blockedMs / 1000).toFixed(3)} s`;
    process.stdout.write(`${name.padEnd(30)} ${time}${blocked}  ${result.result ?? ''}\n    ${CASES[name][0]}\n`);
  }
  if (args.json) process.stdout.write(`${JSON.stringify({ machine: machineFacts(), results }, null, 2)}\n`);
}
