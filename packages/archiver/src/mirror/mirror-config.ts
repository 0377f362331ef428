import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { parseDuration } from '../core/duration.js';
import { ArchiverError } from '../core/errors.js';
import { checkHttpUrl } from '../core/http-url.js';
import { readPasswordLine } from '../core/password-file.js';
import { MAX_CONNECTIONS, parseDelay } from '../oai/host-politeness.js';
import type { Compression } from '../oai/oai-client.js';
import type { MirrorSource } from './mirror.js';

/** A mirror configuration file, as read (docs/mirror.md). */
export interface MirrorConfig {
  /** The archive folder, resolved against the file's folder; absent when the file gives none. */
  archiveDir?: string;
  sources: MirrorSource[];
}

const SOURCE_FIELDS = new Set([
  'baseUrl',
  'every',
  'jitter',
  'set',
  'prefix',
  'concurrency',
  'user',
  'passwordFile',
  'allowPrivateRefs',
  'compression',
  'delay',
  'maxConnections',
]);

/**
 * Reads a JSON mirror configuration: `{ "archive": "DIR", "sources": [{ "baseUrl", "every",
 * "jitter"?, "set"?, "prefix"?, "concurrency"?, "user"?, "passwordFile"?, "allowPrivateRefs"?, "compression"?,
 * "delay"?, "maxConnections"? }] }`. Relative paths
 * are taken from the file's folder; unknown fields are refused (a typo must not silently drop
 * a setting); each problem names the file and the field.
 */
export async function readMirrorConfig(file: string): Promise<MirrorConfig> {
  const text = await readFile(file, 'utf8').catch((error: NodeJS.ErrnoException) => {
    throw new ArchiverError('ERR_ARCHIVE_USAGE', `cannot read the mirror configuration ${file}: ${error.code ?? error.message}`, { path: file });
  });
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    throw new ArchiverError('ERR_ARCHIVE_USAGE', `${file} is not JSON: ${(error as Error).message}`, { path: file });
  }
  const fail = (where: string, message: string): never => {
    throw new ArchiverError('ERR_ARCHIVE_USAGE', `${file}: ${where}: ${message}`, { path: file, hint: 'see docs/mirror.md for the configuration format' });
  };
  if (!isObject(data)) return fail('the top level', 'expected an object with "sources"');
  for (const key of Object.keys(data)) if (key !== 'archive' && key !== 'sources') fail(key, 'unknown field');
  const folder = dirname(resolve(file));
  if (data.archive !== undefined && typeof data.archive !== 'string') fail('archive', 'expected a folder name');
  if (!Array.isArray(data.sources) || data.sources.length === 0) return fail('sources', 'expected a non-empty list of sources');
  const seen = new Set<string>();
  const sources = await Promise.all(
    data.sources.map(async (entry: unknown, index: number): Promise<MirrorSource> => {
      const where = `sources[${index}]`;
      const source = await parseMirrorSource(entry, { where: `${file}: ${where}`, folder });
      if (seen.has(source.baseUrl)) fail(`${where}.baseUrl`, `${source.baseUrl} is listed twice`);
      seen.add(source.baseUrl);
      return source;
    }),
  );
  return { ...(typeof data.archive === 'string' ? { archiveDir: resolve(folder, data.archive) } : {}), sources };
}

/** Where a source entry comes from, for messages, and the folder its relative paths start in. */
export interface SourceEntryOrigin {
  where: string;
  folder: string;
}

/**
 * One source entry of a mirror configuration (`{ "baseUrl", "every", … }`, see
 * readMirrorConfig), also what `oaibag sources add` keeps in the catalog for the workers. Its
 * password file is read now. Each problem names `origin.where` and the field.
 */
export async function parseMirrorSource(entry: unknown, origin: SourceEntryOrigin): Promise<MirrorSource> {
  const { where, folder } = origin;
  const fail = (field: string, message: string): never => {
    throw new ArchiverError('ERR_ARCHIVE_USAGE', `${where}${field ? `.${field}` : ''}: ${message}`, { hint: 'see docs/mirror.md for the source fields' });
  };
  if (!isObject(entry)) return fail('', 'expected an object');
  for (const key of Object.keys(entry)) if (!SOURCE_FIELDS.has(key)) fail(`${where}.${key}`, 'unknown field');
  const text = (key: string, required = false): string | undefined => {
    const value = entry[key];
    if (value === undefined && !required) return undefined;
    if (typeof value !== 'string' || value === '') return fail(`${where}.${key}`, 'expected a non-empty string');
    return value;
  };
  const baseUrl = text('baseUrl', true)!;
  checkHttpUrl(baseUrl, `${where}.baseUrl`);
  const everyMs = parseDuration(text('every', true)!, `${where}.every`);
  const jitter = text('jitter');
  const concurrency = entry.concurrency;
  if (concurrency !== undefined && (!Number.isSafeInteger(concurrency) || (concurrency as number) < 1))
    fail('concurrency', 'expected a whole number of at least 1');
  const user = text('user');
  const passwordFile = text('passwordFile');
  if ((user === undefined) !== (passwordFile === undefined)) fail('', '"user" and "passwordFile" go together');
  const allowPrivateRefs = entry.allowPrivateRefs;
  if (allowPrivateRefs !== undefined && typeof allowPrivateRefs !== 'boolean') fail('allowPrivateRefs', 'expected true or false');
  const compression = text('compression');
  if (compression !== undefined && !['auto', 'always', 'never'].includes(compression)) fail('compression', 'expected "auto", "always" or "never"');
  const delay = text('delay');
  const delayMs = delay === undefined ? undefined : parseDelay(delay, `${where}.delay`);
  const maxConnections = entry.maxConnections;
  if (maxConnections !== undefined && (!Number.isSafeInteger(maxConnections) || (maxConnections as number) < 1 || (maxConnections as number) > MAX_CONNECTIONS))
    fail('maxConnections', `expected a whole number from 1 to ${MAX_CONNECTIONS}`);
  const set = text('set');
  const prefix = text('prefix');
  return {
    baseUrl,
    schedule: { everyMs, jitterMs: jitter === undefined ? 0 : parseDuration(jitter, `${where}.jitter`) },
    ...(set !== undefined ? { set } : {}),
    ...(prefix !== undefined ? { prefix } : {}),
    ...(concurrency !== undefined ? { concurrency: concurrency as number } : {}),
    ...(allowPrivateRefs === true ? { allowPrivateRefs: true } : {}),
    ...(compression !== undefined && compression !== 'auto' ? { compression: compression as Compression } : {}),
    ...(delayMs !== undefined || maxConnections !== undefined
      ? {
          politeness: {
            ...(delayMs !== undefined ? { delayMs } : {}),
            ...(maxConnections !== undefined ? { maxConnections: maxConnections as number } : {}),
          },
        }
      : {}),
    ...(user !== undefined ? { credentials: { user, password: await readPasswordLine(resolve(folder, passwordFile!)) } } : {}),
  };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
