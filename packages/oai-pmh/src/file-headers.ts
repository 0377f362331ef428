import type { HeaderField } from './send-file.js';

/** What the headers of a file's version are made of. */
export interface FileFacts {
  mimeType: string;
  size: number;
  /** Modification time in nanoseconds since the epoch. */
  mtimeNs: bigint;
  sha256: string;
}

/**
 * The headers a GET of the file returns, in order. One function for both the static file
 * server and the records (`http_header`, the DIDL's http_header Descriptor), so that what a
 * record promises is what a By-Reference fetch gets. Date and the connection headers
 * describe one response rather than the resource: responses add them, records leave them out.
 */
export function fileHeaders(file: FileFacts): HeaderField[] {
  return [
    { name: 'Content-Type', value: file.mimeType },
    { name: 'Content-Length', value: String(file.size) },
    { name: 'Last-Modified', value: httpDate(lastModifiedSeconds(file.mtimeNs)) },
    { name: 'ETag', value: entityTag(file.sha256) },
    { name: 'Accept-Ranges', value: 'bytes' },
  ];
}

/**
 * A strong entity tag from the content digest: it changes exactly when the bytes change,
 * so a touched file keeps its ETag (only Last-Modified moves), and two copies share one.
 */
export function entityTag(sha256: string): string {
  return `"sha256-${sha256.slice(0, 32)}"`;
}

/** Last-Modified has whole seconds; the file's mtime in nanoseconds is truncated. */
export function lastModifiedSeconds(mtimeNs: bigint): number {
  return Number(mtimeNs / 1_000_000_000n);
}

/** RFC 9110 IMF-fixdate. */
export function httpDate(seconds: number): string {
  return new Date(seconds * 1000).toUTCString();
}
