// Where an archive's catalog and bags live, when not in its folder (a PostgreSQL catalog, an
// object store: docs/scale-out.md).
//
// The folder given with --archive stays the archive's working folder (tmp/, the lock, logs)
// and remembers, in `locations.json`, the PostgreSQL catalog it was first used with. Every
// later command on the folder then uses that catalog without being told again, and one told
// another catalog is refused: two catalogs for one archive would split its history silently.
// A password is never written there: it comes with the URL each time (--catalog,
// OAIBAG_CATALOG) or from PostgreSQL's own PGPASSWORD or ~/.pgpass. Within a process, the
// URL as given (password included) is kept for the folder (useCatalogAt), and Catalog.open
// asks catalogLocation.
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ArchiverError } from '../core/errors.js';
import { writeFileDurably } from './durable-file.js';

export const LOCATIONS_FILE = 'locations.json';
/** The SQLite catalog's file name (catalog/catalog.ts's CATALOG_FILE_NAME, which cannot be imported here). */
const SQLITE_CATALOG = 'catalog.sqlite';

/** The catalog URLs given in this process, by resolved folder. */
const given = new Map<string, string>();

/** A PostgreSQL URL without its password (what is written and printed). */
export function withoutPassword(url: string): string {
  const parsed = new URL(url);
  parsed.password = '';
  return parsed.toString();
}

/** Checks a --catalog URL: postgres:// or postgresql://, with a host and a database. */
export function parseCatalogUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ArchiverError('ERR_ARCHIVE_USAGE', `--catalog ${JSON.stringify(url.slice(0, 200))} is not a URL`, {
      hint: 'write --catalog postgres://USER@HOST:PORT/DATABASE',
    });
  }
  if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:') {
    throw new ArchiverError('ERR_ARCHIVE_USAGE', `--catalog ${JSON.stringify(withoutPassword(url))} is not a postgres:// URL`, {
      hint: 'the SQLite catalog in the archive folder needs no --catalog; PostgreSQL is postgres://USER@HOST:PORT/DATABASE',
    });
  }
  if (parsed.hostname === '' || parsed.pathname.length <= 1) {
    throw new ArchiverError('ERR_ARCHIVE_USAGE', `--catalog ${JSON.stringify(withoutPassword(url))} names no host or no database`, {
      hint: 'write --catalog postgres://USER@HOST:PORT/DATABASE',
    });
  }
  return url;
}

/** Where the bags are, when on object storage: what S3Storage.open needs besides credentials (aip/s3-location.ts). */
export interface StoreLocation {
  url: string;
  endpoint?: string | undefined;
  region?: string | undefined;
  /** `--retain`: Object Lock retention of every object committed, in milliseconds. */
  retainMs?: number | undefined;
}

interface LocationsFile {
  catalog?: string;
  store?: StoreLocation;
}

/** The store locations given in this process, by resolved folder. */
const givenStores = new Map<string, StoreLocation>();

function readLocations(archiveDir: string): LocationsFile {
  const file = join(archiveDir, LOCATIONS_FILE);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new ArchiverError('ERR_ARCHIVE_IO', `cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`, { path: file });
  }
  try {
    const parsed = JSON.parse(text) as LocationsFile;
    if (typeof parsed !== 'object' || parsed === null || (parsed.catalog !== undefined && typeof parsed.catalog !== 'string')) throw new Error('shape');
    if (parsed.store !== undefined && (typeof parsed.store !== 'object' || parsed.store === null || typeof parsed.store.url !== 'string'))
      throw new Error('shape');
    return parsed;
  } catch {
    throw new ArchiverError('ERR_ARCHIVE_DAMAGED', `${file} is not the locations file oaibag writes`, {
      path: file,
      hint: `it holds {"catalog": "postgres://…", "store": {"url": "s3://…"}}; fix or remove it`,
    });
  }
}

/** The PostgreSQL catalog of the archive folder, or undefined when its catalog is the folder's SQLite file. */
export function catalogLocation(archiveDir: string): string | undefined {
  return given.get(resolve(archiveDir)) ?? readLocations(archiveDir).catalog;
}

/**
 * Uses the PostgreSQL catalog at `url` for the folder from now on (the CLI's --catalog). The
 * first time, the folder records it (created when missing, unless `record` is false: a command
 * that only reads leaves the folder as it is). A folder that records another catalog, or holds
 * a SQLite catalog, is refused with ERR_ARCHIVE_USAGE.
 */
export async function useCatalogAt(archiveDir: string, url: string, record = true): Promise<void> {
  parseCatalogUrl(url);
  const recorded = readLocations(archiveDir).catalog;
  const bare = withoutPassword(url);
  if (recorded !== undefined && recorded !== bare) {
    throw new ArchiverError('ERR_ARCHIVE_USAGE', `the archive ${archiveDir} keeps its catalog at ${recorded}, not at ${bare}`, {
      path: archiveDir,
      hint: `leave out --catalog, or give ${recorded}; one archive has one catalog`,
    });
  }
  if (recorded === undefined && existsSync(join(archiveDir, SQLITE_CATALOG))) {
    throw new ArchiverError(
      'ERR_ARCHIVE_USAGE',
      `the archive ${archiveDir} has its catalog in ${join(archiveDir, SQLITE_CATALOG)}: --catalog would start a second one`,
      {
        path: archiveDir,
        hint: 'leave out --catalog; to move the archive onto PostgreSQL, see docs/scale-out.md',
      },
    );
  }
  if (recorded === undefined && record) await recordLocations(archiveDir, { ...readLocations(archiveDir), catalog: bare });
  given.set(resolve(archiveDir), url);
}

/** The object store of the archive folder, or undefined when its bags are in the folder. */
export function storeLocation(archiveDir: string): StoreLocation | undefined {
  return givenStores.get(resolve(archiveDir)) ?? readLocations(archiveDir).store;
}

/**
 * Keeps the archive's bags on the object store `location` from now on (the CLI's --store), as
 * useCatalogAt does for the catalog: recorded in the folder the first time (unless `record` is
 * false), refused when the folder records another store or holds bags of its own.
 */
export async function useStoreAt(archiveDir: string, location: StoreLocation, record = true): Promise<void> {
  const recorded = readLocations(archiveDir).store;
  if (recorded !== undefined && recorded.url !== location.url) {
    throw new ArchiverError('ERR_ARCHIVE_USAGE', `the archive ${archiveDir} keeps its bags in ${recorded.url}, not in ${location.url}`, {
      path: archiveDir,
      hint: `leave out --store, or give ${recorded.url}; one archive has one store`,
    });
  }
  if (recorded === undefined && existsSync(join(archiveDir, 'aips'))) {
    throw new ArchiverError(
      'ERR_ARCHIVE_USAGE',
      `the archive ${archiveDir} keeps its bags in ${join(archiveDir, 'aips')}: --store would start a second place`,
      {
        path: archiveDir,
        hint: 'leave out --store; to move the bags onto object storage, see docs/scale-out.md',
      },
    );
  }
  const effective = { ...recorded, ...definedOnly(location) };
  if (recorded === undefined && record) await recordLocations(archiveDir, { ...readLocations(archiveDir), store: effective });
  givenStores.set(resolve(archiveDir), effective);
}

/**
 * Switches the archive folder onto the PostgreSQL catalog at `catalogUrl` (recorded without its
 * password) and the object store `store`, in one durable write of locations.json: the last
 * step of `oaibag migrate`, once both hold everything. From then on every command uses them.
 */
export async function switchArchiveLocations(archiveDir: string, catalogUrl: string, store: StoreLocation): Promise<void> {
  await recordLocations(archiveDir, { catalog: withoutPassword(parseCatalogUrl(catalogUrl)), store: definedOnly(store) });
}

function definedOnly(location: StoreLocation): StoreLocation {
  return Object.fromEntries(Object.entries(location).filter(([, value]) => value !== undefined)) as unknown as StoreLocation;
}

async function recordLocations(archiveDir: string, locations: LocationsFile): Promise<void> {
  mkdirSync(archiveDir, { recursive: true });
  await writeFileDurably(join(archiveDir, LOCATIONS_FILE), `${JSON.stringify(locations, null, 2)}\n`);
}

/**
 * The refusal of what does not work on an archive whose bags are on object storage, with why:
 * one coded line, nothing done, rather than a command that silently looks for bags in the folder.
 */
export function notOnObjectStorage(what: string, archiveDir: string, why: string): ArchiverError {
  return new ArchiverError('ERR_ARCHIVE_USAGE', `${what} does not work on bags on object storage, and the archive ${archiveDir} keeps its bags there: ${why}`, {
    path: archiveDir,
    hint: 'see docs/scale-out.md for what works on a store',
  });
}
