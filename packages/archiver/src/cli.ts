#!/usr/bin/env node
// The `oaibag` command: parses arguments (each command in commands/), maps errors to one line
// on stderr and to the documented exit codes. All behaviour lives in the library modules.
import { Command, CommanderError } from 'commander';
import { auditCommand } from './commands/audit-command.js';
import { applyCatalogOption, withCatalogOption } from './commands/catalog-option.js';
import { EXIT_ARCHIVE, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_USAGE, exitCodeOf } from './commands/exit-codes.js';
import { exportCommand } from './commands/export-command.js';
import { exportRdfCommand } from './commands/export-rdf-command.js';
import { harvestCommand } from './commands/harvest-command.js';
import { importCommand } from './commands/import-command.js';
import { migrateCommand } from './commands/migrate-command.js';
import { mirrorCommand } from './commands/mirror-command.js';
import { reindexCommand } from './commands/reindex-command.js';
import { repairCommand } from './commands/repair-command.js';
import { restoreCommand } from './commands/restore-command.js';
import { serveCommand } from './commands/serve-command.js';
import { sourcesCommand } from './commands/sources-command.js';
import { statusCommand } from './commands/status-command.js';
import { applyStoreOptions, type StoreOptions, withStoreOptions } from './commands/store-option.js';
import { urlsCommand } from './commands/urls-command.js';
import { verifyCommand } from './commands/verify-command.js';
import { workerCommand } from './commands/worker-command.js';
import { ArchiverError } from './core/errors.js';
import { ARCHIVER_VERSION } from './core/version.js';

const program = new Command('oaibag')
  .description('Harvest web sites over OAI-PMH (oai_didl) into an archive of BagIt AIPs catalogued in SQLite.')
  .version(ARCHIVER_VERSION, '-V, --version', 'print the version and exit')
  .exitOverride();
usageErrorsInTwoLines(program, 'oaibag');

for (const command of [
  harvestCommand(),
  mirrorCommand(),
  restoreCommand(),
  auditCommand(),
  verifyCommand(),
  repairCommand(),
  reindexCommand(),
  urlsCommand(),
  statusCommand(),
  serveCommand(),
  importCommand(),
  exportCommand(),
  exportRdfCommand(),
  workerCommand(),
]) {
  if (command.options.some((option) => option.long === '--archive')) withStoreOptions(withCatalogOption(command));
  program.addCommand(usageErrorsInTwoLines(command.exitOverride(), `oaibag ${command.name()}`));
}
// migrate names its new places itself (--to-catalog, --to-store): no --catalog, --store.
program.addCommand(usageErrorsInTwoLines(migrateCommand().exitOverride(), 'oaibag migrate'));

// sources add|list|remove open only the catalog: their own --archive and --catalog.
program.addCommand(usageErrorsInTwoLines(sourcesCommand().exitOverride(), 'oaibag sources'));

// --catalog and --store (or OAIBAG_CATALOG, OAIBAG_STORE) take effect before the command opens
// its archive; mirror, whose archive may come from its --config, applies them itself.
program.hook('preAction', async (_program, action) => {
  const options = action.opts() as { archive?: string; catalog?: string; record?: boolean } & StoreOptions;
  if (
    action.name() === 'mirror' ||
    action.name() === 'migrate' ||
    action.parent?.name() === 'sources' ||
    !action.options.some((option) => option.long === '--archive')
  )
    return;
  await applyCatalogOption(action.name(), options.archive ?? './archive', options.catalog, options.record === false);
  await applyStoreOptions(action.name(), options.archive ?? './archive', options);
});

/**
 * A usage error is its line (with commander's "did you mean" on it) and where the help is, not
 * the whole --help: in a scheduler's log the error would be lost in sixty lines of options.
 */
function usageErrorsInTwoLines(command: Command, name: string): Command {
  return command
    .showHelpAfterError(`(see \`${name} --help\`)`)
    .configureOutput({ outputError: (text, write) => write(text.replace(/\n\(Did you mean /g, ' (Did you mean ')) });
}

async function main(): Promise<void> {
  try {
    await program.parseAsync(process.argv);
  } catch (error) {
    if (error instanceof CommanderError) {
      // A monitoring plugin's usage error is UNKNOWN (3), not CRITICAL (2): `status --check`.
      const plugin = process.argv[2] === 'status' && process.argv.includes('--check');
      process.exitCode = error.exitCode === 0 ? 0 : plugin ? 3 : EXIT_USAGE;
      return;
    }
    if ((error as Error | undefined)?.name === 'AbortError') {
      process.stderr.write('oaibag: stopped\n');
      process.exitCode = EXIT_INTERRUPTED;
      return;
    }
    if (error instanceof ArchiverError) {
      process.stderr.write(`oaibag: ${error.message} [${error.code}]${error.hint ? ` (hint: ${error.hint})` : ''}\n`);
      process.exitCode = exitCodeOf(error.code);
      return;
    }
    const code = (error as NodeJS.ErrnoException | undefined)?.code;
    if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) {
      process.stderr.write(`oaibag: ${(error as Error).message} [${code}]\n`);
      process.exitCode = EXIT_ARCHIVE;
      return;
    }
    reportInternalError(error);
  }
}

/**
 * An error oaibag did not expect (a bug): one line naming it, exit 5; the stack only when
 * OAIBAG_DEBUG is set, so a scheduler's log keeps one line per failure.
 */
function reportInternalError(error: unknown): void {
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(
    `oaibag: internal error: ${message.replace(/[\r\n]+/g, ' ')} [ERR_ARCHIVE_INTERNAL] (hint: please report it; OAIBAG_DEBUG=1 prints the stack)\n`,
  );
  if (process.env.OAIBAG_DEBUG && error instanceof Error && error.stack) process.stderr.write(`${error.stack}\n`);
  process.exitCode = EXIT_INTERNAL;
}

// A failure outside the command's promise (an emitter without an error listener) is a bug too.
process.on('uncaughtException', (error) => {
  reportInternalError(error);
  process.exit(EXIT_INTERNAL);
});

await main();
