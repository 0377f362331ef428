// The OAI-PMH provider core over a small in-memory item source, served over node:http: the
// source is a fixture of the ItemSource interface (what each server supplies), the provider,
// the envelope, the tokens and the request parser are the real ones.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { after, before, describe, test } from 'node:test';
import {
  coalescedBody,
  type IdentifyFacts,
  type ItemHeader,
  type ItemKey,
  type ItemRecord,
  type ItemSource,
  type ListWindow,
  OaiProvider,
  type ProviderSettings,
  type SetDescription,
} from '../src/index.ts';

interface MemoryItem {
  id: number;
  identifier: string;
  datestamp: number;
  deleted: boolean;
  set: string;
  /** The bytes its `blob` record carries By-Value. */
  size: number;
}

const NOW = 1_000_000;

/** An item source over an array, with what the tests watch: records opened and closed, pages prepared. */
class MemoryItems implements ItemSource<MemoryItem> {
  readonly endpoint = 'http://provider.test/oai';
  readonly formats = [
    { prefix: 'oai_dc', schema: 'http://www.openarchives.org/OAI/2.0/oai_dc.xsd', namespace: 'http://www.openarchives.org/OAI/2.0/oai_dc/' },
    { prefix: 'blob', schema: 'http://provider.test/blob.xsd', namespace: 'http://provider.test/blob' },
  ];
  opened = 0;
  closed = 0;
  prepared: string[][] = [];
  failPrepare = false;
  /** A record of this many bytes of text is streamed slowly (one piece per event loop turn). */
  slowRecords = false;

  constructor(public items: MemoryItem[]) {}

  identify(): IdentifyFacts {
    const live = this.items.map((item) => item.datestamp);
    return {
      repositoryName: 'Memory & co',
      adminEmails: ['a@provider.test', 'b@provider.test'],
      earliestDatestamp: live.length === 0 ? undefined : Math.min(...live),
      deletedRecord: 'persistent',
      compression: ['gzip'],
      descriptions: ['<note xmlns="http://provider.test/note">described</note>'],
    };
  }

  sets(): SetDescription[] {
    return [...new Set(this.items.map((item) => item.set))].sort().map((spec) => ({ spec, name: `the ${spec} set` }));
  }

  /** The limits the lists' first pages counted to, and what estimate() answers for a whole list (none when undefined). */
  countLimits: number[] = [];
  estimated: number | undefined;

  count(window: ListWindow, limit: number): number {
    this.countLimits.push(limit);
    return Math.min(this.selected(window).length, limit);
  }

  /** Like a catalog's highest row id: told for a whole list only. */
  estimate(window: ListWindow): number | undefined {
    return window.from === undefined && window.set === undefined ? this.estimated : undefined;
  }

  list(window: ListWindow, after: ItemKey | undefined, limit: number): MemoryItem[] {
    return this.selected(window)
      .filter((item) => after === undefined || item.datestamp > after.datestamp || (item.datestamp === after.datestamp && item.id > after.id))
      .slice(0, limit);
  }

  get(identifier: string): MemoryItem | undefined {
    return this.items.find((item) => item.identifier === identifier);
  }

  key(item: MemoryItem): ItemKey {
    return { datestamp: item.datestamp, id: item.id };
  }

  header(item: MemoryItem): ItemHeader {
    return { identifier: item.identifier, datestamp: item.datestamp, deleted: item.deleted, setSpecs: [item.set] };
  }

  byValueBytes(item: MemoryItem, prefix: string): number {
    return prefix === 'blob' && !item.deleted ? item.size : 0;
  }

  prepare(items: readonly MemoryItem[]): void {
    if (this.failPrepare) throw new Error('the records cannot be read');
    this.prepared.push(items.map((item) => item.identifier));
  }

  record(item: MemoryItem, prefix: string): ItemRecord {
    this.opened++;
    const slow = this.slowRecords;
    const text = prefix === 'blob' ? `<blob xmlns="http://provider.test/blob">${'x'.repeat(item.size)}</blob>\n` : `<dc>${item.identifier}</dc>\n`;
    return {
      header: this.header(item),
      metadata: (async function* () {
        if (!slow) {
          yield text;
          return;
        }
        for (let at = 0; at < text.length; at += 1024) {
          await new Promise((resolve) => setImmediate(resolve));
          yield text.slice(at, at + 1024);
        }
      })(),
      about: '<about><note>kept</note></about>\n',
      close: () => {
        this.closed++;
      },
    };
  }

  private selected(window: ListWindow): MemoryItem[] {
    return this.items
      .filter(
        (item) =>
          item.datestamp <= window.until &&
          (window.from === undefined || item.datestamp >= window.from) &&
          (window.set === undefined || item.set === window.set || item.set.startsWith(`${window.set}:`)),
      )
      .sort((a, b) => a.datestamp - b.datestamp || a.id - b.id);
  }
}

const KEY = Buffer.from('0123456789abcdef0123456789abcdef', 'utf8');

function settings(overrides: Partial<ProviderSettings> = {}): ProviderSettings {
  return { tokenKey: KEY, pageRecords: 3, pageIdentifiers: 4, pageBytes: 100, ...overrides };
}

/** An item per [datestamp, id], named by its id, in the set `a:b` or `c`. */
function itemsOf(keys: Array<[number, number]>, size = 10): MemoryItem[] {
  return keys.map(([datestamp, id]) => ({ id, identifier: `item:${id}`, datestamp, deleted: false, set: id % 2 === 0 ? 'a:b' : 'c', size }));
}

interface Served {
  url: string;
  close: () => Promise<void>;
}

/** Serves `source` through `provider` on 127.0.0.1, port 0: 500 before the first byte for an error, a cut-off answer after it. */
async function serve(provider: OaiProvider, source: ItemSource<MemoryItem>): Promise<Served> {
  const server: Server = createServer((req, res) => {
    const pairs = [...new URL(req.url ?? '/', 'http://provider.test').searchParams];
    provider
      .respond(source, pairs, NOW)
      .then(async (body) => {
        res.writeHead(200, { 'Content-Type': 'text/xml; charset=utf-8' });
        await pipeline(Readable.from(coalescedBody(body), { objectMode: false }), res);
      })
      .catch(() => {
        if (!res.headersSent) {
          res.writeHead(500).end();
        } else res.destroy();
      });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/oai`,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function get(served: Served, params: Record<string, string> | Array<[string, string]>): Promise<{ status: number; text: string }> {
  const response = await fetch(`${served.url}?${new URLSearchParams(params)}`);
  return { status: response.status, text: await response.text() };
}

function errorCodes(xml: string): string[] {
  return [...xml.matchAll(/<error code="([^"]+)">/g)].map((match) => match[1]!);
}

function identifiers(xml: string): string[] {
  return [...xml.matchAll(/<header[^>]*><identifier>([^<]*)<\/identifier>/g)].map((match) => match[1]!);
}

function tokenOf(xml: string): { token: string; cursor: number; completeListSize?: number } | undefined {
  const match = /<resumptionToken(?: completeListSize="(\d+)")? cursor="(\d+)">([^<]*)<\/resumptionToken>/.exec(xml);
  if (!match) return undefined;
  return { token: match[3]!, cursor: Number(match[2]), ...(match[1] !== undefined ? { completeListSize: Number(match[1]) } : {}) };
}

/** Every page of a list: the identifiers of each and its token. */
async function walk(served: Served, params: Record<string, string>): Promise<Array<{ ids: string[]; token: ReturnType<typeof tokenOf> }>> {
  const pages: Array<{ ids: string[]; token: ReturnType<typeof tokenOf> }> = [];
  let answer = await get(served, params);
  for (;;) {
    assert.deepEqual(errorCodes(answer.text), [], answer.text);
    const token = tokenOf(answer.text);
    pages.push({ ids: identifiers(answer.text), token });
    if (!token?.token) return pages;
    assert.ok(pages.length < 100, 'the list ends');
    answer = await get(served, { verb: params.verb!, resumptionToken: token.token });
  }
}

describe('paging', () => {
  // Datestamps with ties, ids not in datestamp order: the list is in (datestamp, id) order.
  const keys: Array<[number, number]> = [
    [300, 1],
    [100, 9],
    [100, 2],
    [200, 5],
    [100, 4],
    [400, 3],
    [200, 6],
  ];
  const ordered = ['item:2', 'item:4', 'item:9', 'item:5', 'item:6', 'item:1', 'item:3'];

  test('keyset resumption walks the whole list once, in (datestamp, id) order, with cursors and the list size', async () => {
    const source = new MemoryItems(itemsOf(keys));
    const served = await serve(new OaiProvider(settings()), source);
    try {
      const pages = await walk(served, { verb: 'ListIdentifiers', metadataPrefix: 'oai_dc' });
      assert.deepEqual(
        pages.map((page) => page.ids),
        [ordered.slice(0, 4), ordered.slice(4)],
      );
      assert.deepEqual(
        pages.map((page) => page.token),
        [
          { token: pages[0]!.token!.token, cursor: 0, completeListSize: 7 },
          { token: '', cursor: 4, completeListSize: 7 },
        ],
      );
      const records = await walk(served, { verb: 'ListRecords', metadataPrefix: 'oai_dc' });
      assert.deepEqual(
        records.map((page) => page.ids),
        [ordered.slice(0, 3), ordered.slice(3, 6), ordered.slice(6)],
      );
      assert.deepEqual(
        records.map((page) => page.token?.cursor),
        [0, 3, 6],
      );
      assert.equal(source.closed, source.opened, 'every record opened is closed');
    } finally {
      await served.close();
    }
  });

  test('a list longer than countLimit: its first page counts no further; completeListSize is the estimate, or left out until the last page', async () => {
    const source = new MemoryItems(itemsOf(keys));
    const served = await serve(new OaiProvider(settings({ pageIdentifiers: 3, countLimit: 5 })), source);
    try {
      // No estimate: the size is not given until the last page, which knows it.
      const unknown = await walk(served, { verb: 'ListIdentifiers', metadataPrefix: 'oai_dc' });
      assert.deepEqual(source.countLimits, [5], 'the first page counted, to the limit; the others did not');
      assert.deepEqual(
        unknown.map((page) => page.ids),
        [ordered.slice(0, 3), ordered.slice(3, 6), ordered.slice(6)],
      );
      assert.deepEqual(
        unknown.map((page) => page.token),
        [
          { token: unknown[0]!.token!.token, cursor: 0 },
          { token: unknown[1]!.token!.token, cursor: 3 },
          { token: '', cursor: 6, completeListSize: 7 },
        ],
      );
      // An estimate (a whole list's highest row id, say) past the limit stands in without a
      // count, revised up once the list passes it.
      source.estimated = 6;
      const estimated = await walk(served, { verb: 'ListIdentifiers', metadataPrefix: 'oai_dc' });
      assert.deepEqual(
        estimated.map((page) => page.token?.completeListSize),
        [6, 7, 7],
      );
      assert.deepEqual(source.countLimits, [5], 'the estimate past the limit spared the count');
      // An estimate under the limit leaves the size to the count; a count that stops at the limit takes the larger.
      source.estimated = 4;
      const low = await walk(served, { verb: 'ListIdentifiers', metadataPrefix: 'oai_dc' });
      assert.deepEqual(
        low.map((page) => page.token?.completeListSize),
        [5, 7, 7],
      );
      // Under the limit the count is exact (a set: no estimate).
      source.estimated = 1000;
      const small = await walk(served, { verb: 'ListIdentifiers', metadataPrefix: 'oai_dc', set: 'c' });
      assert.deepEqual(
        small.map((page) => page.token?.completeListSize),
        [4, 4],
      );
      assert.deepEqual(source.countLimits, [5, 5, 5]);
    } finally {
      await served.close();
    }
  });

  test('countLimit below 1 is refused when the provider is made', () => {
    assert.throws(() => new OaiProvider(settings({ countLimit: 0 })), /countLimit must be a whole number/);
  });

  test('a list that fits one page has no resumptionToken', async () => {
    const served = await serve(new OaiProvider(settings({ pageIdentifiers: 7 })), new MemoryItems(itemsOf(keys)));
    try {
      const { text } = await get(served, { verb: 'ListIdentifiers', metadataPrefix: 'oai_dc' });
      assert.deepEqual(identifiers(text), ordered);
      assert.equal(tokenOf(text), undefined);
    } finally {
      await served.close();
    }
  });

  test('from, until and set select the window; an item that changes during the list leaves it without shifting the others', async () => {
    const source = new MemoryItems(itemsOf(keys));
    const served = await serve(new OaiProvider(settings({ pageIdentifiers: 2 })), source);
    try {
      const window = await walk(served, { verb: 'ListIdentifiers', metadataPrefix: 'oai_dc', from: '1970-01-01T00:01:40Z', until: '1970-01-01T00:05:00Z' });
      assert.deepEqual(
        window.flatMap((page) => page.ids),
        ordered.slice(0, 6),
      );
      const set = await walk(served, { verb: 'ListIdentifiers', metadataPrefix: 'oai_dc', set: 'a' });
      assert.deepEqual(
        set.flatMap((page) => page.ids),
        ['item:2', 'item:4', 'item:6'],
      );

      const first = await get(served, { verb: 'ListIdentifiers', metadataPrefix: 'oai_dc' });
      assert.deepEqual(identifiers(first.text), ordered.slice(0, 2));
      // item:5 changes now: its datestamp moves past the list's until (fixed at the first page).
      source.items.find((item) => item.id === 5)!.datestamp = NOW + 10;
      const rest: string[] = [];
      let token = tokenOf(first.text)!.token;
      while (token) {
        const page = await get(served, { verb: 'ListIdentifiers', resumptionToken: token });
        rest.push(...identifiers(page.text));
        token = tokenOf(page.text)!.token;
      }
      assert.deepEqual(rest, ['item:9', 'item:6', 'item:1', 'item:3']);
    } finally {
      await served.close();
    }
  });

  test('the same token gives the same page again, and a provider with the same key resumes it', async () => {
    const source = new MemoryItems(itemsOf(keys));
    const served = await serve(new OaiProvider(settings()), source);
    const again = await serve(new OaiProvider(settings()), source);
    try {
      const token = tokenOf((await get(served, { verb: 'ListIdentifiers', metadataPrefix: 'oai_dc' })).text)!.token;
      const second = await get(served, { verb: 'ListIdentifiers', resumptionToken: token });
      assert.equal((await get(served, { verb: 'ListIdentifiers', resumptionToken: token })).text, second.text);
      assert.equal((await get(again, { verb: 'ListIdentifiers', resumptionToken: token })).text, second.text);
      assert.deepEqual(identifiers(second.text), ordered.slice(4));
    } finally {
      await served.close();
      await again.close();
    }
  });

  test('every item left the list since the previous page: noRecordsMatch', async () => {
    const source = new MemoryItems(itemsOf(keys));
    const served = await serve(new OaiProvider(settings()), source);
    try {
      const token = tokenOf((await get(served, { verb: 'ListIdentifiers', metadataPrefix: 'oai_dc' })).text)!.token;
      for (const item of source.items) item.datestamp = NOW + 10;
      assert.deepEqual(errorCodes((await get(served, { verb: 'ListIdentifiers', resumptionToken: token })).text), ['noRecordsMatch']);
    } finally {
      await served.close();
    }
  });

  test('an estimate past the limit for a window with nothing in it: noRecordsMatch, not an empty list', async () => {
    // Every item is newer than the list's until (ingested in the second it starts): an estimate counts them all the same.
    const source = new MemoryItems(itemsOf(keys.map(([, id]) => [NOW + 10, id])));
    source.estimated = 100;
    const served = await serve(new OaiProvider(settings({ countLimit: 5 })), source);
    try {
      const { text } = await get(served, { verb: 'ListRecords', metadataPrefix: 'oai_dc' });
      assert.deepEqual(errorCodes(text), ['noRecordsMatch']);
      assert.match(text, /no item matches the given from, until and set/);
      assert.deepEqual(source.countLimits, [], 'nothing was counted');
    } finally {
      await served.close();
    }
  });
});

describe('page cutting', () => {
  test('a page stops at pageRecords, or before the record that would take it past pageBytes', async () => {
    // Sizes 40, 40, 20 fit 100 exactly; 30 + 40 + 40 would be 110.
    const sizes = [40, 40, 20, 30, 40, 40, 5];
    const items = sizes.map((size, index) => ({ ...itemsOf([[100 + index, index + 1]])[0]!, size }));
    const source = new MemoryItems(items);
    const served = await serve(new OaiProvider(settings({ pageRecords: 5, pageBytes: 100 })), source);
    try {
      const pages = await walk(served, { verb: 'ListRecords', metadataPrefix: 'blob' });
      assert.deepEqual(
        pages.map((page) => page.ids.map((id) => sizes[Number(id.slice(5)) - 1])),
        [
          [40, 40, 20],
          [30, 40],
          [40, 5],
        ],
      );
      assert.deepEqual(
        pages.map((page) => page.token?.cursor),
        [0, 3, 5],
      );
      // The page's items are prepared before the first byte, the extra one read to see the list goes on is not.
      assert.deepEqual(source.prepared, [
        ['item:1', 'item:2', 'item:3'],
        ['item:4', 'item:5'],
        ['item:6', 'item:7'],
      ]);
      // pageBytes bounds By-Value bytes only: the same list in a format without any pages by records.
      const dc = await walk(served, { verb: 'ListRecords', metadataPrefix: 'oai_dc' });
      assert.deepEqual(
        dc.map((page) => page.ids.length),
        [5, 2],
      );
      const headers = await walk(served, { verb: 'ListIdentifiers', metadataPrefix: 'blob' });
      assert.deepEqual(
        headers.map((page) => page.ids.length),
        [4, 3],
      );
    } finally {
      await served.close();
    }
  });

  test('a record larger than pageBytes goes out alone, and the list goes on', async () => {
    const sizes = [10, 500, 10, 10, 700];
    const items = sizes.map((size, index) => ({ ...itemsOf([[100 + index, index + 1]])[0]!, size }));
    const served = await serve(new OaiProvider(settings({ pageRecords: 10, pageBytes: 100 })), new MemoryItems(items));
    try {
      const pages = await walk(served, { verb: 'ListRecords', metadataPrefix: 'blob' });
      assert.deepEqual(
        pages.map((page) => page.ids),
        [['item:1'], ['item:2'], ['item:3', 'item:4'], ['item:5']],
      );
      assert.deepEqual(
        pages.map((page) => page.token),
        [
          { token: pages[0]!.token!.token, cursor: 0, completeListSize: 5 },
          { token: pages[1]!.token!.token, cursor: 1, completeListSize: 5 },
          { token: pages[2]!.token!.token, cursor: 2, completeListSize: 5 },
          { token: '', cursor: 4, completeListSize: 5 },
        ],
      );
    } finally {
      await served.close();
    }
  });

  test('deleted items are headers only and carry no bytes', async () => {
    const items = itemsOf([
      [100, 1],
      [101, 2],
      [102, 3],
    ]).map((item) => ({ ...item, size: 90, deleted: item.id !== 3 }));
    const served = await serve(new OaiProvider(settings({ pageRecords: 10, pageBytes: 100 })), new MemoryItems(items));
    try {
      const { text } = await get(served, { verb: 'ListRecords', metadataPrefix: 'blob' });
      assert.deepEqual(identifiers(text), ['item:1', 'item:2', 'item:3']);
      assert.equal((text.match(/<header status="deleted">/g) ?? []).length, 2);
      assert.equal((text.match(/<metadata>/g) ?? []).length, 1);
    } finally {
      await served.close();
    }
  });

  test('a client that leaves in the middle of a page: the record being written is closed', async () => {
    const items = itemsOf([
      [100, 1],
      [101, 2],
      [102, 3],
    ]).map((item) => ({ ...item, size: 4 * 1024 * 1024 }));
    const source = new MemoryItems(items);
    source.slowRecords = true;
    const served = await serve(new OaiProvider(settings({ pageRecords: 3, pageBytes: 64 * 1024 * 1024 })), source);
    try {
      const controller = new AbortController();
      const response = await fetch(`${served.url}?verb=ListRecords&metadataPrefix=blob`, { signal: controller.signal });
      const reader = response.body!.getReader();
      await reader.read();
      controller.abort();
      await reader.closed.catch(() => undefined);
      const deadline = Date.now() + 5000;
      while (source.closed < source.opened && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
      assert.ok(source.opened >= 1 && source.opened < 3, `opened ${source.opened}`);
      assert.equal(source.closed, source.opened);
    } finally {
      await served.close();
    }
  });

  test('a page whose records cannot be read is an error before the first byte', async () => {
    const source = new MemoryItems(itemsOf([[100, 1]]));
    source.failPrepare = true;
    const served = await serve(new OaiProvider(settings()), source);
    try {
      assert.equal((await get(served, { verb: 'ListRecords', metadataPrefix: 'oai_dc' })).status, 500);
      assert.equal((await get(served, { verb: 'GetRecord', metadataPrefix: 'oai_dc', identifier: 'item:1' })).status, 500);
      // Headers need no record.
      assert.equal((await get(served, { verb: 'ListIdentifiers', metadataPrefix: 'oai_dc' })).status, 200);
      assert.equal(source.opened, 0);
    } finally {
      await served.close();
    }
  });
});

describe('resumption tokens a provider did not issue', () => {
  const source = new MemoryItems(
    itemsOf([
      [100, 1],
      [100, 2],
      [200, 3],
      [300, 4],
      [400, 5],
    ]),
  );
  let served: Served;
  let token: string;

  before(async () => {
    served = await serve(new OaiProvider(settings({ pageIdentifiers: 2, pageRecords: 2 })), source);
    token = tokenOf((await get(served, { verb: 'ListIdentifiers', metadataPrefix: 'oai_dc' })).text)!.token;
  });

  after(() => served.close());

  /** The token's body as `edit` changes it, signed again with the provider's key. */
  function resigned(edit: (body: Buffer) => Buffer): string {
    const raw = Buffer.from(token, 'base64url');
    const body = edit(Buffer.from(raw.subarray(0, raw.length - 16)));
    const tag = createHmac('sha256', KEY).update('oaibag resumptionToken\0').update(body).digest().subarray(0, 16);
    return Buffer.concat([body, tag]).toString('base64url');
  }

  test('garbage, a changed character, another key, another verb or format, an overlong token: badResumptionToken', async () => {
    const other = await serve(new OaiProvider(settings({ tokenKey: Buffer.from('another key of at least 16 bytes') })), source);
    try {
      const otherToken = tokenOf((await get(other, { verb: 'ListIdentifiers', metadataPrefix: 'oai_dc' })).text)!.token;
      const flipped = token.slice(0, 5) + (token[5] === 'A' ? 'B' : 'A') + token.slice(6);
      const cases: Array<[string, string]> = [
        ['ListIdentifiers', 'not-a-token'],
        ['ListIdentifiers', flipped],
        ['ListIdentifiers', otherToken],
        ['ListRecords', token],
        ['ListIdentifiers', 'A'.repeat(5000)],
        ['ListIdentifiers', '%%%'],
      ];
      for (const [verb, bad] of cases) {
        const answer = await get(served, { verb, resumptionToken: bad });
        assert.equal(answer.status, 200);
        assert.deepEqual(errorCodes(answer.text), ['badResumptionToken'], `${verb} ${bad.slice(0, 40)}`);
        assert.match(answer.text, /<request verb="[A-Za-z]+" resumptionToken="/);
      }
    } finally {
      await other.close();
    }
  });

  test('a token of another layout version, even one signed with the key, is badResumptionToken, not a crash', async () => {
    for (const version of [0, 2, 255]) {
      const answer = await get(served, {
        verb: 'ListIdentifiers',
        resumptionToken: resigned((body) => {
          body[0] = version;
          return body;
        }),
      });
      assert.deepEqual(errorCodes(answer.text), ['badResumptionToken'], `version ${version}`);
    }
  });

  test('a token for a format the provider no longer disseminates is badResumptionToken', async () => {
    const fewer = new MemoryItems(source.items);
    fewer.formats.splice(0, 1); // oai_dc gone
    const narrowed = await serve(new OaiProvider(settings({ pageIdentifiers: 2 })), fewer);
    try {
      assert.deepEqual(errorCodes((await get(narrowed, { verb: 'ListIdentifiers', resumptionToken: token })).text), ['badResumptionToken']);
    } finally {
      await narrowed.close();
    }
  });

  test('ListSets never issues a token, so none is accepted', async () => {
    assert.deepEqual(errorCodes((await get(served, { verb: 'ListSets', resumptionToken: token })).text), ['badResumptionToken']);
  });
});

describe('each verb', () => {
  const items = [
    ...itemsOf([
      [100, 1],
      [200, 2],
    ]),
    { id: 3, identifier: 'item:3', datestamp: 300, deleted: true, set: 'c', size: 0 },
  ];
  const source = new MemoryItems(items);
  let served: Served;

  before(async () => {
    served = await serve(new OaiProvider(settings()), source);
  });

  after(() => served.close());

  test('Identify gives the source’s facts, the endpoint and the response date as the earliest datestamp when there is no item', async () => {
    const { text } = await get(served, { verb: 'Identify' });
    assert.match(
      text,
      /<request verb="Identify">http:\/\/provider\.test\/oai<\/request>\n<Identify>\n<repositoryName>Memory &amp; co<\/repositoryName>\n<baseURL>http:\/\/provider\.test\/oai<\/baseURL>\n<protocolVersion>2\.0<\/protocolVersion>\n<adminEmail>a@provider\.test<\/adminEmail>\n<adminEmail>b@provider\.test<\/adminEmail>\n<earliestDatestamp>1970-01-01T00:01:40Z<\/earliestDatestamp>\n<deletedRecord>persistent<\/deletedRecord>\n<granularity>YYYY-MM-DDThh:mm:ssZ<\/granularity>\n<compression>gzip<\/compression>\n<description><note xmlns="http:\/\/provider\.test\/note">described<\/note><\/description>\n<\/Identify>/,
    );
    const empty = await serve(new OaiProvider(settings()), new MemoryItems([]));
    try {
      const answer = await get(empty, { verb: 'Identify' });
      assert.match(answer.text, /<earliestDatestamp>1970-01-12T13:46:40Z<\/earliestDatestamp>/);
      assert.deepEqual(errorCodes((await get(empty, { verb: 'ListSets' })).text), ['noSetHierarchy']);
      assert.deepEqual(errorCodes((await get(empty, { verb: 'ListRecords', metadataPrefix: 'oai_dc' })).text), ['noRecordsMatch']);
    } finally {
      await empty.close();
    }
  });

  test('ListMetadataFormats, ListSets and GetRecord', async () => {
    const formats = (await get(served, { verb: 'ListMetadataFormats' })).text;
    assert.deepEqual(
      [...formats.matchAll(/<metadataPrefix>([^<]+)<\/metadataPrefix>/g)].map((match) => match[1]),
      ['oai_dc', 'blob'],
    );
    assert.deepEqual(errorCodes((await get(served, { verb: 'ListMetadataFormats', identifier: 'item:1' })).text), []);
    const sets = (await get(served, { verb: 'ListSets' })).text;
    assert.match(
      sets,
      /<ListSets>\n<set><setSpec>a:b<\/setSpec><setName>the a:b set<\/setName><\/set>\n<set><setSpec>c<\/setSpec><setName>the c set<\/setName><\/set>\n<\/ListSets>/,
    );
    const record = (await get(served, { verb: 'GetRecord', metadataPrefix: 'oai_dc', identifier: 'item:2' })).text;
    assert.match(
      record,
      /<GetRecord>\n<record><header><identifier>item:2<\/identifier><datestamp>1970-01-01T00:03:20Z<\/datestamp><setSpec>a:b<\/setSpec><\/header>\n<metadata>\n<dc>item:2<\/dc>\n<\/metadata>\n<about><note>kept<\/note><\/about>\n<\/record>\n<\/GetRecord>\n<\/OAI-PMH>\n$/,
    );
    const deleted = (await get(served, { verb: 'GetRecord', metadataPrefix: 'blob', identifier: 'item:3' })).text;
    assert.match(
      deleted,
      /<record><header status="deleted"><identifier>item:3<\/identifier><datestamp>1970-01-01T00:05:00Z<\/datestamp><setSpec>c<\/setSpec><\/header>\n<\/record>/,
    );
    assert.equal(source.closed, source.opened);
  });

  test('the errors of each verb, and the request element echoed only when the arguments are legal', async () => {
    // The query string sent, the error codes expected, whether the arguments are echoed.
    const cases: Array<[string, string[], boolean]> = [
      ['', ['badVerb'], false],
      ['verb=identify', ['badVerb'], false],
      ['verb=Identify&verb=Identify', ['badVerb'], false],
      ['verb=Identify&set=c', ['badArgument'], false],
      ['verb=ListMetadataFormats&identifier=item:404', ['idDoesNotExist'], true],
      ['verb=ListMetadataFormats&identifier=item:3', ['noMetadataFormats'], true],
      ['verb=ListMetadataFormats&metadataPrefix=oai_dc', ['badArgument'], false],
      ['verb=ListSets&set=c', ['badArgument'], false],
      ['verb=GetRecord', ['badArgument', 'badArgument'], false],
      ['verb=GetRecord&identifier=item:1', ['badArgument'], false],
      ['verb=GetRecord&identifier=item:1&metadataPrefix=marc21', ['cannotDisseminateFormat'], true],
      ['verb=GetRecord&identifier=item:404&metadataPrefix=oai_dc', ['idDoesNotExist'], true],
      ['verb=ListIdentifiers', ['badArgument'], false],
      ['verb=ListIdentifiers&metadataPrefix=oai_dc&resumptionToken=x', ['badArgument'], false],
      ['verb=ListIdentifiers&metadataPrefix=oai_dc&from=2020-01-01&until=2019-01-01', ['badArgument'], false],
      ['verb=ListIdentifiers&metadataPrefix=marc21', ['cannotDisseminateFormat'], true],
      ['verb=ListIdentifiers&metadataPrefix=oai_dc&set=nowhere', ['noRecordsMatch'], true],
      ['verb=ListRecords&metadataPrefix=oai_dc&from=1971-01-01', ['noRecordsMatch'], true],
      ['verb=ListRecords&metadataPrefix=oai_dc&until=1969-12-31', ['noRecordsMatch'], true],
      ['verb=ListRecords&metadataPrefix=oai_dc&set=a:b:', ['badArgument'], false],
      ['verb=ListRecords&resumptionToken=x&until=2019-01-01', ['badArgument'], false],
    ];
    for (const [query, codes, echoed] of cases) {
      const label = query || '(no argument)';
      const { status, text } = await get(served, [...new URLSearchParams(query)]);
      assert.equal(status, 200, label);
      assert.deepEqual(errorCodes(text), codes, label);
      assert.match(
        text,
        echoed ? /<request verb="[^"]+"[^>]*>http:\/\/provider\.test\/oai<\/request>/ : /<request>http:\/\/provider\.test\/oai<\/request>/,
        label,
      );
      assert.match(text, /<\/OAI-PMH>\n$/, label);
    }
  });

  test('an identifier is quoted in an error, cut short when long', async () => {
    const long = `item:${'9'.repeat(300)}`;
    const { text } = await get(served, { verb: 'GetRecord', metadataPrefix: 'oai_dc', identifier: long });
    assert.match(text, new RegExp(`no item has the identifier "item:${'9'.repeat(95)}…"</error>`));
  });
});

test('a provider refuses page bounds below 1 and a short token key', () => {
  for (const bad of [{ pageRecords: 0 }, { pageIdentifiers: -1 }, { pageBytes: 0.5 }, { tokenKey: Buffer.alloc(8) }]) {
    assert.throws(() => new OaiProvider(settings(bad)), RangeError, JSON.stringify(bad));
  }
});
