/**
 * identifyRepository against a real HTTP server on 127.0.0.1 answering Identify and
 * ListMetadataFormats as a hostile source might (issue 24): answers of up to 1 MiB shaped to be
 * slow are read (in one pass: the expressions used before took minutes on some), a larger one
 * is ERR_HARVEST_NOT_OAI naming the limit. No timing here (bench/hostile-parse.mjs has it).
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, describe, test } from 'node:test';
import { isArchiverError } from '../src/core/errors.ts';
import { identifyRepository } from '../src/oai/identify.ts';
import { OaiClient } from '../src/oai/oai-client.ts';

const MiB = 1024 * 1024;
const OAI = 'http://www.openarchives.org/OAI/2.0/';
const RIGHTS = 'http://www.openarchives.org/OAI/2.0/rights/';
const servers: Server[] = [];
after(() => Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve)))));

function identifyAnswer(inner: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?>\n<OAI-PMH xmlns="${OAI}"><responseDate>2026-01-01T00:00:00Z</responseDate><request verb="Identify">http://x/oai</request><Identify><repositoryName>R &amp; D</repositoryName><baseURL>http://x/oai</baseURL><protocolVersion>2.0</protocolVersion><adminEmail>a@x</adminEmail><earliestDatestamp>2000-01-01</earliestDatestamp><deletedRecord>no</deletedRecord><granularity>YYYY-MM-DD</granularity><compression>gzip</compression>${inner}</Identify></OAI-PMH>\n`;
}

function formatsAnswer(inner: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?>\n<OAI-PMH xmlns="${OAI}"><responseDate>2026-01-01T00:00:00Z</responseDate><request verb="ListMetadataFormats">http://x/oai</request><ListMetadataFormats>${inner}</ListMetadataFormats></OAI-PMH>\n`;
}

const DIDL_FORMAT =
  '<metadataFormat><metadataPrefix>didl</metadataPrefix><schema>http://x/didl.xsd</schema><metadataNamespace>urn:mpeg:mpeg21:2002:02-DIDL-NS</metadataNamespace></metadataFormat>';

/** `wrap(unit repeated)`, as long as fits in `bytes` (UTF-8, all ASCII here). */
function filled(wrap: (inner: string) => string, unit: string, bytes = MiB): string {
  return wrap(unit.repeat(Math.floor((bytes - wrap('').length) / unit.length)));
}

async function identifyFrom(identify: string, formats: string, prefix = 'didl') {
  const server = createServer((request, response) => {
    const verb = new URL(request.url!, 'http://x').searchParams.get('verb');
    response.setHeader('content-type', 'text/xml; charset=utf-8');
    response.end(verb === 'Identify' ? identify : formats);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const client = new OaiClient(`http://127.0.0.1:${(server.address() as AddressInfo).port}/oai`, {
    compression: 'never',
    retry: { retries: 0, baseDelayMs: 1, maxDelayMs: 1 },
  });
  try {
    return await identifyRepository(client, prefix);
  } finally {
    await client.close();
  }
}

async function refusal(identify: string, formats: string, prefix = 'didl'): Promise<{ code: string; message: string }> {
  try {
    await identifyFrom(identify, formats, prefix);
  } catch (error) {
    if (isArchiverError(error)) return { code: error.code, message: error.message };
    throw error;
  }
  assert.fail('accepted');
}

const FACTS = { repositoryName: 'R & D', granularity: 'YYYY-MM-DD', earliestDatestamp: '2000-01-01', deletedRecord: 'no', compression: ['gzip'] };

describe('Identify and ListMetadataFormats answers shaped to be slow', () => {
  test('a plain answer gives the facts', async () => {
    assert.deepEqual(await identifyFrom(identifyAnswer(''), formatsAnswer(DIDL_FORMAT)), FACTS);
  });

  test("1 MiB of '<granularity ' with no '>' after them (the expressions' minutes): the facts", async () => {
    assert.deepEqual(await identifyFrom(filled(identifyAnswer, '<granularity '), formatsAnswer(DIDL_FORMAT)), FACTS);
  });

  test('1 MiB of tiny elements, and one element of 1 MiB of text', async () => {
    assert.deepEqual(await identifyFrom(filled(identifyAnswer, '<description/>'), formatsAnswer(DIDL_FORMAT)), FACTS);
    const huge = identifyAnswer('').replace('R &amp; D', 'r'.repeat(MiB - 1000));
    assert.equal((await identifyFrom(huge, formatsAnswer(DIDL_FORMAT))).repositoryName?.length, MiB - 1000);
  });

  test("ListMetadataFormats of 1 MiB of '<metadataPrefix ' or of '<metadataFormat>' never closed: ERR_HARVEST_FORMAT", async () => {
    for (const unit of ['<metadataPrefix ', '<metadataFormat>']) {
      const refused = await refusal(identifyAnswer(''), filled(formatsAnswer, unit));
      assert.equal(refused.code, 'ERR_HARVEST_FORMAT');
      assert.match(refused.message, /does not offer the metadata format didl \(it offers none\)/);
    }
  });

  test('1 MiB of nested elements under a rights description: the facts, no rights manifest (the scan stops at 1,000 levels)', async () => {
    const deep = filled((inner) => identifyAnswer(`<description><rightsManifest xmlns="${RIGHTS}"/></description>${inner}`), '<d xmlns:p="urn:p">');
    const facts = await identifyFrom(deep, formatsAnswer(DIDL_FORMAT));
    assert.deepEqual(facts, FACTS);
  });

  test('a rights manifest behind a start tag with 7,000 quoted ">" is still found', async () => {
    const wide = `<description><rightsManifest xmlns="${RIGHTS}" ${Array.from({ length: 1000 }, (_, n) => `a${n}=">>>>>>>"`).join(' ')}/></description>`;
    const facts = await identifyFrom(identifyAnswer(wide), formatsAnswer(DIDL_FORMAT));
    assert.ok(facts.rightsManifest?.startsWith('<rightsManifest'));
  });

  test('an answer over 1 MiB is ERR_HARVEST_NOT_OAI naming the limit', async () => {
    const refused = await refusal(identifyAnswer(' '.repeat(MiB)), formatsAnswer(DIDL_FORMAT));
    assert.equal(refused.code, 'ERR_HARVEST_NOT_OAI');
    assert.match(refused.message, new RegExp(`^Identify of http://127\\.0\\.0\\.1:\\d+/oai is larger than ${MiB} bytes$`));
    assert.equal((await refusal(identifyAnswer(''), formatsAnswer(`${DIDL_FORMAT}${' '.repeat(MiB)}`))).code, 'ERR_HARVEST_NOT_OAI');
  });
});

describe('a prefix that is not DIDL (issue 25)', () => {
  const DC_FORMAT =
    '<metadataFormat><metadataPrefix>oai_dc</metadataPrefix><schema>http://x/dc.xsd</schema><metadataNamespace>http://www.openarchives.org/OAI/2.0/oai_dc/</metadataNamespace></metadataFormat>';
  const NO_NAMESPACE = '<metadataFormat><metadataPrefix>odd</metadataPrefix><schema>http://x/odd.xsd</schema></metadataFormat>';

  test('offered in another namespace: ERR_HARVEST_FORMAT naming it, the hint naming the DIDL prefix', async () => {
    const found = await refusal(identifyAnswer(''), formatsAnswer(DC_FORMAT + DIDL_FORMAT), 'oai_dc');
    assert.equal(found.code, 'ERR_HARVEST_FORMAT');
    assert.match(found.message, /offers oai_dc in the namespace http:\/\/www\.openarchives\.org\/OAI\/2\.0\/oai_dc\/, not MPEG-21 DIDL/);
  });

  test('offered without a namespace: refused too', async () => {
    const found = await refusal(identifyAnswer(''), formatsAnswer(NO_NAMESPACE + DIDL_FORMAT), 'odd');
    assert.equal(found.code, 'ERR_HARVEST_FORMAT');
    assert.match(found.message, /offers odd in the namespace \(none given\)/);
  });

  test('not offered: ERR_HARVEST_FORMAT naming what is offered', async () => {
    const found = await refusal(identifyAnswer(''), formatsAnswer(DC_FORMAT), 'oai_didl');
    assert.equal(found.code, 'ERR_HARVEST_FORMAT');
    assert.match(found.message, /does not offer the metadata format oai_didl \(it offers oai_dc\)/);
  });

  test("a listing of identifiers ('any') takes an offered prefix of any namespace", async () => {
    const server = createServer((request, response) => {
      const verb = new URL(request.url!, 'http://x').searchParams.get('verb');
      response.end(verb === 'Identify' ? identifyAnswer('') : formatsAnswer(DC_FORMAT));
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const client = new OaiClient(`http://127.0.0.1:${(server.address() as AddressInfo).port}/oai`, { compression: 'never' });
    try {
      assert.equal((await identifyRepository(client, 'oai_dc', 'any')).granularity, 'YYYY-MM-DD');
    } finally {
      await client.close();
    }
  });
});
