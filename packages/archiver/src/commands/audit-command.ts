import { Command, Option } from 'commander';
import { AUDIT_FORMATS, type AuditFormat, formatAudit, writeAuditOutput } from '../audit/audit-format.js';
import { auditServeUrl } from '../audit/audit-links.js';
import { openAudit } from '../audit/audit-query.js';
import { Catalog } from '../catalog/catalog.js';
import { wholeNumber } from './option-parsers.js';

/** audit's page cache (see Catalog.setCacheKiB): 210 → 136 MB over 1M resources. */
const AUDIT_CACHE_KIB = 2048;

/** `oaibag audit`: the resources that changed in a period of harvests, and how (docs/audit.md). */
export function auditCommand(): Command {
  return new Command('audit')
    .description('report the resources that changed (added, modified, touched, deleted, restored, MIME type) as the archive recorded them')
    .option('--archive <DIR>', 'the archive folder', './archive')
    .option('--source <BASEURL>', 'only this source (default: every source in the archive)')
    .option('--since <DATE>', 'changes recorded by harvests started at or after DATE (YYYY-MM-DD or ISO 8601 date-time, UTC unless it says)')
    .option('--until <DATE>', 'changes recorded by harvests started at or before DATE (a day includes all of it)')
    .option('--harvest <ID>', 'the changes recorded by this harvest (its number)', wholeNumber)
    .addOption(new Option('--format <FORMAT>', 'output form').choices(AUDIT_FORMATS).default('text'))
    .option('--out <FILE>', 'write to FILE (atomically: a temporary file renamed into place) instead of stdout')
    .option(
      '--serve-url <URL>',
      'where `oaibag serve` serves this archive (http(s), no query): HTML links identifiers to their history and modified rows to their diff; JSON and CSV get a diff field',
      (value: string) => auditServeUrl(value, '--serve-url'),
    )
    .addHelpText(
      'after',
      '\nWithout --since, --until or --harvest: the latest harvest of each source that recorded a change.\n' +
        'Rows: one per resource with a version or deletion recorded in the period; CSV has one header line,\n' +
        'JSON is one object { period, sources, rows, totals }, HTML is one self-contained page.\n' +
        "With --serve-url: links to `oaibag serve`'s /history/<URL> and /diff?url=…&from=…&to=… (text is unchanged).\n" +
        '\nExit codes: 0 done (changes or none); 2 usage (bad option, unknown source or harvest);\n' +
        '4 the catalog or --out cannot be read or written. All codes: docs/operations.md.',
    )
    .action(async (options: AuditCommandOptions) => {
      const catalog = Catalog.openForReading(options.archive);
      // One large sorting query: a small cache makes its sorts spill early, and keeps memory flat.
      catalog.setCacheKiB(AUDIT_CACHE_KIB);
      try {
        const run = openAudit(catalog, {
          ...(options.source !== undefined ? { source: options.source } : {}),
          ...(options.since !== undefined ? { since: options.since } : {}),
          ...(options.until !== undefined ? { until: options.until } : {}),
          ...(options.harvest !== undefined ? { harvest: options.harvest } : {}),
        });
        await writeAuditOutput(formatAudit(run, options.format, options.serveUrl !== undefined ? { serveUrl: options.serveUrl } : {}), options.out);
      } finally {
        catalog.close();
      }
    });
}

export interface AuditCommandOptions {
  archive: string;
  source?: string;
  since?: string;
  until?: string;
  harvest?: number;
  format: AuditFormat;
  out?: string;
  serveUrl?: string;
}
