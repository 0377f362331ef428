import { Command } from 'commander';
import { exportRdf, exportRdfToFile } from '../serve/export-rdf.js';
import { httpUrl } from './option-parsers.js';

/** `oaibag export-rdf`: the archive's graph as N-Quads (docs/linked-data.md). */
export function exportRdfCommand(): Command {
  return new Command('export-rdf')
    .description("write the archive's Linked Data graph (what serve's /sparql queries) as N-Quads")
    .option('--archive <DIR>', 'the archive folder', './archive')
    .option(
      '--base-url <URL>',
      'the base URL the URIs are minted under, as serve --base-url',
      httpUrl('--base-url', { pathOnly: true }),
      'http://127.0.0.1:8080',
    )
    .option('--out <FILE>', 'write to FILE (under a temporary name, fsynced and renamed when complete) instead of standard output')
    .addHelpText(
      'after',
      '\nFor archives larger than serve keeps in memory (docs/linked-data.md, "Large archives"): load the file into\n' +
        'a server-grade triple store (Oxigraph server, Apache Jena, QLever, Virtuoso). The graph is read\n' +
        'from the catalog piece by piece, so memory stays bounded. Exit codes: 0 written; 2 usage; 4\n' +
        'the archive cannot be read or FILE written (named). All codes: docs/operations.md.',
    )
    .action(async (options: { archive: string; baseUrl: string; out?: string }) => {
      if (options.out === undefined) {
        await exportRdf({ archiveDir: options.archive, baseUrl: options.baseUrl, out: process.stdout });
        return;
      }
      const lines = await exportRdfToFile({ archiveDir: options.archive, baseUrl: options.baseUrl, file: options.out });
      process.stderr.write(`wrote ${lines} triples to ${options.out}\n`);
    });
}
