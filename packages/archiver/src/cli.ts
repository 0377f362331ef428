#!/usr/bin/env node
// The `oaibag` command: parses arguments (each command in commands/), maps errors to one line
// on stderr and to the documented exit codes. All behaviour lives in the library modules.
import { Command, CommanderError } from 'commander';
import { auditCommand } from './commands/audit-command.js';
import { EXIT_INTERRUPTED, EXIT_PROBLEMS, EXIT_SOURCE, EXIT_USAGE } from './commands/exit-codes.js';
import { exportCommand } from './commands/export-command.js';
import { exportRdfCommand } from './commands/export-rdf-command.js';
import { harvestCommand } from './commands/harvest-command.js';
import { importCommand } from './commands/import-command.js';
import { mirrorCommand } from './commands/mirror-command.js';
import { reindexCommand } from './commands/reindex-command.js';
import { restoreCommand } from './commands/restore-command.js';
import { serveCommand } from './commands/serve-command.js';
import { statusCommand } from './commands/status-command.js';
import { urlsCommand } from './commands/urls-command.js';
import { verifyCommand } from './commands/verify-command.js';
import { ArchiverError } from './core/errors.js';
import { ARCHIVER_VERSION } from './core/version.js';

const program = new Command('oaibag')
  .description('Harvest web sites over OAI-PMH (oai_didl) into an archive of BagIt AIPs catalogued in SQLite.')
  .version(ARCHIVER_VERSION, '-V, --version', 'print the version and exit')
  .showHelpAfterError()
  .exitOverride();

for (const command of [
  harvestCommand(),
  mirrorCommand(),
  restoreCommand(),
  auditCommand(),
  verifyCommand(),
  reindexCommand(),
  urlsCommand(),
  statusCommand(),
  serveCommand(),
  importCommand(),
  exportCommand(),
  exportRdfCommand(),
]) {
  program.addCommand(command.showHelpAfterError().exitOverride());
}

async function main(): Promise<void> {
  try {
    await program.parseAsync(process.argv);
  } catch (error) {
    if (error instanceof CommanderError) {
      process.exitCode = error.exitCode === 0 ? 0 : EXIT_USAGE;
      return;
    }
    if ((error as Error | undefined)?.name === 'AbortError') {
      process.stderr.write('oaibag: stopped\n');
      process.exitCode = EXIT_INTERRUPTED;
      return;
    }
    if (error instanceof ArchiverError) {
      process.stderr.write(`oaibag: ${error.message} [${error.code}]${error.hint ? ` (hint: ${error.hint})` : ''}\n`);
      process.exitCode = error.code === 'ERR_ARCHIVE_USAGE' ? EXIT_USAGE : error.code.startsWith('ERR_HARVEST_') ? EXIT_SOURCE : EXIT_PROBLEMS;
      return;
    }
    const code = (error as NodeJS.ErrnoException | undefined)?.code;
    if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) {
      process.stderr.write(`oaibag: ${(error as Error).message} [${code}]\n`);
      process.exitCode = EXIT_PROBLEMS;
      return;
    }
    throw error;
  }
}

await main();
