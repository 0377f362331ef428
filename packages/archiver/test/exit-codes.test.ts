import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EXIT_ARCHIVE, EXIT_INTERNAL, EXIT_SOURCE, EXIT_USAGE, exitCodeOf } from '../src/commands/exit-codes.ts';
import type { ArchiverErrorCode } from '../src/core/errors.ts';

test('every error code has its exit code in the one table: usage 2, source and delivery 3, archive 4, bug 5', () => {
  const table: Record<ArchiverErrorCode, number> = {
    ERR_ARCHIVE_USAGE: EXIT_USAGE,
    ERR_HARVEST_UNREACHABLE: EXIT_SOURCE,
    ERR_HARVEST_NOT_OAI: EXIT_SOURCE,
    ERR_HARVEST_FORMAT: EXIT_SOURCE,
    ERR_HARVEST_PROTOCOL: EXIT_SOURCE,
    ERR_HARVEST_VERIFY: EXIT_SOURCE,
    ERR_HARVEST_REF_REFUSED: EXIT_SOURCE,
    ERR_HARVEST_REDIRECTS: EXIT_SOURCE,
    ERR_HARVEST_LIMIT: EXIT_SOURCE,
    ERR_IMPORT_UNSAFE: EXIT_SOURCE,
    ERR_IMPORT_DAMAGED: EXIT_SOURCE,
    ERR_IMPORT_CONFLICT: EXIT_SOURCE,
    ERR_IMPORT_KIND: EXIT_SOURCE,
    // A full disk, a lock, a read-only archive, damage: never 1, which a systemd unit may take as success.
    ERR_ARCHIVE_FULL: EXIT_ARCHIVE,
    ERR_ARCHIVE_LOCKED: EXIT_ARCHIVE,
    ERR_ARCHIVE_IO: EXIT_ARCHIVE,
    ERR_ARCHIVE_CATALOG: EXIT_ARCHIVE,
    ERR_ARCHIVE_DAMAGED: EXIT_ARCHIVE,
    ERR_ARCHIVE_BAG: EXIT_ARCHIVE,
    ERR_ARCHIVE_PATH: EXIT_ARCHIVE,
    ERR_ARCHIVE_FORMAT: EXIT_ARCHIVE,
    ERR_ARCHIVE_STORE: EXIT_ARCHIVE,
    ERR_ARCHIVE_LEASE: EXIT_ARCHIVE,
    ERR_ARCHIVE_INTERNAL: EXIT_INTERNAL,
    // Only `serve` meets it, and answers 503 with it; were it ever a command's, the archive is the cause.
    ERR_SPARQL_TOO_LARGE: EXIT_ARCHIVE,
  };
  for (const [code, exit] of Object.entries(table)) assert.equal(exitCodeOf(code), exit, code);
});
