// Reading format-2 batch bags in tests: the bags of an archive, a bag's records.xml and one
// record of it, the payload file of a version.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import type { Catalog } from '../packages/archiver/src/index.ts';

/** Every batch bag of the archive (relative paths, in the order written). */
export function batchBags(archive: string): string[] {
  const aips = join(archive, 'aips');
  let harvests: string[];
  try {
    harvests = readdirSync(aips).sort();
  } catch {
    return [];
  }
  return harvests.flatMap((harvest) =>
    readdirSync(join(aips, harvest))
      .sort()
      .map((batch) => `aips/${harvest}/${batch}`),
  );
}

/** metadata/records.xml of a bag, unzipped. */
export function recordsXml(archive: string, bagPath: string): string {
  return gunzipSync(readFileSync(join(archive, bagPath, 'metadata/records.xml.gz'))).toString('utf8');
}

/** metadata/premis.xml of a bag, unzipped. */
export function premisXml(archive: string, bagPath: string): string {
  return gunzipSync(readFileSync(join(archive, bagPath, 'metadata/premis.xml.gz'))).toString('utf8');
}

const attribute = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** The `<record>` (or `<deleted>`) element of `identifier` in a records.xml (the first one). */
export function recordElement(records: string, identifier: string): string {
  const start = records.search(new RegExp(`<(record|deleted) n="\\d+" identifier="${attribute(identifier).replace(/[.?*+()[\]\\^$|{}]/g, '\\$&')}"`));
  if (start < 0) throw new Error(`no record of ${identifier}`);
  const tag = records.startsWith('<record', start) ? 'record' : 'deleted';
  const end = records.indexOf(`</${tag}>`, start);
  return records.slice(start, end + `</${tag}>`.length);
}

/** The absolute path of a version's first payload file (wherever it is held). */
export function payloadOf(archive: string, catalog: Catalog, versionId: number): string {
  const [first] = catalog.versionParts(versionId);
  if (!first) throw new Error(`version ${versionId} has no payload`);
  return join(archive, first.bagPath, first.path);
}
