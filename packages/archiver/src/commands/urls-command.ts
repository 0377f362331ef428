import { once } from 'node:events';
import { Command } from 'commander';
import { formatChangedUrl, formatUrlsSummary, listChangedUrls } from '../urls/list-changed-urls.js';
import { credentialsFromOptions } from './credentials-options.js';
import { httpUrl } from './option-parsers.js';

/** `oaibag urls BASEURL`: the URLs that changed in a period, one a line, for a crawler (docs/urls.md). */
export function urlsCommand(): Command {
  return new Command('urls')
    .description('print the URLs of the resources that changed in the period (ListIdentifiers), one a line, to feed a crawler')
    .argument('<BASEURL>', "the repository's OAI-PMH base URL, e.g. https://example.org/oai", httpUrl('BASEURL'))
    .option('--from <DATE>', 'changed at or after this date (YYYY-MM-DD or YYYY-MM-DDThh:mm:ssZ)')
    .option('--until <DATE>', 'changed at or before this date')
    .option('--set <SPEC>', 'only this set (e.g. mime:image)')
    .option('--prefix <PREFIX>', 'metadata format named in the request', 'oai_didl')
    .option('--no-deleted', 'leave deleted resources out (a list to fetch as it is)')
    .option('--user <NAME>', 'user name for HTTP Basic authentication')
    .option('--password-file <FILE>', 'file whose first line is the password (never on the command line)')
    .option('--json', 'print JSON lines: {"url","datestamp","deleted","sets"}')
    .addHelpText(
      'after',
      '\nOutput: one URL a line; a deleted resource as URL, a tab and "deleted". Identifiers that are\n' +
        'not http(s) URLs are left out and named on stderr. At the end, stderr tells the --from of the\n' +
        "next listing (the first response's responseDate).\n" +
        '\nExit codes: 0 listed (also when nothing changed); 2 usage; 3 the source is unreachable,\n' +
        'not an OAI-PMH repository, or the list failed. All codes: docs/operations.md.',
    )
    .action(async (baseUrl: string, options: UrlsCommandOptions) => {
      const credentials = await credentialsFromOptions(options);
      // A reader that stops early (`| head`) is not an error.
      process.stdout.on('error', (error: NodeJS.ErrnoException) => {
        if (error.code === 'EPIPE') process.exit(0);
        throw error;
      });
      const log = (line: string): void => void process.stderr.write(`oaibag: ${line}\n`);
      const summary = await listChangedUrls({
        baseUrl,
        prefix: options.prefix,
        ...(options.from !== undefined ? { from: options.from } : {}),
        ...(options.until !== undefined ? { until: options.until } : {}),
        ...(options.set !== undefined ? { set: options.set } : {}),
        ...(credentials ? { credentials } : {}),
        includeDeleted: options.deleted,
        log,
        onPage: async (entries) => {
          let text = '';
          for (const entry of entries) {
            if (!entry.crawlable) log(`not an http(s) URL, left out: ${JSON.stringify(entry.url)}`);
            else text += formatChangedUrl(entry, options.json === true);
          }
          if (text !== '' && !process.stdout.write(text)) await once(process.stdout, 'drain');
        },
      });
      log(formatUrlsSummary(summary));
    });
}

export interface UrlsCommandOptions {
  from?: string;
  until?: string;
  set?: string;
  prefix: string;
  /** False with --no-deleted. */
  deleted: boolean;
  user?: string;
  passwordFile?: string;
  json?: boolean;
}
