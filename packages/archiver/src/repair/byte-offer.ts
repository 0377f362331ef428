// What `oaibag repair` tries, for one payload file: offers of bytes said to have its sha-256,
// from a replica, a ZIP of `oaibag export --bags` or the source. An offer is only a candidate:
// place-payload.ts checks its size and every digest before anything takes the payload's name.
import type { Readable } from 'node:stream';

/** Bytes said to be a payload file's, and where they come from. */
export interface ByteOffer {
  /** Where the bytes come from, for the report and the recovery event (`replica /r: aips/…/data/a.txt`). */
  origin: string;
  /** The bytes, or why the offer cannot even be read (a link, another size, a refused URL). */
  open(): Promise<{ bytes: Readable } | { why: string }>;
}

/** An error as one line of a reason. */
export function reasonOf(error: unknown): string {
  const code = (error as { code?: unknown }).code;
  const message = (error instanceof Error ? error.message : String(error)).replace(/[\r\n]+/g, ' ').slice(0, 300);
  return typeof code === 'string' && !message.includes(code) ? `${message} [${code}]` : message;
}
