/**
 * A small extension table for `didl wrap` when no --mime is given. Deliberately short: the
 * repository package owns the full mapping a web server needs.
 */
const TYPES: Record<string, string> = {
  html: 'text/html',
  htm: 'text/html',
  txt: 'text/plain',
  css: 'text/css',
  csv: 'text/csv',
  js: 'text/javascript',
  json: 'application/json',
  xml: 'application/xml',
  pdf: 'application/pdf',
  gif: 'image/gif',
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  svg: 'image/svg+xml',
  zip: 'application/zip',
  gz: 'application/gzip',
};

export function guessMimeType(fileName: string): string {
  const dot = fileName.lastIndexOf('.');
  const extension = dot === -1 ? '' : fileName.slice(dot + 1).toLowerCase();
  return TYPES[extension] ?? 'application/octet-stream';
}
