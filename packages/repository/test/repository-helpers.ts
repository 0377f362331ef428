import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { HTTP_HEADER_SCHEMA } from '@oaibag/oai-pmh';
import { SCHEMAS, validateXmlSchema, validateXmlSchemaAll } from '../../../test/xml-schema.ts';
import { createRepository, type Repository, type RepositoryOptions } from '../src/index.ts';

/** Our own schema for the http_header format, as a file the validators can load. */
export const HTTP_HEADER_XSD = join(mkdtempSync(join(tmpdir(), 'oaibag-http-header-')), 'http_header.xsd');
writeFileSync(HTTP_HEADER_XSD, HTTP_HEADER_SCHEMA);

/** A temporary folder removed by `cleanup`. */
export function tempDir(prefix = 'oaibag-repo-'): { path: string; cleanup: () => void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, cleanup: () => rmSync(path, { recursive: true, force: true }) };
}

/** Writes files (path → content) below root, creating folders. */
export function writeTree(root: string, files: Record<string, string | Uint8Array>): void {
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), content);
  }
}

export interface RunningRepository {
  repository: Repository;
  baseUrl: string;
  endpoint: string;
  site: string;
  lines: string[];
  stop: () => Promise<void>;
}

/** Starts a repository over `site` on 127.0.0.1, port 0, with its index in `work`. */
export async function startRepository(site: string, work: string, options: Partial<RepositoryOptions> = {}): Promise<RunningRepository> {
  const lines: string[] = [];
  const repository = await createRepository({
    root: site,
    index: join(work, 'index.sqlite'),
    watch: false,
    rescanSeconds: 0,
    log: (line) => lines.push(line),
    ...options,
  });
  const baseUrl = await repository.listen(0, '127.0.0.1');
  return { repository, baseUrl, endpoint: `${baseUrl}/oai`, site, lines, stop: () => repository.close() };
}

export interface HttpAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  text: string;
}

/** One HTTP request with node:http (exact control over the path and headers). */
export function httpRequest(
  url: string,
  options: { method?: string; headers?: Record<string, string>; path?: string; body?: string } = {},
): Promise<HttpAnswer> {
  const target = new URL(url);
  return new Promise((resolvePromise, reject) => {
    const req = request(
      {
        host: target.hostname,
        port: target.port,
        method: options.method ?? 'GET',
        path: options.path ?? `${target.pathname}${target.search}`,
        headers: options.headers,
      },
      (res) => {
        const parts: Buffer[] = [];
        res.on('data', (part: Buffer) => parts.push(part));
        res.on('end', () => {
          const body = Buffer.concat(parts);
          resolvePromise({ status: res.statusCode ?? 0, headers: res.headers, body, text: body.toString('utf8') });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

/** GET <endpoint>?<params>. */
export function oai(endpoint: string, params: Record<string, string>, headers: Record<string, string> = {}): Promise<HttpAnswer> {
  return httpRequest(`${endpoint}?${new URLSearchParams(params)}`, { headers });
}

export function basicAuth(user: string, password: string): Record<string, string> {
  return { Authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` };
}

/** Error codes of an OAI-PMH response. */
export function errorCodes(xml: string): string[] {
  return [...xml.matchAll(/<error code="([^"]+)"/g)].map((match) => match[1]!);
}

/** Identifiers of the headers of a response, in order, with their status. */
export function headers(xml: string): Array<{ identifier: string; datestamp: string; deleted: boolean; setSpecs: string[] }> {
  return [...xml.matchAll(/<header( status="deleted")?>(.*?)<\/header>/gs)].map((match) => ({
    deleted: match[1] !== undefined,
    identifier: unescapeXml(/<identifier>(.*?)<\/identifier>/s.exec(match[2]!)![1]!),
    datestamp: /<datestamp>(.*?)<\/datestamp>/s.exec(match[2]!)![1]!,
    setSpecs: [...match[2]!.matchAll(/<setSpec>(.*?)<\/setSpec>/gs)].map((set) => set[1]!),
  }));
}

export function resumptionToken(xml: string): { token: string; cursor: number; completeListSize: number } | undefined {
  const match = /<resumptionToken completeListSize="(\d+)" cursor="(\d+)">(.*?)<\/resumptionToken>/s.exec(xml);
  return match ? { token: unescapeXml(match[3]!), cursor: Number(match[2]), completeListSize: Number(match[1]) } : undefined;
}

export function responseDate(xml: string): string {
  return /<responseDate>(.*?)<\/responseDate>/.exec(xml)![1]!;
}

/** Follows resumption tokens to the end; returns every page's text. */
export async function harvestAll(endpoint: string, params: Record<string, string>, headers: Record<string, string> = {}): Promise<string[]> {
  const pages: string[] = [];
  let answer = await oai(endpoint, params, headers);
  pages.push(answer.text);
  for (let token = resumptionToken(answer.text); token && token.token !== ''; token = resumptionToken(answer.text)) {
    answer = await oai(endpoint, { verb: params.verb!, resumptionToken: token.token }, headers);
    pages.push(answer.text);
  }
  return pages;
}

function unescapeXml(text: string): string {
  return text
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&amp;/g, '&');
}

/** Validates a response against a schema (absolute, or a name in test/schemas; see test/xml-schema.ts). */
export function validate(xml: string, schema: string): { ok: boolean; output: string } {
  return validateXmlSchema(schema, xml, 'response');
}

/**
 * A driver schema that loads OAI-PMH.xsd with every payload schema of this repository
 * (oai_dc, DIDL, and our http_header), written in `dir`: it imports the copies in test/schemas
 * and packages/repository/schemas by absolute path.
 */
export function allPayloadsSchema(dir: string): string {
  const file = join(dir, 'oai-with-all-payloads.xsd');
  writeFileSync(
    file,
    `<?xml version="1.0" encoding="UTF-8"?>
<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema">
  <xs:import namespace="http://www.openarchives.org/OAI/2.0/" schemaLocation="${join(SCHEMAS, 'OAI-PMH.xsd')}"/>
  <xs:import namespace="http://www.openarchives.org/OAI/2.0/oai_dc/" schemaLocation="${join(SCHEMAS, 'oai_dc.xsd')}"/>
  <xs:import namespace="urn:mpeg:mpeg21:2002:02-DIDL-NS" schemaLocation="${join(SCHEMAS, 'didl.xsd')}"/>
  <xs:import namespace="http://www.openarchives.org/OAI/2.0/http_header/" schemaLocation="${HTTP_HEADER_XSD}"/>
</xs:schema>
`,
  );
  return file;
}

/**
 * Validates many documents against one schema, compiled once, so a test file can check every
 * response it produced in well under a second. `output` names each failing document by its label.
 */
export function validateAll(documents: ReadonlyArray<{ label: string; xml: string }>, schema: string): { ok: boolean; output: string } {
  return validateXmlSchemaAll(
    schema,
    documents.map((document) => ({ label: `[${document.label}]`, xml: document.xml })),
  );
}
