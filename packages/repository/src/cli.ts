#!/usr/bin/env node
import { DEFAULT_EXCLUDES, DEFAULT_RUN_EXTENSIONS } from '@oaibag/oai-pmh';
import { Command, CommanderError, Option } from 'commander';
import { loadAuthFile } from './access/auth-file.js';
import { hashPassword } from './access/password-hash.js';
import { readPassword } from './access/read-password.js';
import { RepositoryError } from './core/errors.js';
import { REPOSITORY_VERSION } from './core/version.js';
import { loadRights } from './oai/rights-option.js';
import { parseByteSize, parseCount, parsePageBytes, parsePort, parseSeconds } from './option-parsers.js';
import { createRepository } from './repository.js';
import { DEFAULTS } from './repository-options.js';

/** Exit codes (docs/repository.md): 0 stopped cleanly; 1 could not run; 2 usage. */
const EXIT_FAILURE = 1;
const EXIT_USAGE = 2;

const SERVE_NOTES =
  '\nNever exported: hidden files and folders (.*), editor backups, files a web server would run, unreadable\n' +
  'files, special files, and symbolic links that resolve outside --root.\n' +
  'Exit codes: 0 stopped by SIGINT/SIGTERM; 1 could not start (bad root, index, auth file, port); 2 usage.';

const program = new Command('oaibag-repository')
  .description(
    'Serve a folder of web files as an OAI-PMH 2.0 repository with mod_oai semantics (identifier = URL, ' +
      'datestamp = when the change was observed, sets = MIME types; formats oai_dc, http_header, oai_didl), ' +
      'and serve the files themselves at their URLs. The OAI-PMH endpoint is <base-url>/oai.',
  )
  .version(REPOSITORY_VERSION, '-V, --version', 'print the version and exit')
  // A usage error is its line and where the help is (as oaibag's), not the whole help; the
  // commands below inherit this.
  .showHelpAfterError('(see `oaibag-repository --help`)')
  .configureOutput({ outputError: (text, write) => write(text.replace(/\n\(Did you mean /g, ' (Did you mean ')) })
  .exitOverride();

const serveCommand = program
  .command('serve', { isDefault: true })
  .description('index --root and serve it (the default command)')
  .requiredOption('--root <DIR>', 'the folder of web files to export')
  .option('--base-url <URL>', 'public URL of the site root; identifiers are built from it (default: http://HOST:PORT)')
  .option('--host <HOST>', 'address to listen on', '127.0.0.1')
  .option('--port <N>', 'port to listen on (0: any free port)', parsePort, 8080)
  .option('--index <FILE>', 'the SQLite index (default: one per root in $XDG_STATE_HOME/oaibag-repository/); keep it: it remembers deletions')
  .option(
    '--by-value-max <BYTES>',
    'files up to this size are carried By-Value in oai_didl (suffixes K, M, G; 0: By-Reference only)',
    parseByteSize,
    DEFAULTS.byValueMax,
  )
  .option('--page-records <N>', 'records per ListRecords page', parseCount, DEFAULTS.pageRecords)
  .option('--page-identifiers <N>', 'headers per ListIdentifiers page', parseCount, DEFAULTS.pageIdentifiers)
  .option('--page-bytes <BYTES>', 'By-Value bytes a ListRecords page carries at most (a larger record goes out alone)', parsePageBytes, DEFAULTS.pageBytes)
  .option(
    '--list-count-limit <N>',
    "items a list's first page counts at most for completeListSize (past it: estimated or left out)",
    parseCount,
    DEFAULTS.countLimit,
  )
  .option(
    '--exclude <GLOB>',
    `never export paths matching GLOB (repeatable; added to ${DEFAULT_EXCLUDES.join(' ')}; hidden .* paths are never exported)`,
    collect,
    [] as string[],
  )
  .option(
    '--run-extensions <LIST>',
    `comma-separated extensions of files a web server would run, never exported (default: ${DEFAULT_RUN_EXTENSIONS.join(',')})`,
  )
  .option('--auth <FILE>', 'protected path prefixes and their users (see docs/repository.md); clients send HTTP Basic credentials')
  .option('--rights <URI|FILE>', 'rights of the metadata (OAI-rights): a URI naming them, or a file holding them as XML; given in Identify and in every record')
  .option('--name <TEXT>', 'repositoryName given by Identify (default: "Web files at BASE-URL")')
  .option('--admin-email <ADDRESS>', 'adminEmail given by Identify (repeatable)', collect, [] as string[])
  .option('--rescan <SECONDS>', 'full rescan of the tree every SECONDS (0: never; changes are also watched)', parseSeconds, DEFAULTS.rescanSeconds)
  .option('--no-watch', 'do not watch the tree for changes (rely on rescans and on checks made when serving)')
  .addOption(new Option('--quiet', 'do not log one line per request'))
  .addHelpText('after', SERVE_NOTES)
  .action(serve);

// `oaibag-repository --help` shows the default command's options too: that is what most run.
program.addHelpText(
  'after',
  () => `\nThe default command, serve (oaibag-repository [serve] --root DIR ...):\n\n${serveCommand.helpInformation()}${SERVE_NOTES}`,
);

program
  .command('hash-password')
  .description('read a password (from the terminal without echo, or the first line of standard input) and print its scrypt hash for an --auth file')
  .action(async () => {
    const password = await readPassword('Password: ');
    if (password.length === 0) throw new RepositoryError('ERR_REPO_OPTIONS', 'the password is empty');
    process.stdout.write(`${await hashPassword(password)}\n`);
  });

interface ServeOptions {
  root: string;
  baseUrl?: string;
  host: string;
  port: number;
  index?: string;
  byValueMax: number;
  pageRecords: number;
  pageIdentifiers: number;
  pageBytes: number;
  listCountLimit: number;
  exclude: string[];
  runExtensions?: string;
  auth?: string;
  rights?: string;
  name?: string;
  adminEmail: string[];
  rescan: number;
  watch: boolean;
  quiet?: boolean;
}

async function serve(options: ServeOptions): Promise<void> {
  const notice = (line: string) => process.stderr.write(`oaibag-repository: ${line}\n`);
  const progress = process.stderr.isTTY
    ? (p: { files: number; directories: number }) => process.stderr.write(`\rscanning: ${p.files} files in ${p.directories} folders`)
    : undefined;
  const repository = await createRepository({
    root: options.root,
    ...(options.baseUrl !== undefined ? { baseUrl: options.baseUrl } : {}),
    ...(options.index !== undefined ? { index: options.index } : {}),
    byValueMax: options.byValueMax,
    pageRecords: options.pageRecords,
    pageIdentifiers: options.pageIdentifiers,
    pageBytes: options.pageBytes,
    countLimit: options.listCountLimit,
    excludes: options.exclude,
    ...(options.runExtensions !== undefined
      ? {
          runExtensions: options.runExtensions
            .split(',')
            .map((e) => e.trim())
            .filter(Boolean),
        }
      : {}),
    ...(options.auth !== undefined ? { auth: await loadAuthFile(options.auth) } : {}),
    ...(options.rights !== undefined ? { rights: await loadRights(options.rights) } : {}),
    ...(options.name !== undefined ? { repositoryName: options.name } : {}),
    adminEmails: options.adminEmail,
    rescanSeconds: options.rescan,
    watch: options.watch,
    log: (line) => {
      if (line.startsWith('error:') || line.includes('failed')) notice(line);
      else if (!options.quiet) process.stdout.write(`${line}\n`);
    },
    ...(progress ? { onScanProgress: progress } : {}),
  });
  if (progress) process.stderr.write('\n');
  const baseUrl = await repository.listen(options.port, options.host);
  notice(`serving ${options.root} at ${baseUrl}/ (OAI-PMH: ${baseUrl}/oai; index ${repository.indexFile})`);
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  notice('stopping');
  await repository.close();
}

function collect(value: string, all: string[]): string[] {
  return [...all, value];
}

async function main(): Promise<void> {
  try {
    await program.parseAsync(process.argv);
  } catch (error) {
    if (error instanceof CommanderError) {
      process.exitCode = error.exitCode === 0 ? 0 : EXIT_USAGE;
      return;
    }
    if (error instanceof RepositoryError) {
      process.stderr.write(`oaibag-repository: ${error.message} [${error.code}]${error.hint ? ` (hint: ${error.hint})` : ''}\n`);
      process.exitCode = error.code === 'ERR_REPO_OPTIONS' ? EXIT_USAGE : EXIT_FAILURE;
      return;
    }
    const code = (error as NodeJS.ErrnoException | undefined)?.code;
    if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) {
      process.stderr.write(`oaibag-repository: ${(error as Error).message} [${code}]\n`);
      process.exitCode = EXIT_FAILURE;
      return;
    }
    throw error;
  }
}

await main();
