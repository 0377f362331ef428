import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ArchiverError } from '../src/core/errors.ts';
import type { ListPage } from '../src/oai/list-page.ts';
import { type ListStep, walkList } from '../src/oai/list-walk.ts';
import { DEFAULT_SOURCE_LIMITS, type SourceLimits } from '../src/oai/source-limits.ts';

const FIRST = { verb: 'ListRecords', metadataPrefix: 'oai_didl' };

/** Walks a list whose pages a script gives for each request; returns the steps and the requests. */
async function walk(
  script: (args: Record<string, string>, n: number) => ListPage,
  maxRestarts: number,
  start?: Record<string, string>,
  limits: Partial<SourceLimits> = {},
) {
  const asked: string[] = [];
  const steps: string[] = [];
  const walker = walkList({
    verb: 'ListRecords',
    first: FIRST,
    start,
    maxRestarts,
    limits: { ...DEFAULT_SOURCE_LIMITS, ...limits },
    what: 'ListRecords of the test',
    readPage: async (args) => {
      asked.push(args.resumptionToken ?? 'first');
      return script(args, asked.length);
    },
  });
  for await (const step of walker as AsyncGenerator<ListStep<ListPage>>) steps.push(step.kind === 'loop' ? `loop ${step.token}` : step.kind);
  return { asked, steps };
}

const page = (token?: string, errors: ListPage['errors'] = [], records = 1): ListPage => ({ errors, records, ...(token ? { token } : {}) });

test('tokens are followed to the last page; a saved token starts the walk', async () => {
  assert.deepEqual(await walk((args) => (args.resumptionToken === undefined ? page('a') : args.resumptionToken === 'a' ? page('b') : page()), 2), {
    asked: ['first', 'a', 'b'],
    steps: ['next', 'next', 'end'],
  });
  assert.deepEqual(await walk((args) => (args.resumptionToken === 's' ? page() : page('x')), 2, { verb: 'ListRecords', resumptionToken: 's' }), {
    asked: ['s'],
    steps: ['end'],
  });
});

test('noRecordsMatch is an empty list; other errors end it', async () => {
  assert.deepEqual(await walk(() => page(undefined, [{ code: 'noRecordsMatch', message: '' }]), 2), { asked: ['first'], steps: ['end'] });
  assert.deepEqual(await walk(() => page(undefined, [{ code: 'badArgument', message: '' }]), 2), { asked: ['first'], steps: ['failed'] });
});

test('a refused token and a token loop restart the list while restarts are left, then end it', async () => {
  // The repository forgets every token: two restarts, then the refusal ends the list.
  const bad = (args: Record<string, string>) => (args.resumptionToken ? page(undefined, [{ code: 'badResumptionToken', message: '' }]) : page('t'));
  assert.deepEqual(await walk(bad, 2), { asked: ['first', 't', 'first', 't', 'first', 't'], steps: ['next', 'restart', 'next', 'restart', 'next', 'failed'] });
  // The tokens loop a -> b -> a: each restart starts afresh, the third loop ends it.
  const loop = (args: Record<string, string>) => page(args.resumptionToken === 'a' ? 'b' : 'a');
  assert.deepEqual((await walk(loop, 1)).steps, ['next', 'next', 'restart', 'next', 'next', 'loop a']);
  assert.deepEqual((await walk(loop, 0)).steps, ['next', 'next', 'loop a']);
});

/** The coded error a walk ends with, or a failure of the test when it ends otherwise. */
async function limitHit(walking: Promise<unknown>): Promise<string> {
  const error = await walking.then(
    () => assert.fail('the walk should have ended with a limit'),
    (failure: unknown) => failure,
  );
  assert.ok(error instanceof ArchiverError, String(error));
  assert.equal(error.code, 'ERR_HARVEST_LIMIT');
  return error.message;
}

test('empty pages in a row, each with a new token, end the list at the limit; a record between them resets the count', async () => {
  let n = 0;
  const empty = () => page(`t${++n}`, [], 0);
  const message = await limitHit(walk(empty, 2, undefined, { emptyPages: 5 }));
  assert.match(message, /^ListRecords of the test: 6 pages in a row without a record, each with a new resumption token \(limit 5, --max-empty-pages\)$/);
  assert.equal(n, 6, 'the sixth empty page was the last one asked for');
  // Four empty pages, one with a record, four empty, then the end: under the limit all along.
  let m = 0;
  const mixed = () => (++m === 10 ? page() : page(`u${m}`, [], m === 5 ? 1 : 0));
  assert.equal((await walk(mixed, 2, undefined, { emptyPages: 5 })).steps.at(-1), 'end');
});

test('a list longer than --max-list-pages ends at the limit; tokens never repeat, so no loop is seen', async () => {
  let n = 0;
  const message = await limitHit(walk(() => page(`t${++n}`), 2, undefined, { listPages: 50 }));
  assert.match(message, /more than 50 pages \(limit 50, --max-list-pages\)$/);
  assert.equal(n, 50);
});

test('a resumption token longer than --max-token-length ends the list, and the message does not carry it', async () => {
  const long = 'x'.repeat(2_000_000);
  const message = await limitHit(walk(() => page(long), 2, undefined, { tokenChars: 64 * 1024 }));
  assert.match(message, /a resumption token of 2000000 characters \(limit 65536, --max-token-length\)$/);
  assert.ok(message.length < 300, `a short message, not ${message.length} characters`);
});

test('a loop longer than the tokens remembered is still ended by the page limit, with memory that does not grow', async () => {
  // 20,000 distinct tokens in a cycle: longer than the 10,000 remembered, so never seen twice.
  let n = 0;
  const message = await limitHit(walk(() => page(`c${n++ % 20_000}`), 0, undefined, { listPages: 30_000 }));
  assert.match(message, /more than 30000 pages/);
});
