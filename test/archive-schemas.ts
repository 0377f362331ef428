/**
 * The schema every answer of `oaibag serve` validates against: OAI-PMH with each payload schema
 * it may carry (oai_dc, DIDL, provenance, OAI-rights from test/schemas; http_header and the
 * `ore` envelope as the archive server itself serves them, fetched once from one started on an
 * empty archive and written to a temporary folder).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Catalog, startArchiveServer } from '../packages/archiver/src/index.ts';
import { SCHEMAS, validateXmlSchema } from './xml-schema.ts';

/** The schemas the archive server serves under /oai/schemas/, by file name. */
const served = await (async () => {
  const empty = mkdtempSync(join(tmpdir(), 'oaibag-archive-schemas-served-'));
  Catalog.open(empty).close();
  const server = await startArchiveServer({ archiveDir: empty });
  try {
    const schemas = new Map<string, string>();
    for (const name of ['http_header.xsd', 'ore-rdfxml.xsd']) {
      const response = await fetch(`${server.baseUrl}/oai/schemas/${name}`);
      if (!response.ok) throw new Error(`${name}: HTTP ${response.status}`);
      schemas.set(name, await response.text());
    }
    return schemas;
  } finally {
    await server.close();
    rmSync(empty, { recursive: true, force: true });
  }
})();

let driver: string | undefined;

/** The driver schema's path (written once per process). */
export function archiveResponsesSchema(): string {
  if (driver) return driver;
  const dir = mkdtempSync(join(tmpdir(), 'oaibag-archive-schemas-'));
  for (const [name, schema] of served) writeFileSync(join(dir, name), schema);
  const imports: Array<[string, string]> = [
    ['http://www.openarchives.org/OAI/2.0/', join(SCHEMAS, 'OAI-PMH.xsd')],
    ['http://www.openarchives.org/OAI/2.0/oai_dc/', join(SCHEMAS, 'oai_dc.xsd')],
    ['urn:mpeg:mpeg21:2002:02-DIDL-NS', join(SCHEMAS, 'didl.xsd')],
    ['http://www.openarchives.org/OAI/2.0/provenance', join(SCHEMAS, 'oai-provenance.xsd')],
    ['http://www.openarchives.org/OAI/2.0/rights/', join(SCHEMAS, 'oai-rights.xsd')],
    ['http://www.openarchives.org/OAI/2.0/http_header/', join(dir, 'http_header.xsd')],
    ['http://www.w3.org/1999/02/22-rdf-syntax-ns#', join(dir, 'ore-rdfxml.xsd')],
  ];
  driver = join(dir, 'archive-responses.xsd');
  writeFileSync(
    driver,
    `<?xml version="1.0" encoding="UTF-8"?>\n<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema">\n${imports
      .map(([namespace, file]) => `  <xs:import namespace="${namespace}" schemaLocation="${file}"/>\n`)
      .join('')}</xs:schema>\n`,
  );
  return driver;
}

/** Asserts-ready: validates one answer of the archive. */
export function validateArchiveResponse(xml: string, label = 'response'): { ok: boolean; output: string } {
  return validateXmlSchema(archiveResponsesSchema(), xml, label);
}
