import mime from 'mime';

/** What a file is served as when its name says nothing (no extension, or one nobody registered). */
export const DEFAULT_MIME_TYPE = 'application/octet-stream';

/**
 * The MIME type oaibag-repository's static server sends for a file, and so its set: from the last segment's
 * final extension through the `mime` package's standard and vendor tables, lower case, no
 * parameters. A name without an extension (`README`, `Makefile`, a leading dot only) gets
 * application/octet-stream. We pass the extension itself rather than the name because
 * mime.getType also reads a bare name as an extension, which would make a file called `pdf`
 * a PDF.
 */
export function mimeTypeForPath(relPath: string): string {
  const name = relPath.slice(relPath.lastIndexOf('/') + 1);
  const dot = name.lastIndexOf('.');
  if (dot <= 0 || dot === name.length - 1) return DEFAULT_MIME_TYPE;
  const type = mime.getType(name.slice(dot + 1));
  if (type === null) return DEFAULT_MIME_TYPE;
  return (type.split(';')[0] ?? type).trim().toLowerCase();
}
