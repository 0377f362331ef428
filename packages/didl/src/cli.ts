#!/usr/bin/env node
import { createReadStream } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { DidlError } from './errors.js';
import { extractDatastreams } from './extract-datastreams.js';
import { statInputFile } from './input-file.js';
import { formatInspection, inspectDidl } from './inspect-didl.js';
import { parseHeaderArgument, wrapFile } from './wrap-file.js';

/** Exit codes (docs/didl-profile.md): 0 done, 1 bad input or data, 2 usage. */
const EXIT_BAD_INPUT = 1;
const EXIT_USAGE = 2;

const program = new Command('didl')
  .description('Wrap, inspect and extract MPEG-21 DIDL documents in the mod_oai (oai_didl) profile.')
  .showHelpAfterError()
  .exitOverride()
  .addHelpText(
    'after',
    '\nExit codes: 0 done; 1 bad input (malformed XML, wrong size or digest, ...); 2 usage.\nFILE may be - for standard input (inspect, extract).',
  );

program
  .command('wrap')
  .description('write a DIDL document for FILE to standard output')
  .argument('<FILE>', 'the file to wrap')
  .requiredOption('--id <URL>', 'the resource URL (http or https), written as dii:Identifier')
  .option('--mime <TYPE>', 'MIME type (default: guessed from the file name, else application/octet-stream)')
  .option('--ref <URL>', 'By-Reference URL (default: the --id URL)')
  .option('--by-value', 'also carry the bytes By-Value, base64-encoded')
  .option('--header <NAME: VALUE>', 'add an HTTP header (repeatable)', (value: string, all: string[]) => [...all, value], [] as string[])
  .action(async (file: string, options: { id: string; mime?: string; ref?: string; byValue?: boolean; header: string[] }) => {
    const output = wrapFile(file, {
      identifier: options.id,
      ...(options.mime !== undefined ? { mimeType: options.mime } : {}),
      ...(options.ref !== undefined ? { ref: options.ref } : {}),
      byValue: options.byValue === true,
      headers: options.header.map(parseHeaderArgument),
    });
    for await (const part of output) {
      if (!process.stdout.write(part)) await new Promise((resolve) => process.stdout.once('drain', resolve));
    }
  });

program
  .command('inspect')
  .description('print the identifier, headers, components, sizes and digests of each record')
  .argument('<FILE>', 'a DIDL document or an OAI-PMH response page')
  .option('--json', 'print JSON instead of text')
  .option('--lenient', 'read identifiers as oaibag harvest does: several dii:Identifiers, or none (DIDLDocumentId, then the OAI header)')
  .action(async (file: string, options: { json?: boolean; lenient?: boolean }) => {
    const inspection = await inspectDidl(await openInput(file), { lenientIdentifier: options.lenient === true });
    process.stdout.write(options.json ? `${JSON.stringify(inspection, null, 2)}\n` : formatInspection(inspection));
    const bad = inspection.records.filter((record) => record.error);
    if (bad.length > 0) {
      process.stderr.write(`didl: ${bad.length} of ${inspection.records.length} record(s) are bad\n`);
      process.exitCode = EXIT_BAD_INPUT;
    }
  });

program
  .command('extract')
  .description('write the By-Value datastreams into a folder; print each path and sha-256')
  .argument('<FILE>', 'a DIDL document or an OAI-PMH response page')
  .requiredOption('--out <DIR>', 'folder to write into (created when missing)')
  .option('--force', 'replace files that already exist')
  .action(async (file: string, options: { out: string; force?: boolean }) => {
    const extracted = await extractDatastreams(await openInput(file), options.out, { force: options.force === true });
    for (const item of extracted) process.stdout.write(`${item.path}  sha256 ${item.sha256}  ${item.size} bytes\n`);
    if (extracted.length === 0) process.stderr.write('didl: no By-Value datastream in this input\n');
  });

async function openInput(file: string): Promise<AsyncIterable<Uint8Array>> {
  if (file === '-') return process.stdin;
  await statInputFile(file);
  return createReadStream(file, { highWaterMark: 1 << 20 });
}

async function main(): Promise<void> {
  // `didl inspect big.xml | head`: a closed pipe ends the command quietly, as for other tools.
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(0);
    throw error;
  });
  try {
    await program.parseAsync(process.argv);
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and version exit 0; every other commander error is a usage error.
      process.exitCode = error.exitCode === 0 ? 0 : EXIT_USAGE;
      return;
    }
    if (error instanceof DidlError) {
      process.stderr.write(`didl: ${error.message} [${error.code}]${error.hint ? ` (hint: ${error.hint})` : ''}\n`);
      process.exitCode = EXIT_BAD_INPUT;
      return;
    }
    const code = (error as NodeJS.ErrnoException | undefined)?.code;
    if (code === 'EPIPE') return;
    if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) {
      // I/O failures (disk full, permission denied): one line, not a stack trace.
      process.stderr.write(`didl: ${(error as Error).message} [${code}]\n`);
      process.exitCode = EXIT_BAD_INPUT;
      return;
    }
    throw error;
  }
}

await main();
