import { escapeText } from '@oaibag/didl';
import { formatDatestamp } from '@oaibag/oai-pmh';
import type { IndexedFile } from '../core/model.js';

/** An item's header; only the leaf set is named (membership of its ancestors follows). */
export function headerXml(file: IndexedFile, identifier: string): string {
  const status = file.deleted ? ' status="deleted"' : '';
  return (
    `<header${status}><identifier>${escapeText(identifier)}</identifier>` +
    `<datestamp>${formatDatestamp(file.datestamp)}</datestamp>` +
    `<setSpec>${escapeText(file.setSpec)}</setSpec></header>\n`
  );
}
