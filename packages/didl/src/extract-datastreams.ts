import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { access, mkdir, open, rename, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { IncomingDatastream } from './datastream.js';
import { DidlError } from './errors.js';
import type { DidlItem } from './model.js';
import { readDidl } from './read-didl.js';

export interface ExtractOptions {
  /** Replace files that already exist in the output folder (default: refuse). */
  force?: boolean;
}

/** One datastream written by extractDatastreams. */
export interface ExtractedDatastream {
  path: string;
  identifier: string;
  size: number;
  sha256: string;
}

interface PendingFile {
  temporary: string;
  final: string;
  resourceKey: string;
}

/**
 * Writes every By-Value datastream of a DIDL document (or OAI-PMH page) into `outDir`.
 * Each one goes to a temporary name, is fsynced, and is renamed into place only after its
 * record was read whole and checked (size and digest), so a bad record leaves nothing behind.
 */
export async function extractDatastreams(input: AsyncIterable<Uint8Array>, outDir: string, options: ExtractOptions = {}): Promise<ExtractedDatastream[]> {
  await mkdir(outDir, { recursive: true });
  const used = new Set<string>();
  const pending: PendingFile[] = [];
  const extracted: ExtractedDatastream[] = [];
  try {
    await readDidl(input, {
      onDatastream: async (datastream) => {
        const name = uniqueName(datastreamFileName(datastream), used);
        const final = join(outDir, name);
        if (!options.force && (await exists(final))) {
          throw new DidlError('ERR_DIDL_OUTPUT_EXISTS', `${final} already exists`, { hint: 'choose another --out folder, or pass --force' });
        }
        const temporary = join(outDir, `.${name}.partial-${randomBytes(4).toString('hex')}`);
        pending.push({ temporary, final, resourceKey: resourceKey(datastream) });
        await writeSynced(temporary, datastream.bytes);
      },
      onRecord: async (record) => {
        const files = pending.splice(0);
        const measuredByKey = new Map<string, { size: number; sha256: string }>();
        collectByValue(record.didl?.item, [], measuredByKey);
        for (const file of files) {
          await rename(file.temporary, file.final);
          const measured = measuredByKey.get(file.resourceKey);
          extracted.push({ path: file.final, identifier: record.didl?.identifier ?? '', size: measured?.size ?? 0, sha256: measured?.sha256 ?? '' });
        }
        if (files.length > 0) await syncDirectory(outDir);
      },
    });
  } catch (error) {
    await Promise.all(pending.map((file) => unlink(file.temporary).catch(() => undefined)));
    throw error;
  }
  return extracted;
}

/** A file name for the datastream: the last segment of its URL path, made safe. */
export function datastreamFileName(datastream: Pick<IncomingDatastream, 'identifier' | 'header'>): string {
  const url = datastream.identifier ?? datastream.header?.identifier ?? '';
  let segment = '';
  try {
    const path = new URL(url).pathname;
    segment = decodeURIComponent(path.slice(path.lastIndexOf('/') + 1));
  } catch {
    segment = '';
  }
  // No separators, no control characters, no dot-only names: the name stays inside outDir.
  segment = segment.replace(/[\u0000-\u001f\u007f/\\]/g, '_').replace(/^\.+/, '_');
  return segment.length > 0 && segment.length <= 200 ? segment : 'index';
}

function uniqueName(name: string, used: Set<string>): string {
  let candidate = name;
  const dot = name.lastIndexOf('.');
  const stem = dot > 0 ? name.slice(0, dot) : name;
  const extension = dot > 0 ? name.slice(dot) : '';
  for (let n = 2; used.has(candidate); n++) candidate = `${stem}-${n}${extension}`;
  used.add(candidate);
  return candidate;
}

function resourceKey(datastream: IncomingDatastream): string {
  return [...datastream.itemPath, datastream.componentIndex, datastream.resourceIndex].join('.');
}

/** By-Value measurements keyed like resourceKey: item path, component index, resource index. */
function collectByValue(item: DidlItem | undefined, path: number[], into: Map<string, { size: number; sha256: string }>): void {
  if (!item) return;
  item.components.forEach((component, c) =>
    component.resources.forEach((resource, r) => {
      if (resource.byValue) into.set([...path, c, r].join('.'), resource.byValue);
    }),
  );
  item.items.forEach((nested, index) => collectByValue(nested, [...path, index], into));
}

async function writeSynced(path: string, bytes: AsyncIterable<Uint8Array>): Promise<void> {
  const handle = await open(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o644);
  try {
    for await (const chunk of bytes) {
      // FileHandle.write may take fewer bytes than asked (a nearly full disk) without an error.
      for (let offset = 0; offset < chunk.byteLength; ) {
        const { bytesWritten } = await handle.write(chunk, offset, chunk.byteLength - offset);
        if (bytesWritten <= 0) throw Object.assign(new Error(`${path}: the file system took no byte`), { code: 'EIO' });
        offset += bytesWritten;
      }
    }
    await handle.sync();
  } finally {
    await handle.close();
  }
}

async function syncDirectory(path: string): Promise<void> {
  const handle = await open(path, constants.O_RDONLY);
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}
