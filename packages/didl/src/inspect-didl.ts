import type { DidlItem } from './model.js';
import type { DidlReadSummary } from './read-didl.js';
import { readDidl } from './read-didl.js';
import type { ReadRecord } from './record-builder.js';
import { componentDigest, isSha256 } from './record-checks.js';

/** Everything `didl inspect` shows: the envelope and each record, errors included. */
export interface Inspection {
  kind: DidlReadSummary['kind'];
  page: DidlReadSummary['page'];
  records: ReadRecord[];
}

/** Reads a whole document or page, keeping bad records (with their error) instead of stopping. */
export async function inspectDidl(input: AsyncIterable<Uint8Array>, options: { lenientIdentifier?: boolean } = {}): Promise<Inspection> {
  const records: ReadRecord[] = [];
  const summary = await readDidl(input, {
    recordErrors: 'report',
    lenientIdentifier: options.lenientIdentifier === true,
    onRecord: (record) => {
      records.push(record);
    },
  });
  return { kind: summary.kind, page: summary.page, records };
}

/** The inspection as plain text, one fact a line. */
export function formatInspection(inspection: Inspection): string {
  const lines: string[] = [];
  const { page } = inspection;
  if (inspection.kind === 'oai-pmh') {
    lines.push(`OAI-PMH response  ${page.verb ?? '(no verb)'}  responseDate ${page.responseDate ?? '?'}`);
    for (const error of page.errors) lines.push(`OAI-PMH error     ${error.code}: ${error.message}`);
    if (page.resumptionToken) {
      const token = page.resumptionToken;
      const extra = [token.cursor !== undefined ? `cursor ${token.cursor}` : '', token.completeListSize !== undefined ? `of ${token.completeListSize}` : '']
        .filter(Boolean)
        .join(' ');
      lines.push(`resumptionToken   ${token.value || '(empty: list complete)'}${extra ? `  ${extra}` : ''}`);
    }
  }
  inspection.records.forEach((record, index) => {
    lines.push(`record ${index + 1}`);
    if (record.header) {
      const header = record.header;
      lines.push(`  oai identifier  ${header.identifier}`);
      lines.push(`  datestamp       ${header.datestamp}${header.deleted ? '  (deleted)' : ''}`);
      for (const set of header.setSpecs) lines.push(`  set             ${set}`);
    }
    if (record.otherMetadataNamespace) lines.push(`  metadata        not DIDL (${record.otherMetadataNamespace})`);
    if (record.didl) {
      const from = record.didl.identifierFrom ? ` (from the ${record.didl.identifierFrom === 'oai-header' ? 'OAI-PMH header' : 'DIDLDocumentId'})` : '';
      lines.push(`  identifier      ${record.didl.identifier || '(none)'}${from}`);
      for (const other of record.didl.item.otherIdentifiers ?? []) lines.push(`  also            ${other}`);
      formatItem(record.didl.item, '  ', lines);
    }
    if (record.error) lines.push(`  error           ${record.error.code}: ${record.error.message}`);
  });
  return `${lines.join('\n')}\n`;
}

function formatItem(item: DidlItem, indent: string, lines: string[]): void {
  for (const header of item.headers ?? []) lines.push(`${indent}header          ${header.name}: ${header.value}`);
  if (item.digest) lines.push(`${indent}digest          ${item.digest.algorithm} ${item.digest.value}`);
  if (item.descriptors.length > 0) lines.push(`${indent}descriptors     ${item.descriptors.length} kept as XML`);
  item.components.forEach((component, index) => {
    lines.push(`${indent}component ${index + 1}`);
    for (const header of component.headers ?? []) lines.push(`${indent}  header        ${header.name}: ${header.value}`);
    if (component.digest) lines.push(`${indent}  digest        ${component.digest.algorithm} ${component.digest.value}`);
    const digest = componentDigest(item, component);
    for (const resource of component.resources) {
      const type = resource.mimeType ?? '(no mimeType)';
      if (resource.ref !== undefined) lines.push(`${indent}  by-reference  ${type}  ${resource.ref}`);
      if (resource.byValue) {
        const { size, sha256 } = resource.byValue;
        const verdict = digest && isSha256(digest.algorithm) ? (digest.value === sha256 ? '  (matches digest)' : '  (DIFFERS from digest)') : '';
        lines.push(`${indent}  by-value      ${type}  ${size} bytes  sha256 ${sha256}${verdict}`);
      }
      if (resource.inline !== undefined) lines.push(`${indent}  inline        ${type}  ${resource.inline.length} characters of XML`);
      if (resource.encoding !== undefined) lines.push(`${indent}  unsupported   encoding ${resource.encoding}`);
    }
  });
  item.items.forEach((nested, index) => {
    lines.push(`${indent}item ${index + 1}${nested.identifier ? `  ${nested.identifier}` : ''}`);
    formatItem(nested, `${indent}  `, lines);
  });
}
