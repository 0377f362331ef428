// A WACZ 1.1.1 file (Webrecorder's Web Archive Collection Zipped) of one `oaibag export --warc
// --wacz`: a ZIP, written with yazl, holding the export's WARC files under archive/, its CDXJ
// index as indexes/index.cdxj, pages/pages.jsonl, datapackage.json (each file's path, size and
// SHA-256) and datapackage-digest.json (the SHA-256 of datapackage.json). Every entry is stored
// (method 0): the WARC files are gzip already and must stay readable by range, and the rest, not
// deflated, gives the same bytes whatever the zlib. Entries in code-unit order of their names,
// every time the export's instant, mode 0644, no folder entries; ZIP64 past 4 GB (yazl).

import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { exactTimeZipFile, lazyEntry, type WrittenZip, writeZipFile, zipTime } from '../archive/zip-file.js';
import type { ExportFile } from './warc-files.js';

export const WACZ_VERSION = '1.1.1';
/** The first line of pages.jsonl (json-pages-1.0). */
export const PAGES_HEADER = `${JSON.stringify({ format: 'json-pages-1.0', id: 'pages', title: 'All Pages' })}\n`;

export interface WaczParts {
  /** The WARC files, complete, in order. */
  warcFiles: readonly ExportFile[];
  /** The CDXJ index and pages.jsonl, complete. */
  index: ExportFile;
  pages: ExportFile;
  /** The WACZ's title (the export's name). */
  title: string;
  /** `created`, and the time of every entry: the export's instant (never the clock). */
  instant: string;
  /** `software`. */
  software: string;
}

/** Writes the WACZ to `target`, durably and whole (archive/zip-file.ts). */
export async function writeWacz(target: string, parts: WaczParts): Promise<WrittenZip> {
  const files: Array<{ path: string; file: ExportFile }> = [
    ...parts.warcFiles.map((file) => ({ path: `archive/${file.name}`, file })),
    { path: 'indexes/index.cdxj', file: parts.index },
    { path: 'pages/pages.jsonl', file: parts.pages },
  ];
  const datapackage = Buffer.from(
    `${JSON.stringify(
      {
        profile: 'data-package',
        wacz_version: WACZ_VERSION,
        title: parts.title,
        created: parts.instant,
        software: parts.software,
        resources: files.map(({ path, file }) => ({ name: path.slice(path.lastIndexOf('/') + 1), path, hash: `sha256:${file.sha256}`, bytes: file.bytes })),
      },
      null,
      2,
    )}\n`,
    'utf8',
  );
  const digest = Buffer.from(
    `${JSON.stringify({ path: 'datapackage.json', hash: `sha256:${createHash('sha256').update(datapackage).digest('hex')}` }, null, 2)}\n`,
    'utf8',
  );
  const entries: Array<{ path: string; file?: ExportFile; buffer?: Buffer }> = [
    ...files,
    { path: 'datapackage.json', buffer: datapackage },
    { path: 'datapackage-digest.json', buffer: digest },
  ].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const mtime = zipTime(Date.parse(parts.instant) / 1000);
  const zip = exactTimeZipFile();
  for (const entry of entries) {
    const options = { mtime, mode: 0o100644, compress: false };
    if (entry.buffer !== undefined) zip.addBuffer(entry.buffer, entry.path, options);
    else {
      const file = entry.file!;
      zip.addReadStreamLazy(
        entry.path,
        { ...options, size: file.bytes },
        lazyEntry(zip, () => createReadStream(file.temporary)),
      );
    }
  }
  zip.end();
  return writeZipFile(zip, target);
}
