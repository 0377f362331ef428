// `serve --link-to`: links from this archive's things to the same things in other archives or
// Linked Data sources, as OAI2LOD linked its items (docs/linked-data.md, "Links between
// archives"). Each refresh reads every remote's values for each rule (and their digests) into an
// index, then this archive's own values page by page, looks each up, and replaces the graph
// `<base>/graph/links` of the store that serves `/sparql` with the links found, in one step.
// A refresh comes every `refreshMs` (the remotes read again) and after the catalog changes
// (the remotes' values as last read); a remote that fails keeps its last values, so its links
// stay, and is read again at the next full refresh. Nothing here stops serve: each failure is
// one line.
import { setImmediate as yieldToServe } from 'node:timers/promises';
import type { Catalog } from '../catalog/catalog.js';
import { lastVersionId } from '../catalog/store-cursors.js';
import { NAMESPACES } from './archive-graph.js';
import { LinkFailure, type LinkRow, type ReadSummary, readLocal, readRemote } from './link-fetch.js';
import { ComparisonBudget, ExactIndex, SimilarIndex } from './link-match.js';
import {
  DEFAULT_LINK_RULES,
  LINK_BOUND_DEFAULTS,
  LINK_PREDICATE_DEFAULT,
  LINK_REFRESH_DEFAULT_MS,
  type LinkBounds,
  type LinkOptions,
  type LinkRule,
  SAME_BYTES_PREDICATE,
} from './link-rules.js';
import type { RemoteGraphStore } from './remote-graph-store.js';
import type { SparqlGraph } from './sparql-graph.js';

/** What holds the links graph: the embedded store (graph-store.ts) or the remote one (remote-graph-store.ts). */
export interface LinkTarget {
  /** Replaces every triple of `graph` with `ntriples`, at once as queries see it. */
  replaceLinks(graph: string, ntriples: string): Promise<void>;
}

export type LinkedGraph = SparqlGraph & LinkTarget;

/** How often the catalog is looked at for a change. */
const CHECK_EVERY_MS = 1000;
/** A refresh for a change of the catalog comes at least this long after the one before ended (a harvest commits batch after batch). */
const CHANGE_GAP_MS = 5000;
/** Pairs looked at between two turns of the event loop, so that serve answers while links are computed. */
const YIELD_EVERY = 20_000;
/** The digest of no bytes: every empty file would be linked to every other. */
const EMPTY_DIGEST = 'urn:sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
const SHA256_WHERE = (subject: string) => `?s <${NAMESPACES.dcterms}identifier> ?v . FILTER (${subject}isIRI(?v) && STRSTARTS(STR(?v), "urn:sha256:"))`;

/** The links graph of the archive served at `base`. */
export function linksGraphOf(base: string): string {
  return `${base}/graph/links`;
}

/** A remote's values as last read: an index for each rule, in the rules' order, and its digests. */
interface Snapshot {
  rules: Array<ExactIndex | SimilarIndex>;
  digests: ExactIndex | undefined;
}

interface Remote {
  endpoint: string;
  snapshot?: Snapshot;
  /** When its values were last read whole. */
  readAt?: string;
  /** The last failure, until a read succeeds. */
  error?: string | undefined;
  links: number;
}

/** What the linker has done, for tests and operators. */
export interface LinkState {
  /** Refreshes ended. */
  refreshes: number;
  refreshedAt: string | undefined;
  /** Links in the graph now. */
  links: number;
  remotes: Array<{ endpoint: string; links: number; readAt: string | undefined; error: string | undefined }>;
}

export interface LinkKeeperOptions {
  /** The store that serves /sparql (started on the first call). */
  graph: () => Promise<LinkedGraph>;
  catalog: Catalog;
  /** With `--sparql-store`: the follower, whose progress says when the store holds a new harvest. */
  remote?: RemoteGraphStore | undefined;
  links: LinkOptions;
  log: (line: string) => void;
}

export class LinkKeeper {
  private readonly remotes: Remote[];
  private readonly rules: readonly LinkRule[];
  private readonly bounds: LinkBounds;
  private readonly predicate: string;
  private readonly refreshMs: number;
  private readonly stopping = new AbortController();
  private closed = false;
  private running: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private fullAsked = false;
  private busy = false;
  private refreshes = 0;
  private waiters: Array<{ after: number; resolve: () => void }> = [];
  /** The links text last written, and whether writing it failed (it is written again at the next turn). */
  private written: string | undefined;
  private writeFailed = false;
  private links = 0;
  private refreshedAt: string | undefined;
  /** The limit lines of the last refresh: a line is logged again only when it changes. */
  private limitLines = new Set<string>();

  private constructor(private readonly options: LinkKeeperOptions) {
    this.remotes = options.links.endpoints.map((endpoint) => ({ endpoint, links: 0 }));
    this.rules = options.links.rules?.length ? options.links.rules : DEFAULT_LINK_RULES;
    this.bounds = { ...LINK_BOUND_DEFAULTS, ...options.links.bounds };
    this.predicate = options.links.predicate ?? LINK_PREDICATE_DEFAULT;
    this.refreshMs = options.links.refreshMs ?? LINK_REFRESH_DEFAULT_MS;
  }

  /** Starts linking: a first refresh now, then the refreshes above. */
  static start(options: LinkKeeperOptions): LinkKeeper {
    const keeper = new LinkKeeper(options);
    keeper.running = keeper.run();
    return keeper;
  }

  state(): LinkState {
    return {
      refreshes: this.refreshes,
      refreshedAt: this.refreshedAt,
      links: this.links,
      remotes: this.remotes.map((remote) => ({ endpoint: remote.endpoint, links: remote.links, readAt: remote.readAt, error: remote.error })),
    };
  }

  /** Asks for a full refresh (every remote read again) now; resolves once one has ended. */
  refreshNow(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.fullAsked = true;
    const promise = new Promise<void>((resolve) => this.waiters.push({ after: this.refreshes + (this.busy ? 2 : 1), resolve }));
    this.wake?.();
    return promise;
  }

  /** Resolves once a refresh that starts after this call has ended. */
  nextRefresh(): Promise<void> {
    if (this.closed) return Promise.resolve();
    return new Promise<void>((resolve) => this.waiters.push({ after: this.refreshes + (this.busy ? 2 : 1), resolve }));
  }

  async close(): Promise<void> {
    this.closed = true;
    this.stopping.abort();
    this.wake?.();
    await this.running;
    for (const waiter of this.waiters.splice(0)) waiter.resolve();
  }

  /** The catalog's progress as the store holds it: the last version (in the remote store, the last written there). */
  private progress(): number {
    try {
      return this.options.remote ? this.options.remote.state().writtenVersion : lastVersionId(this.options.catalog);
    } catch {
      return -1;
    }
  }

  private async run(): Promise<void> {
    let full = true;
    let lastFull = 0;
    while (!this.closed) {
      const progress = this.progress();
      this.busy = true;
      await this.refresh(full);
      this.busy = false;
      if (this.closed) break;
      const ended = Date.now();
      if (full) lastFull = ended;
      this.refreshes++;
      this.refreshedAt = new Date(ended).toISOString();
      const done = this.waiters.filter((waiter) => waiter.after <= this.refreshes);
      this.waiters = this.waiters.filter((waiter) => waiter.after > this.refreshes);
      for (const waiter of done) waiter.resolve();
      // Next: a full refresh when its time comes or one is asked for; a refresh of the archive's
      // side when the catalog moved (or the last write failed), not sooner than CHANGE_GAP_MS.
      for (;;) {
        if (this.closed) return;
        const now = Date.now();
        if (this.fullAsked || now - lastFull >= this.refreshMs) {
          this.fullAsked = false;
          full = true;
          break;
        }
        if (now - ended >= CHANGE_GAP_MS && (this.writeFailed || this.progress() !== progress)) {
          full = false;
          break;
        }
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.min(CHECK_EVERY_MS, Math.max(1, lastFull + this.refreshMs - now)));
          timer.unref();
          this.wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        this.wake = undefined;
      }
    }
  }

  /** One refresh; every failure is a line, never thrown. */
  private async refresh(full: boolean): Promise<void> {
    const { log } = this.options;
    try {
      // The store may take a while to load: serve stops without waiting for it here.
      const graph = await untilStopped(this.options.graph(), this.stopping.signal).catch((error: unknown) => {
        if (this.closed) throw error;
        throw new LinkFailure('ERR_LINK_LOCAL', `the archive's graph could not be opened: ${(error as Error).message}`);
      });
      const limits = new Set<string>();
      for (const remote of this.remotes) {
        if (this.closed) return;
        if (full || !remote.snapshot) await this.readRemote(remote, limits);
      }
      const lines = await this.match(graph, limits);
      if (this.closed) return;
      for (const line of limits) if (!this.limitLines.has(line)) log(line);
      this.limitLines = limits;
      const text = [...lines].sort().join('');
      if (text !== this.written || this.writeFailed) {
        try {
          await graph.replaceLinks(linksGraphOf(graph.uris.base), text);
        } catch (error) {
          if (this.closed) return;
          this.writeFailed = true;
          log(
            `links could not be written to the archive's graph (${(error as Error).message}); the links written last stay, written again shortly [ERR_LINK_LOCAL]`,
          );
          return;
        }
        const changed = text !== this.written;
        this.written = text;
        this.writeFailed = false;
        this.links = lines.size;
        if (changed)
          log(`links: ${lines.size} in ${linksGraphOf(graph.uris.base)} (${this.remotes.map((remote) => `${remote.endpoint}: ${remote.links}`).join(', ')})`);
      }
    } catch (error) {
      if (this.closed) return;
      if (error instanceof LinkFailure) log(`links: ${error.message}; the links made last are kept [${error.code}]`);
      else log(`links could not be refreshed: ${(error as Error).message}; the links made last are kept [ERR_ARCHIVE_INTERNAL]`);
    }
  }

  /** Reads a remote's values for every rule and its digests; on failure it keeps what it had, and says so. */
  private async readRemote(remote: Remote, limits: Set<string>): Promise<void> {
    const signal = this.stopping.signal;
    const snapshot: Snapshot = { rules: [], digests: undefined };
    try {
      for (const rule of this.rules) {
        const index = rule.threshold >= 1 ? new ExactIndex() : new SimilarIndex(rule.threshold, this.bounds.valueLength);
        const where = `?s <${rule.remote}> ?v . FILTER (isIRI(?s) && !isBlank(?v))`;
        const read = await readRemote(remote.endpoint, where, this.bounds, (rows) => addAll(index, rows), signal);
        this.rowsLimit(read, limits, `links to ${remote.endpoint}: it has more than`, `<${rule.remote}>`);
        if (index instanceof SimilarIndex) index.seal(this.bounds.blockSize);
        snapshot.rules.push(index);
      }
      if (this.options.links.bytes !== false) {
        const digests = new ExactIndex();
        const read = await readRemote(remote.endpoint, SHA256_WHERE('isIRI(?s) && '), this.bounds, (rows) => addAll(digests, rows), signal);
        this.rowsLimit(read, limits, `links to ${remote.endpoint}: it has more than`, 'digests (urn:sha256:)');
        snapshot.digests = digests;
      }
    } catch (error) {
      if (!(error instanceof LinkFailure) || this.closed) throw error;
      remote.error = error.message;
      const kept = remote.snapshot ? `the links made from what it gave at ${remote.readAt} are kept` : 'no links to it yet';
      this.options.log(`links to ${remote.endpoint}: the remote ${error.message}; ${kept}, asked again at the next refresh [${error.code}]`);
      return;
    }
    remote.snapshot = snapshot;
    remote.readAt = new Date().toISOString();
    remote.error = undefined;
  }

  private rowsLimit(read: ReadSummary, limits: Set<string>, who: string, what: string): void {
    const most = this.bounds.maxRows;
    if (read.exceeded) limits.add(`${who} ${most} rows of ${what} (--link-max-rows ${most}): the first ${most} are linked [ERR_LINK_LIMIT]`);
  }

  /** Reads this archive's values rule by rule and looks each up in every remote's snapshot: the links' N-Triples lines. */
  private async match(graph: LinkedGraph, limits: Set<string>): Promise<Set<string>> {
    const signal = this.stopping.signal;
    const lines = new Set<string>();
    const made = this.remotes.map(() => 0);
    const budgets = this.remotes.map(() => new ComparisonBudget(this.bounds.maxComparisons));
    let sinceYield = 0;
    const link = (index: number, local: string, predicate: string, subjects: readonly string[]) => {
      for (const subject of subjects) {
        if (subject === local) continue;
        const line = `<${local}> <${predicate}> <${subject}> .\n`;
        if (lines.has(line)) continue;
        if (made[index]! >= this.bounds.maxLinks) {
          const most = this.bounds.maxLinks;
          limits.add(`links to ${this.remotes[index]!.endpoint}: more than ${most} (--link-max-links ${most}): the rest are not made [ERR_LINK_LIMIT]`);
          return;
        }
        made[index]!++;
        lines.add(line);
      }
    };
    const lookUp = async (
      rows: LinkRow[],
      find: (snapshot: Snapshot, value: string, budget: ComparisonBudget) => readonly string[] | undefined,
      predicate: string,
    ) => {
      for (const row of rows) {
        this.remotes.forEach((remote, index) => {
          if (!remote.snapshot) return;
          const before = budgets[index]!.used;
          const subjects = find(remote.snapshot, row.value, budgets[index]!);
          sinceYield += budgets[index]!.used - before + 1;
          if (subjects) link(index, row.subject, predicate, subjects);
        });
        if (sinceYield >= YIELD_EVERY) {
          sinceYield = 0;
          await yieldToServe();
          signal.throwIfAborted();
        }
      }
    };
    if (this.remotes.some((remote) => remote.snapshot)) {
      for (const [ruleIndex, rule] of this.rules.entries()) {
        const where = `?s a <${NAMESPACES.oai}Item> ; <${rule.local}> ?v . FILTER (!isBlank(?v))`;
        const read = await readLocal(
          graph,
          where,
          this.bounds,
          (rows) =>
            lookUp(
              rows,
              (snapshot, value, budget) => {
                const index = snapshot.rules[ruleIndex]!;
                return index instanceof SimilarIndex ? index.find(value, budget) : index.find(value);
              },
              this.predicate,
            ),
          signal,
        );
        this.rowsLimit(read, limits, 'links: the archive has more than', `<${rule.local}>`);
      }
      if (this.options.links.bytes !== false) {
        const read = await readLocal(
          graph,
          SHA256_WHERE(''),
          this.bounds,
          (rows) => lookUp(rows, (snapshot, value) => (value === EMPTY_DIGEST ? undefined : snapshot.digests?.find(value)), SAME_BYTES_PREDICATE),
          signal,
        );
        this.rowsLimit(read, limits, 'links: the archive has more than', 'digests (urn:sha256:)');
      }
    }
    budgets.forEach((budget, index) => {
      if (budget.exceeded) {
        const most = this.bounds.maxComparisons;
        limits.add(
          `links to ${this.remotes[index]!.endpoint}: the similarity rules looked at ${most} pairs (--link-max-comparisons ${most}): the pairs after them were not compared [ERR_LINK_LIMIT]`,
        );
      }
    });
    this.remotes.forEach((remote, index) => {
      remote.links = made[index]!;
    });
    return lines;
  }
}

/** `promise`, or a rejection as soon as `signal` aborts. */
function untilStopped<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const stop = () => reject(signal.reason);
    signal.addEventListener('abort', stop, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', stop));
  });
}

function addAll(index: ExactIndex | SimilarIndex, rows: LinkRow[]): void {
  for (const row of rows) index.add(row.value, row.subject);
}
