// What a delivery holds, told from its contents (docs/import-export.md): serialized bags, DIDL
// records (standalone DIDL documents or saved OAI-PMH responses), or else a web site's files.
import { isSerializedBagZipName } from '../aip/layout-names.js';
import { ArchiverError } from '../core/errors.js';
import { oneBagFolder } from './bag-zip-unpacking.js';
import type { Delivery, DeliveryEntry } from './delivery.js';

export const DELIVERY_KINDS = ['site', 'didl', 'bags'] as const;
export type DeliveryKind = (typeof DELIVERY_KINDS)[number];

/** Bytes read from the head of an XML file to find its root element (and an OAI-PMH `request`). */
const SNIFF_BYTES = 8192;

/** What the delivery was recognised as, and for DIDL records the base URL their responses name. */
export interface Recognised {
  kind: DeliveryKind;
  /** The `request` base URL of the first saved OAI-PMH response (the source the records came from). */
  requestUrl?: string;
}

/**
 * The delivery's kind: `stated` when given (the contents are then read as that kind, and fail
 * as it if they are not), else serialized bags when it is one bag ZIP (one folder with
 * bagit.txt) or a folder of `harvest-…-batch-….zip` files; DIDL records when every file is XML
 * whose root is `DIDL` or `OAI-PMH`; a web site's files otherwise.
 */
export async function recogniseDelivery(delivery: Delivery, stated?: DeliveryKind): Promise<Recognised> {
  if (stated === 'bags' || (stated === undefined && looksLikeBags(delivery))) {
    if (!looksLikeBags(delivery)) {
      throw new ArchiverError(
        'ERR_IMPORT_KIND',
        `${delivery.name} is not serialized bags: a bag ZIP unpacking to one folder with bagit.txt, or a folder of harvest-…-batch-….zip files`,
        { path: delivery.path },
      );
    }
    return { kind: 'bags' };
  }
  if (stated === 'site') return { kind: 'site' };
  const xml = delivery.entries.filter((entry) => !isHidden(entry.name));
  let requestUrl: string | undefined;
  let allDidl = xml.length > 0;
  for (const entry of xml) {
    const head = entry.name.toLowerCase().endsWith('.xml') ? await sniff(delivery, entry) : '';
    const root = rootElement(head);
    if (root !== 'DIDL' && root !== 'OAI-PMH') {
      allDidl = false;
      break;
    }
    requestUrl ??= root === 'OAI-PMH' ? requestBaseUrl(head) : undefined;
  }
  if (stated === 'didl' || allDidl) {
    if (!allDidl) {
      throw new ArchiverError('ERR_IMPORT_KIND', `${delivery.name} is not DIDL records: every file must be an XML DIDL document or OAI-PMH response`, {
        path: delivery.path,
      });
    }
    return { kind: 'didl', ...(requestUrl ? { requestUrl } : {}) };
  }
  return { kind: 'site' };
}

/** One bag ZIP (every entry inside one folder that holds bagit.txt), or a folder of bag ZIPs. */
function looksLikeBags(delivery: Delivery): boolean {
  const { entries } = delivery;
  if (entries.length === 0) return false;
  if (delivery.kind === 'zip') return oneBagFolder(entries.map((entry) => entry.name)) !== undefined;
  const zips = entries.filter((entry) => isSerializedBagZipName(entry.name));
  return zips.length > 0 && entries.every((entry) => isSerializedBagZipName(entry.name) || entry.name === 'SHA256SUMS');
}

/** A name with a segment that starts with a dot (`.DS_Store`, `.git/…`): never a record. */
export function isHidden(name: string): boolean {
  return name.split('/').some((segment) => segment.startsWith('.'));
}

/** The first bytes of an entry, as text. */
async function sniff(delivery: Delivery, entry: DeliveryEntry): Promise<string> {
  const chunks: Buffer[] = [];
  let length = 0;
  const bytes = delivery.open(entry)[Symbol.asyncIterator]();
  try {
    while (length < SNIFF_BYTES) {
      const next = await bytes.next();
      if (next.done) break;
      chunks.push(Buffer.from(next.value));
      length += next.value.byteLength;
    }
  } finally {
    await bytes.return?.();
  }
  return Buffer.concat(chunks).subarray(0, SNIFF_BYTES).toString('utf8');
}

/** The local name of the document's root element, past the declaration, comments and DOCTYPE. */
export function rootElement(head: string): string | undefined {
  const prolog = /^(?:\s+|<\?[\s\S]*?\?>|<!--[\s\S]*?-->|<!DOCTYPE[^>]*>)/;
  let rest = head.replace(/^\uFEFF/, '');
  for (let match = prolog.exec(rest); match !== null && match[0] !== ''; match = prolog.exec(rest)) rest = rest.slice(match[0].length);
  return /^<(?:[A-Za-z_][\w.-]*:)?([A-Za-z_][\w.-]*)[\s/>]/.exec(rest)?.[1];
}

/** The base URL an OAI-PMH response's `request` element names. */
function requestBaseUrl(head: string): string | undefined {
  const match = /<(?:[\w.-]+:)?request\b[^>]*>([^<]+)<\//.exec(head);
  const url = match?.[1]?.trim().replace(/&amp;/g, '&');
  return url && /^https?:\/\//.test(url) ? url : undefined;
}
