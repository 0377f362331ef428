import { AuthFileError, loadAuthFile } from '@oaibag/oai-pmh';
import { Command, InvalidArgumentError, Option } from 'commander';
import { ArchiverError } from '../core/errors.js';
import { readPasswordLine } from '../core/password-file.js';
import { openAccessLog } from '../serve/access-log.js';
import { DEFAULT_ADMIN_EMAIL, SERVE_DEFAULTS } from '../serve/archive-oai.js';
import { SPARQL_DEFAULTS, startArchiveServer } from '../serve/archive-server.js';
import { SPARQL_BOUND_DEFAULTS, SPARQL_MAX_QUADS_DEFAULT, sizeText } from '../serve/graph-store.js';
import {
  LINK_BOUND_DEFAULTS,
  LINK_REFRESH_DEFAULT_MS,
  type LinkOptions,
  type LinkRule,
  linkEndpoint,
  parseLinkRule,
  predicateIri,
} from '../serve/link-rules.js';
import type { RemoteStoreOptions } from '../serve/remote-graph-store.js';
import { byteSize, httpUrl, pageByteSize, portNumber, wholeNumber } from './option-parsers.js';

interface ServeOptions {
  archive: string;
  host: string;
  port: number;
  baseUrl?: string;
  byValueMax: number;
  pageRecords: number;
  pageIdentifiers: number;
  pageBytes: number;
  listCountLimit: number;
  auth?: string;
  sparqlTimeout: number;
  sparqlRows: number;
  sparqlMemory: number;
  sparqlResultSize: number;
  sparqlQuerySize: number;
  sparqlMaxQuads: number;
  sparqlStore?: string;
  sparqlStoreUpdate?: string;
  sparqlStoreData?: string;
  sparqlStoreGraph?: string;
  sparqlStoreUser?: string;
  sparqlStorePasswordFile?: string;
  name?: string;
  adminEmail: string[];
  /** A file, `-` (standard output), or false with --no-access-log. */
  accessLog: string | false;
  linkTo: string[];
  linkEndpoint: string[];
  linkOn: LinkRule[];
  linkPredicate?: string;
  linkBytes: boolean;
  linkRefresh: number;
  linkTimeout: number;
  linkAnswerSize: number;
  linkPageRows: number;
  linkMaxRows: number;
  linkValueLength: number;
  linkBlockSize: number;
  linkMaxComparisons: number;
  linkMaxLinks: number;
}

/** The options that mean nothing without --link-to or --link-endpoint. */
const LINK_COMPANIONS = [
  'linkOn',
  'linkPredicate',
  'linkBytes',
  'linkRefresh',
  'linkTimeout',
  'linkAnswerSize',
  'linkPageRows',
  'linkMaxRows',
  'linkValueLength',
  'linkBlockSize',
  'linkMaxComparisons',
  'linkMaxLinks',
] as const;

/** A repeatable option: every value, parsed. */
function repeated<T>(parse: (value: string) => T): (value: string, all: T[]) => T[] {
  return (value, all) => [...all, parse(value)];
}

/** `oaibag serve`: the archive as an OAI-PMH repository (docs/serve.md). */
export function serveCommand(): Command {
  return new Command('serve')
    .description('serve the archive as an OAI-PMH repository that another archive can harvest (oai_didl, http_header, oai_dc, ore)')
    .option('--archive <DIR>', 'the archive folder', './archive')
    .option('--host <HOST>', 'address to listen on', '127.0.0.1')
    .option('--port <N>', 'port to listen on (0: any free port)', portNumber, 8080)
    .option(
      '--base-url <URL>',
      'the URL clients use, when a proxy (nginx) stands in front (default: http://HOST:PORT)',
      httpUrl('--base-url', { pathOnly: true }),
    )
    .addOption(
      new Option('--by-value-max <SIZE>', 'payloads up to SIZE also go By-Value (base64) in oai_didl (K, M, G; 0: By-Reference only)')
        .argParser(byteSize)
        .default(SERVE_DEFAULTS.byValueMax, '16M'),
    )
    .option('--page-records <N>', 'records per ListRecords page', wholeNumber, SERVE_DEFAULTS.pageRecords)
    .option('--page-identifiers <N>', 'headers per ListIdentifiers page', wholeNumber, SERVE_DEFAULTS.pageIdentifiers)
    .addOption(
      new Option('--page-bytes <SIZE>', 'By-Value bytes a ListRecords page carries at most (a larger record goes out alone)')
        .argParser(pageByteSize)
        .default(SERVE_DEFAULTS.pageBytes, '64M'),
    )
    .option(
      '--list-count-limit <N>',
      "items a list's first page counts at most for completeListSize (past it: estimated or left out)",
      wholeNumber,
      SERVE_DEFAULTS.countLimit,
    )
    .option('--sparql-timeout <SECONDS>', 'a SPARQL query is stopped after SECONDS', wholeNumber, SPARQL_DEFAULTS.timeoutMs / 1000)
    .option('--sparql-rows <N>', 'a SPARQL select query gives at most N solutions', wholeNumber, SPARQL_DEFAULTS.rowLimit)
    .addOption(
      new Option('--sparql-memory <SIZE>', 'a SPARQL query is stopped once it has taken SIZE more memory')
        .argParser(byteSize)
        .default(SPARQL_BOUND_DEFAULTS.memoryBytes, sizeText(SPARQL_BOUND_DEFAULTS.memoryBytes)),
    )
    .addOption(
      new Option('--sparql-result-size <SIZE>', 'a SPARQL answer larger than SIZE is refused')
        .argParser(byteSize)
        .default(SPARQL_BOUND_DEFAULTS.resultBytes, sizeText(SPARQL_BOUND_DEFAULTS.resultBytes)),
    )
    .addOption(
      new Option('--sparql-query-size <SIZE>', 'a SPARQL query longer than SIZE is refused')
        .argParser(byteSize)
        .default(SPARQL_BOUND_DEFAULTS.queryBytes, sizeText(SPARQL_BOUND_DEFAULTS.queryBytes)),
    )
    .option(
      '--sparql-max-quads <N>',
      "the embedded SPARQL store takes an archive's graph of at most N quads (larger: /sparql answers 503, ERR_SPARQL_TOO_LARGE)",
      wholeNumber,
      SPARQL_MAX_QUADS_DEFAULT,
    )
    .option(
      '--sparql-store <URL>',
      "keep the archive's graph in this SPARQL 1.1 store (its query endpoint) rather than in memory",
      httpUrl('--sparql-store', { pathOnly: true }),
    )
    .option(
      '--sparql-store-update <URL>',
      "the store's SPARQL Update endpoint (default: the --sparql-store URL)",
      httpUrl('--sparql-store-update', { pathOnly: true }),
    )
    .option(
      '--sparql-store-data <URL>',
      "the store's Graph Store Protocol endpoint: triples are POSTed there as N-Triples (faster than SPARQL Update; Virtuoso: /sparql-graph-crud-auth)",
      httpUrl('--sparql-store-data', { pathOnly: true }),
    )
    .option('--sparql-store-graph <IRI>', "the named graph the archive's graph is written to (default: BASE-URL/graph)", graphIri)
    .option('--sparql-store-user <NAME>', 'the account the store is written with (Digest or Basic, as the store asks)')
    .option('--sparql-store-password-file <FILE>', "file whose first line is that account's password (never on the command line)")
    .option(
      '--auth <FILE>',
      "protected paths and their users, in oaibag-repository's --auth format (HTTP Basic); a protected /files/ path keeps its bytes from every route, and the Linked Data view is then for users refused nothing",
    )
    .option('--name <TEXT>', 'repositoryName given by Identify (default: "oaibag archive at BASE-URL")')
    .addOption(
      new Option('--admin-email <ADDRESS>', 'adminEmail given by Identify (repeatable)')
        .argParser((value: string, all: string[]) => [...all, value])
        .default([] as string[], DEFAULT_ADMIN_EMAIL),
    )
    .option('--access-log <FILE>', 'append one line per request to FILE (Combined Log Format plus milliseconds; -: standard output)', '-')
    .option('--no-access-log', 'write no access log')
    .addOption(
      new Option(
        '--link-to <URL>',
        'link to another oaibag archive at its base URL (its /sparql), or to a SPARQL endpoint whose path ends in /sparql (repeatable)',
      )
        .argParser(repeated((value) => linkEndpoint(value, '--link-to')))
        .default([] as string[], 'none'),
    )
    .addOption(
      new Option('--link-endpoint <URL>', 'link to the SPARQL 1.1 endpoint at URL, whatever its path (repeatable)')
        .argParser(repeated((value) => linkEndpoint(value, '--link-endpoint')))
        .default([] as string[], 'none'),
    )
    .addOption(
      new Option(
        '--link-on <LOCAL=REMOTE@THRESHOLD>',
        'link items whose LOCAL value is this similar to a remote REMOTE value (repeatable; prefix:name or IRI; similarity 0-1)',
      )
        .argParser(repeated(parseLinkRule))
        .default([] as LinkRule[], 'dcterms:source=dcterms:source@1'),
    )
    .option('--link-predicate <PREDICATE>', 'the predicate of links made by --link-on (default prov:alternateOf)', (value: string) =>
      predicateIri(value, '--link-predicate'),
    )
    .option('--no-link-bytes', 'make no oaibag:sameBytesAs links between versions and files of identical bytes (same SHA-256)')
    .option(
      '--link-refresh <SECONDS>',
      'read the remotes again and recompute the links every SECONDS (and after each change of the catalog)',
      wholeNumber,
      LINK_REFRESH_DEFAULT_MS / 1000,
    )
    .option('--link-timeout <SECONDS>', 'a request to a remote is abandoned after SECONDS', wholeNumber, LINK_BOUND_DEFAULTS.timeoutMs / 1000)
    .addOption(
      new Option('--link-answer-size <SIZE>', "a remote's answer larger than SIZE is refused")
        .argParser(pageByteSize)
        .default(LINK_BOUND_DEFAULTS.answerBytes, sizeText(LINK_BOUND_DEFAULTS.answerBytes)),
    )
    .option('--link-page-rows <N>', 'rows asked for in one request', wholeNumber, LINK_BOUND_DEFAULTS.pageRows)
    .option('--link-max-rows <N>', 'rows read at most from each side for each --link-on rule and for the digests', wholeNumber, LINK_BOUND_DEFAULTS.maxRows)
    .option('--link-value-length <N>', 'values are cut to N characters before they are compared by similarity', wholeNumber, LINK_BOUND_DEFAULTS.valueLength)
    .option('--link-block-size <N>', 'a word shared by more than N remote values does not make values candidates', wholeNumber, LINK_BOUND_DEFAULTS.blockSize)
    .option(
      '--link-max-comparisons <N>',
      'candidate pairs looked at for the similarity rules, for each remote at each refresh',
      wholeNumber,
      LINK_BOUND_DEFAULTS.maxComparisons,
    )
    .option('--link-max-links <N>', 'links made to each remote at most', wholeNumber, LINK_BOUND_DEFAULTS.maxLinks)
    .addHelpText(
      'after',
      '\nWhat it serves:\n' +
        '  /oai                OAI-PMH 2.0. Items are the archived resources with their original identifiers;\n' +
        "                      each item's record is its latest version, or a deleted header (persistent).\n" +
        '                      Datestamps are when the archive ingested each version, so a harvester of the\n' +
        '                      archive misses nothing. Sets: source:N per source repository, and the MIME\n' +
        '                      sets of the records (mime:image:jpeg). Formats: oai_didl (the record as\n' +
        "                      received, refs to the archive's copies), http_header, oai_dc, ore.\n" +
        '  /files/<bag>/<path> the payloads, with their original Content-Type and Last-Modified, ETag from\n' +
        '                      the SHA-256, conditional GET and ranges. Nothing else of the archive.\n' +
        '  /ore/<bag>/<n>      the OAI-ORE resource map (RDF/XML) of each version.\n' +
        '  /sparql             SPARQL 1.1 over the archive (read-only); /resource/… the things of the\n' +
        '                      archive as Linked Data, 303 to /page/… (HTML) or /data/… (RDF).\n' +
        '  /timegate/<URL>     Memento: the capture of URL closest before Accept-Datetime; its TimeMap\n' +
        '                      at /timemap/link/<URL>, each capture at /memento/<bag>/<n>.\n' +
        '  /                   the home page for people: sources, totals, recent changes; /search by\n' +
        '                      URL and MIME set, /history/<URL>, /replay/<timestamp>/<URL> (under a\n' +
        '                      banner, sandboxed), /diff/<ts>/<ts>/<URL> (docs/browse.md).\n' +
        '  /directory, /all    what the archive describes, by kind, paged (HTML, RDF).\n' +
        '\nWith --link-to, the items are linked to the same items of other archives (prov:alternateOf,\n' +
        'by --link-on rules) and versions to versions of the same bytes (oaibag:sameBytesAs), in the\n' +
        'graph BASE-URL/graph/links (docs/linked-data.md, "Links between archives").\n' +
        '\nEvery record carries its provenance (nested when it came from another archive) and the\n' +
        'rights its repository gave (OAI-rights). Harvest it with: oaibag harvest http://HOST:PORT/oai\n' +
        '\nIt takes no lock: a harvest may run beside it (only committed versions are served).\n' +
        'Stop it with Ctrl-C. Exit codes: 0 stopped; 2 usage (a bad option or auth file, an address it\n' +
        'cannot listen on: the port in use, a port it may not use, not an address of this host);\n' +
        '4 the archive cannot be served (named).',
    )
    .action(async (options: ServeOptions, command: Command) => {
      const auth = options.auth === undefined ? undefined : await loadAuth(options.auth);
      const sparqlStore = await storeOptions(options);
      const links = linkOptions(options, command);
      const notice = (line: string) => void process.stderr.write(`oaibag serve: ${line}\n`);
      // Listening for a stop before anything is opened: a SIGTERM while serve opens the catalog
      // and warms up stops it as cleanly (status 0) as one after it says where it answers.
      let stopAsked: () => void = () => {};
      const stopped = new Promise<void>((resolve) => {
        stopAsked = resolve;
      });
      const onSignal = () => {
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
        stopAsked();
      };
      process.on('SIGINT', onSignal);
      process.on('SIGTERM', onSignal);
      let accessLog: ReturnType<typeof openAccessLog> | undefined;
      try {
        accessLog = options.accessLog === false ? undefined : openAccessLog(options.accessLog, notice);
      } catch (error) {
        onSignal();
        throw error;
      }
      const server = await startArchiveServer({
        archiveDir: options.archive,
        host: options.host,
        port: options.port,
        ...(options.baseUrl !== undefined ? { baseUrl: options.baseUrl } : {}),
        byValueMax: options.byValueMax,
        pageRecords: options.pageRecords,
        pageIdentifiers: options.pageIdentifiers,
        pageBytes: options.pageBytes,
        countLimit: options.listCountLimit,
        ...(auth ? { auth } : {}),
        sparqlTimeoutMs: options.sparqlTimeout * 1000,
        sparqlRowLimit: options.sparqlRows,
        sparqlBounds: { memoryBytes: options.sparqlMemory, resultBytes: options.sparqlResultSize, queryBytes: options.sparqlQuerySize },
        sparqlMaxQuads: options.sparqlMaxQuads,
        ...(sparqlStore ? { sparqlStore } : {}),
        ...(links ? { links } : {}),
        ...(options.name !== undefined ? { repositoryName: options.name } : {}),
        ...(options.adminEmail.length > 0 ? { adminEmails: options.adminEmail } : {}),
        log: notice,
        ...(accessLog ? { accessLog: (line: string) => accessLog.write(line) } : {}),
      }).catch(async (error: unknown) => {
        onSignal();
        await accessLog?.close();
        const code = (error as NodeJS.ErrnoException).code;
        if (code === 'EADDRINUSE' || code === 'EACCES' || code === 'EADDRNOTAVAIL') {
          throw new ArchiverError('ERR_ARCHIVE_USAGE', `cannot listen on ${options.host}:${options.port} (${code})`, {
            hint: 'choose another --port or --host',
          });
        }
        throw error;
      });
      process.stderr.write(`oaibag serve: ${options.archive} at ${server.baseUrl}/oai (Ctrl-C stops)\n`);
      await stopped;
      await server.close().catch(() => undefined);
      await accessLog?.close();
      process.stderr.write('oaibag serve: stopped\n');
    });
}

/** The remote store of `--sparql-store` and its companions, which mean nothing without it. */
async function storeOptions(options: ServeOptions): Promise<RemoteStoreOptions | undefined> {
  if ((options.sparqlStoreUser === undefined) !== (options.sparqlStorePasswordFile === undefined)) {
    throw new ArchiverError('ERR_ARCHIVE_USAGE', '--sparql-store-user and --sparql-store-password-file go together');
  }
  if (options.sparqlStore === undefined) {
    const stray = (['sparqlStoreUpdate', 'sparqlStoreData', 'sparqlStoreGraph', 'sparqlStoreUser'] as const).find((name) => options[name] !== undefined);
    if (stray) throw new ArchiverError('ERR_ARCHIVE_USAGE', `--${stray.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)} needs --sparql-store`);
    return undefined;
  }
  return {
    queryUrl: options.sparqlStore,
    ...(options.sparqlStoreUpdate !== undefined ? { updateUrl: options.sparqlStoreUpdate } : {}),
    ...(options.sparqlStoreData !== undefined ? { dataUrl: options.sparqlStoreData } : {}),
    ...(options.sparqlStoreGraph !== undefined ? { graph: options.sparqlStoreGraph } : {}),
    ...(options.sparqlStoreUser !== undefined
      ? { credentials: { user: options.sparqlStoreUser, password: await readPasswordLine(options.sparqlStorePasswordFile!) } }
      : {}),
  };
}

/** The links of `--link-to` and `--link-endpoint` with their companions, which mean nothing without them. */
function linkOptions(options: ServeOptions, command: Command): LinkOptions | undefined {
  const endpoints = [...new Set([...options.linkTo, ...options.linkEndpoint])];
  if (endpoints.length === 0) {
    const stray = LINK_COMPANIONS.find((name) => command.getOptionValueSource(name) === 'cli');
    if (stray) {
      const flag = stray === 'linkBytes' ? '--no-link-bytes' : `--${stray.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
      throw new ArchiverError('ERR_ARCHIVE_USAGE', `${flag} needs --link-to or --link-endpoint`);
    }
    return undefined;
  }
  return {
    endpoints,
    ...(options.linkOn.length > 0 ? { rules: options.linkOn } : {}),
    bytes: options.linkBytes,
    ...(options.linkPredicate !== undefined ? { predicate: options.linkPredicate } : {}),
    refreshMs: options.linkRefresh * 1000,
    bounds: {
      timeoutMs: options.linkTimeout * 1000,
      answerBytes: options.linkAnswerSize,
      pageRows: options.linkPageRows,
      maxRows: options.linkMaxRows,
      valueLength: options.linkValueLength,
      blockSize: options.linkBlockSize,
      maxComparisons: options.linkMaxComparisons,
      maxLinks: options.linkMaxLinks,
    },
  };
}

/** An absolute IRI that can stand between < and > in SPARQL. */
function graphIri(value: string): string {
  if (!/^[A-Za-z][A-Za-z0-9+.-]*:[^\s<>"{}|\\^`]+$/.test(value)) {
    throw new InvalidArgumentError('give an absolute IRI (scheme:…) without spaces or any of <>"{}|\\^`');
  }
  return value;
}

async function loadAuth(file: string) {
  try {
    return await loadAuthFile(file);
  } catch (error) {
    if (error instanceof AuthFileError)
      throw new ArchiverError('ERR_ARCHIVE_USAGE', error.message, { ...(error.hint ? { hint: error.hint } : {}), cause: error });
    throw error;
  }
}
