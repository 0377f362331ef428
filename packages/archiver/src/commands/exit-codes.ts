/**
 * Exit codes of every `oaibag` command: one table, so that a scheduler (systemd, cron, a CI
 * job) can act on them. docs/operations.md explains each; `status --check` alone follows the
 * monitoring-plugin convention instead (0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN).
 */
/** Everything asked was done. */
export const EXIT_OK = 0;
/**
 * Done, but some items were not: records that failed (the next harvest retries them), files a
 * restore or export could not write. Each is named; nothing about the archive itself is wrong.
 */
export const EXIT_PARTIAL = 1;
/** Bad command-line arguments or options (also a URL without http(s)://). */
export const EXIT_USAGE = 2;
/**
 * The source cannot be used: unreachable, not an OAI-PMH repository, the format not offered,
 * its list failed, or an out-of-band delivery refused. The archive is as it was.
 */
export const EXIT_SOURCE = 3;
/**
 * The archive has a problem: full, locked by another process, read-only where it must be
 * written, damaged (verify found damage), its catalog or files cannot be read or written.
 */
export const EXIT_ARCHIVE = 4;
/** An error oaibag did not expect: a bug, to be reported with the line printed. */
export const EXIT_INTERNAL = 5;
/** Stopped by SIGINT or SIGTERM before the end (128 + SIGINT, the shell's convention). */
export const EXIT_INTERRUPTED = 130;

/** The exit code of an error code of core/errors.ts. */
export function exitCodeOf(code: string): number {
  if (code === 'ERR_ARCHIVE_USAGE') return EXIT_USAGE;
  if (code === 'ERR_ARCHIVE_INTERNAL') return EXIT_INTERNAL;
  if (code.startsWith('ERR_HARVEST_') || code.startsWith('ERR_IMPORT_')) return EXIT_SOURCE;
  return EXIT_ARCHIVE;
}
