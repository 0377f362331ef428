// Synthetic catalogs for the scale benchmark (scale.mjs): a real archive's catalog grown to N
// resources in SQL, for the steps that read the catalog only (serve's lists, restore --dry-run,
// audit, export-rdf, urls) at sizes no site on this machine reaches (10M).
//
// replicateCatalog(archiveDir, targetResources) copies the archive's resources, whole, as often
// as it takes to hold at least targetResources: copy k of a resource has the identifier with a
// first path segment `c<k>/` put in (so each copy restores to its own path) and every row that
// hangs off it copied with it (versions, deletions, parts, fetches, events…: each table that
// refers to resources or versions, found from the schema, so a table added later is copied too).
// Copies share the originals' harvests, bags and payload rows: they are revisits of the same
// bytes, and every bag and payload file they name exists. The payloads table does not grow, so a
// join on digests is no measure of a real archive of that size (scale.mjs does not run one).
//
// makeSyntheticArchive(realArchive, dir) makes the folder such a catalog lives in: a copy of the
// real catalog, and `aips` a symbolic link to the real bags (read only: no step run on a
// synthetic archive writes a bag).
//
//   node bench/scale-synthetic.mjs --archive DIR --resources N
//
// grows DIR's catalog in place (the memory figures of bench/README.md, issue 27; copy it first).
import { copyFileSync, mkdirSync, rmSync, symlinkSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { loadBetterSqlite3 } from './repository-common.mjs';

const CATALOG = 'catalog.sqlite';
/** Tables whose rows are a resource's own, at the root of what is copied. */
const ROOT_TABLE = 'resources';
/** Copies written per transaction (each copy is every original resource once). */
const COPIES_PER_TRANSACTION = 4;

/** The column of a table that refers to `table`'s id: a declared foreign key, else the usual name. */
function referencesOf(db, table) {
  const columns = db.prepare(`PRAGMA table_info(${quote(table)})`).all();
  const keys = db.prepare(`PRAGMA foreign_key_list(${quote(table)})`).all();
  const refs = new Map();
  for (const key of keys) refs.set(key.from, key.table);
  for (const column of columns) {
    if (refs.has(column.name)) continue;
    if (column.name === 'resource_id') refs.set(column.name, 'resources');
    else if (column.name === 'version_id' || column.name === 'current_version_id') refs.set(column.name, 'versions');
  }
  return { columns, refs };
}

const quote = (name) => `"${name.replaceAll('"', '""')}"`;

/** The tables copied with a resource: resources, then each table referring to one already taken. */
function tablesToCopy(db) {
  const all = db
    .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
    .all()
    .map((row) => row.name);
  const described = new Map(all.map((name) => [name, referencesOf(db, name)]));
  const taken = [ROOT_TABLE];
  for (let grew = true; grew; ) {
    grew = false;
    for (const name of all) {
      if (taken.includes(name)) continue;
      const { refs } = described.get(name);
      if ([...refs.values()].some((target) => target !== name && taken.includes(target))) {
        taken.push(name);
        grew = true;
      }
    }
  }
  return taken.map((name) => ({ name, ...described.get(name) }));
}

/** `id` when the table has an INTEGER PRIMARY KEY of that name (its rows get new ids), else undefined. */
function ownId(columns) {
  const keys = columns.filter((column) => column.pk > 0);
  return keys.length === 1 && keys[0].name === 'id' && /^INTEGER$/i.test(keys[0].type) ? 'id' : undefined;
}

/**
 * Grows the catalog of `archiveDir` in place to at least `targetResources` resources (whole
 * copies of its resources; see the top of this file). Returns { resources, copies, seconds,
 * tables, catalogBytes }. The catalog must not be in use.
 */
export function replicateCatalog(archiveDir, targetResources) {
  const { Database } = loadBetterSqlite3();
  const started = performance.now();
  const db = new Database(join(archiveDir, CATALOG));
  try {
    db.pragma('foreign_keys = OFF');
    db.pragma('synchronous = OFF');
    db.pragma('cache_size = -262144');
    db.function('oaibag_copy_identifier', { deterministic: true }, copyIdentifier);
    const tables = tablesToCopy(db);
    // The id range of the originals in each copied table: copy k of row `id` gets id + k * span.
    const span = new Map();
    for (const table of tables) {
      const id = ownId(table.columns);
      if (id) span.set(table.name, db.prepare(`SELECT COALESCE(MAX(id), 0) AS n FROM ${quote(table.name)}`).get().n);
    }
    const originals = db.prepare(`SELECT COUNT(*) AS n FROM ${ROOT_TABLE}`).get().n;
    if (originals === 0) throw new Error(`${archiveDir} has no resources to copy`);
    const copies = Math.max(0, Math.ceil(targetResources / originals) - 1);
    const inserts = tables.map((table) => db.prepare(copyStatement(table, span)));
    // A copy's served_at is its original's. The catalog's trigger sets it when a resource row is
    // inserted, from its current version, which is copied after it (so the trigger found none
    // and left NULL: serve listed none of the copies).
    const resourceSpan = span.get(ROOT_TABLE);
    const servedAt = db.prepare(
      `UPDATE ${ROOT_TABLE} SET served_at = (SELECT o.served_at FROM ${ROOT_TABLE} o WHERE o.id = ${ROOT_TABLE}.id - :k * ${resourceSpan})
        WHERE id > :k * ${resourceSpan} AND id <= (:k + 1) * ${resourceSpan}`,
    );
    const copyRange = db.transaction((from, to) => {
      for (let k = from; k < to; k++) {
        for (const insert of inserts) insert.run({ k });
        servedAt.run({ k });
      }
    });
    for (let k = 1; k <= copies; k += COPIES_PER_TRANSACTION) {
      copyRange(k, Math.min(copies + 1, k + COPIES_PER_TRANSACTION));
      db.pragma('wal_checkpoint(TRUNCATE)');
    }
    const resources = db.prepare(`SELECT COUNT(*) AS n FROM ${ROOT_TABLE}`).get().n;
    db.pragma('wal_checkpoint(TRUNCATE)');
    const catalogBytes = db.prepare('SELECT page_count * page_size AS n FROM pragma_page_count(), pragma_page_size()').get().n;
    return { resources, originals, copies, seconds: (performance.now() - started) / 1000, tables: tables.map((table) => table.name), catalogBytes };
  } finally {
    db.close();
  }
}

/**
 * INSERT … SELECT of one copy (`:k`) of the originals of a table: its own id and every reference
 * to a copied table moved by k spans, the identifier given its copy's segment.
 */
function copyStatement(table, span) {
  const id = ownId(table.columns);
  const names = table.columns.map((column) => column.name);
  const expressions = names.map((name) => {
    if (name === id) return `${quote(name)} + :k * ${span.get(table.name)}`;
    const target = table.refs.get(name);
    if (target !== undefined && span.has(target)) return `${quote(name)} + :k * ${span.get(target)}`;
    if (table.name === ROOT_TABLE && name === 'identifier') return `oaibag_copy_identifier(${quote(name)}, :k)`;
    return quote(name);
  });
  // The originals: rows of the original id range, or (no id of its own) whose first reference is one.
  const [firstRef, firstTarget] = [...table.refs].find(([, target]) => span.has(target)) ?? [];
  const where = id ? `${quote(id)} <= ${span.get(table.name)}` : `${quote(firstRef)} <= ${span.get(firstTarget)}`;
  const copied = [...table.refs].filter(([, target]) => span.has(target)).map(([column]) => `${quote(column)} IS NOT NULL`);
  // A row that names nothing copied (an event of a source alone) is not a resource's: left once.
  const owned = table.name === ROOT_TABLE || copied.length === 0 ? '' : ` AND (${copied.join(' OR ')})`;
  return `INSERT INTO ${quote(table.name)} (${names.map(quote).join(', ')}) SELECT ${expressions.join(', ')} FROM ${quote(table.name)} WHERE ${where}${owned}`;
}

/** `http://host/a/b.html` → `http://host/c<k>/a/b.html`; an identifier that is no URL gets `#c<k>`. */
function copyIdentifier(identifier, k) {
  const scheme = identifier.indexOf('://');
  const slash = scheme === -1 ? -1 : identifier.indexOf('/', scheme + 3);
  if (slash === -1) return `${identifier}#c${k}`;
  return `${identifier.slice(0, slash + 1)}c${k}/${identifier.slice(slash + 1)}`;
}

/**
 * A folder for a synthetic catalog beside `realArchive`'s bags: its catalog copied (the real one
 * checkpointed first, so the copy is whole) and `aips` linked to the real one.
 */
export function makeSyntheticArchive(realArchive, dir) {
  const { Database } = loadBetterSqlite3();
  const db = new Database(join(realArchive, CATALOG));
  try {
    db.pragma('wal_checkpoint(TRUNCATE)');
  } finally {
    db.close();
  }
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  copyFileSync(join(realArchive, CATALOG), join(dir, CATALOG));
  symlinkSync(resolve(realArchive, 'aips'), join(dir, 'aips'));
  return dir;
}

const USAGE = `usage: node bench/scale-synthetic.mjs --archive DIR --resources N

  --archive DIR    the archive whose catalog grows (in place: copy it first, or make a
                   synthetic archive of it with makeSyntheticArchive)
  --resources N    resources wanted at least (whole copies of the original's resources)`;

// As a command: one catalog grown in place (the memory figures of bench/README.md, issue 27).
if (import.meta.url === `file://${process.argv[1]}`) {
  const { parseBenchArgs, wholeNumberArg } = await import('./bench-args.mjs');
  const { args, usageError } = parseBenchArgs('scale-synthetic', USAGE, {
    archive: { type: 'string' },
    resources: { type: 'string' },
  });
  if (args.archive === undefined || args.resources === undefined) usageError('--archive and --resources are required');
  const grown = replicateCatalog(args.archive, wholeNumberArg(args.resources, '--resources', usageError));
  process.stdout.write(`${JSON.stringify(grown)}\n`);
}
