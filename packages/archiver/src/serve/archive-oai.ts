// The OAI-PMH 2.0 endpoint of `oaibag serve` (docs/serve.md): the data provider of
// @oaibag/oai-pmh, the one oaibag-repository runs, over the archive's items (archive-items.ts),
// with the settings and defaults of the command.
import { randomBytes } from 'node:crypto';
import { DEFAULT_COUNT_LIMIT, OaiProvider, type ResponseBody } from '@oaibag/oai-pmh';
import { ArchiveItems, type PayloadGate, type ServedArchive } from './archive-items.js';

export interface ArchiveOaiSettings {
  /** Identify's repositoryName, the ORE maps' creator; default `oaibag archive at <base URL>` ({@link defaultArchiveName}). */
  repositoryName?: string;
  adminEmails: readonly string[];
  /** Payloads up to this many bytes go By-Value (base64) in oai_didl too; default 16 MiB. */
  byValueMax?: number;
  /** Records per ListRecords page (default 100), headers per ListIdentifiers page (default 1000). */
  pageRecords?: number;
  pageIdentifiers?: number;
  /** By-Value bytes a ListRecords page carries at most; a larger record goes out alone (default 64 MiB). */
  pageBytes?: number;
  /** Items a list's first page counts at most for completeListSize (default DEFAULT_COUNT_LIMIT, 100,000). */
  countLimit?: number;
}

/**
 * Identify's adminEmail when none is given. OAI-PMH's schema wants one that matches
 * `\S+@(\S+\.)+\S+` (a dot after the `@`, so `nobody@localhost` is not valid), and no real
 * address is known: `.invalid` is the top-level domain reserved for names that never resolve
 * (RFC 2606), so the placeholder is valid and says honestly that nobody reads it.
 */
export const DEFAULT_ADMIN_EMAIL = 'nobody@oaibag.invalid';

/**
 * The archive's repositoryName when none is given: the archive by its URL, never its folder
 * (a repositoryName travels into every harvester's bag-info.txt and RDF), and one archive told
 * from another when a harvester takes from several.
 */
export function defaultArchiveName(baseUrl: string): string {
  return `oaibag archive at ${baseUrl}`;
}

/**
 * True when `value` is an adminEmail OAI-PMH's schema accepts: its emailType pattern
 * `\S+@(\S+\.)+\S+` (`\S`: anything but XML's four white-space characters), and no character
 * an XML document cannot carry. Checked without that regular expression, whose nested
 * repetition backtracks exponentially on a long run of dots: the pattern holds exactly when
 * some `@` after the first character is followed by a dot that is neither right after it nor last.
 */
export function isOaiEmail(value: string): boolean {
  if (/[\x20\t\n\r]/.test(value) || /[\p{Cc}\p{Cs}\uFFFE\uFFFF]/u.test(value)) return false;
  const at = value.indexOf('@', 1);
  if (at < 0) return false;
  const domain = value.slice(at + 1);
  const dot = domain.indexOf('.', 1);
  return dot > 0 && dot <= domain.length - 2;
}

/**
 * Pages of ListRecords served to nobody when serve starts ({@link ArchiveOai.warmUp}), and the
 * payload bytes they may read. Ten, not three: after three, a client's first page still cost
 * 47-51 ms against 24-33 for the next (100k and 1M archives); after ten, 22-31 ms.
 */
const WARM_UP_PAGES = 10;
/** The warm-up's whole time: a slow disk delays serve's start by at most this much. */
const WARM_UP_MS = 10_000;
const WARM_UP_BYTES = 4 * 1024 * 1024;

export const SERVE_DEFAULTS = {
  byValueMax: 16 * 1024 * 1024,
  pageRecords: 100,
  pageIdentifiers: 1000,
  pageBytes: 64 * 1024 * 1024,
  countLimit: DEFAULT_COUNT_LIMIT,
} as const;

export class ArchiveOai {
  /**
   * Tokens are signed with the catalog's key: every serve instance over one catalog (behind a
   * proxy) takes the others' tokens, and a restarted one its own.
   */
  private readonly provider: OaiProvider;

  constructor(
    private readonly archive: ServedArchive,
    private readonly settings: ArchiveOaiSettings,
  ) {
    this.provider = new OaiProvider({
      tokenKey: archive.catalog.resumptionTokenKey() ?? randomBytes(32),
      pageRecords: settings.pageRecords ?? SERVE_DEFAULTS.pageRecords,
      pageIdentifiers: settings.pageIdentifiers ?? SERVE_DEFAULTS.pageIdentifiers,
      pageBytes: settings.pageBytes ?? SERVE_DEFAULTS.pageBytes,
      countLimit: settings.countLimit ?? SERVE_DEFAULTS.countLimit,
    });
  }

  /**
   * The response to one request: a whole document for errors, streamed records otherwise.
   * `mayRead` is the access decision for a payload's bytes: a payload it refuses is given
   * By-Reference only, whatever its size.
   */
  respond(pairs: Array<[string, string]>, baseUrl: string, mayRead: PayloadGate, now = Math.floor(Date.now() / 1000)): Promise<ResponseBody> {
    return this.provider.respond(this.items(baseUrl, mayRead), pairs, now);
  }

  /**
   * Serves the first WARM_UP_PAGES pages of the whole ListRecords list in oai_didl to nobody, so
   * that the first harvester's first page does not pay for V8 compiling the record path. `ask`
   * sends a request to the server itself (warm-up-sockets.ts), which compiles the HTTP path too:
   * rendered without a socket, a harvester's first page of a 1M archive still cost 48 ms of
   * the server's time against 20 ms for the last. Where the list is not open to anonymous
   * viewers (`--auth`), the pages are rendered here instead, without a socket.
   * Bounded: at most WARM_UP_BYTES of payloads are read (the others go By-Reference here; `ask`
   * is handed the gate that counts them), and no page is begun after WARM_UP_MS, nor a request
   * over HTTP let run past it. Errors are not reported (a damaged bag is the error
   * of the request that reads it).
   */
  async warmUp(baseUrl: string, ask: (query: string, gate: PayloadGate, timeoutMs: number) => Promise<{ status: number; tail: string }>): Promise<void> {
    const deadline = Date.now() + WARM_UP_MS;
    let budget = WARM_UP_BYTES;
    const gate: PayloadGate = (payload) => {
      if (payload.size > budget) return false;
      budget -= payload.size;
      return true;
    };
    const rendered = async (query: string) => {
      let last = '';
      for await (const part of await this.respond([...new URLSearchParams(query)], baseUrl, gate)) last = part;
      return last;
    };
    let overHttp = true;
    let query = 'verb=ListRecords&metadataPrefix=oai_didl';
    try {
      for (let page = 0; page < WARM_UP_PAGES && Date.now() < deadline; page++) {
        let tail: string;
        if (overHttp) {
          const answer = await ask(query, gate, deadline - Date.now());
          overHttp = answer.status === 200;
          tail = overHttp ? answer.tail : await rendered(query);
        } else tail = await rendered(query);
        // The token is at the page's end (the provider writes it with the closing tags).
        const token = /<resumptionToken[^>]*>([^<]+)</.exec(tail)?.[1];
        if (!token) return;
        query = `verb=ListRecords&resumptionToken=${encodeURIComponent(token)}`;
      }
    } catch {
      // Nothing to warm, or a damaged bag: reported when a client asks for it.
    }
  }

  /** The ORE resource map of the version a bag's record holds (`/ore/<bag>/<record>`); undefined when there is none. */
  oreMap(bagPath: string, record: number, baseUrl: string): Promise<string | undefined> {
    return this.items(baseUrl, () => false).oreMap(bagPath, record);
  }

  private items(baseUrl: string, mayRead: PayloadGate): ArchiveItems {
    const settings = {
      repositoryName: this.settings.repositoryName ?? defaultArchiveName(baseUrl),
      adminEmails: this.settings.adminEmails,
      byValueMax: this.settings.byValueMax ?? SERVE_DEFAULTS.byValueMax,
    };
    return new ArchiveItems(this.archive, settings, baseUrl, mayRead);
  }
}
