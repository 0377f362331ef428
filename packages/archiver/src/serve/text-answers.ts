// The small whole answers of `oaibag serve` (errors, XML and RDF documents, pages): the body
// and its length in one write, nothing for HEAD.
import type { IncomingMessage, ServerResponse } from 'node:http';

/** `status` with a one-line plain-text explanation. */
export function answerPlain(res: ServerResponse, status: number, text: string, headers: Record<string, string> = {}): void {
  const body = text.endsWith('\n') ? text : `${text}\n`;
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': Buffer.byteLength(body), ...headers });
  res.end(body);
}

/** 200 with `text` as `type` (charset added), the body left out for HEAD. */
export function answerText(req: IncomingMessage, res: ServerResponse, type: string, text: string, headers: Record<string, string> = {}): void {
  const bytes = Buffer.from(text, 'utf8');
  res.writeHead(200, { 'Content-Type': `${type}; charset=utf-8`, 'Content-Length': bytes.length, ...headers });
  res.end(req.method === 'HEAD' ? undefined : bytes);
}

/**
 * A header value from URLs a source named: anything outside printable ASCII percent-encoded
 * (UTF-8), since Node refuses such characters in a header and a harvested URL may hold them.
 */
export function headerSafe(value: string): string {
  return value.replace(/[^\x21-\x7e ]/gu, (char) => encodeURIComponent(char));
}
