// One line of the CDXJ index `oaibag export --warc` writes beside its WARC files (and into a
// WACZ as indexes/index.cdxj): `<SURT key> <14-digit timestamp> <JSON>`, the fields in the order
// and form warcio's CDXIndexer (format cdxj) and pywb's indexer give them: url, mime, status,
// digest, length, offset, filename, numbers as strings, a field without value left out. The
// SURT key is warcio's own function (warcio/utils, getSurt), so the keys are the ones its
// indexer computes. The lines are sorted by their bytes (catalog/warc-queries.ts), which puts
// them in key order, then timestamp order, as a sorted CDXJ file is.
import { getSurt } from 'warcio/utils';

/** What a CDXJ line says of one record. */
export interface CdxjRecord {
  /** WARC-Target-URI. */
  url: string;
  /** WARC-Date, `YYYY-MM-DDThh:mm:ssZ`. */
  date: string;
  /** The MIME type (`warc/revisit` for a revisit), or undefined when the response has no Content-Type. */
  mime: string | undefined;
  /** The HTTP status of the record's response head. */
  status: number;
  /** WARC-Payload-Digest. */
  payloadDigest: string;
  /** The record's gzip member in its file: where it starts and its bytes. */
  offset: number;
  length: number;
  /** The WARC file's name (in a WACZ, relative to archive/). */
  filename: string;
}

/** The CDXJ line of a record, without its line end. */
export function cdxjLine(record: CdxjRecord): string {
  const timestamp = record.date.replace(/[-:TZ]/g, '').slice(0, 14);
  const fields: Record<string, string> = { url: record.url };
  if (record.mime) fields.mime = record.mime;
  fields.status = String(record.status);
  const digest = record.payloadDigest.split(':', 2)[1];
  if (digest) fields.digest = digest;
  fields.length = String(record.length);
  fields.offset = String(record.offset);
  fields.filename = record.filename;
  return `${getSurt(record.url)} ${timestamp} ${JSON.stringify(fields)}`;
}
