// `--catalog postgres://…` on every command that opens an archive (docs/scale-out.md): the
// archive's catalog in PostgreSQL instead of its folder's SQLite file. Default: the
// OAIBAG_CATALOG environment variable, else the catalog the folder keeps
// (archive/archive-locations.ts). A command that only reads never writes into the folder.
import type { Command } from 'commander';
import { useCatalogAt } from '../archive/archive-locations.js';

/** The commands that only read an archive: they leave its folder as it is. */
const READING = new Set(['status', 'audit', 'restore', 'export', 'export-rdf', 'serve', 'urls']);

export function withCatalogOption(command: Command): Command {
  return command.option(
    '--catalog <URL>',
    'the catalog in PostgreSQL (postgres://USER@HOST:PORT/DATABASE; default: $OAIBAG_CATALOG, else the one the archive folder keeps, else its SQLite file)',
  );
}

/** Uses the catalog `given` (or OAIBAG_CATALOG) for `archiveDir` in this process, recording it in the folder when the command writes. */
export async function applyCatalogOption(command: string, archiveDir: string, given: string | undefined, noRecord = false): Promise<void> {
  const url = given ?? (process.env.OAIBAG_CATALOG || undefined);
  if (url === undefined) return;
  await useCatalogAt(archiveDir, url, !READING.has(command) && !noRecord);
}
