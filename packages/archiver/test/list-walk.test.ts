import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ListPage } from '../src/oai/list-page.ts';
import { type ListStep, walkList } from '../src/oai/list-walk.ts';

const FIRST = { verb: 'ListRecords', metadataPrefix: 'oai_didl' };

/** Walks a list whose pages a script gives for each request; returns the steps and the requests. */
async function walk(script: (args: Record<string, string>, n: number) => ListPage, maxRestarts: number, start?: Record<string, string>) {
  const asked: string[] = [];
  const steps: string[] = [];
  const walker = walkList({
    verb: 'ListRecords',
    first: FIRST,
    start,
    maxRestarts,
    readPage: async (args) => {
      asked.push(args.resumptionToken ?? 'first');
      return script(args, asked.length);
    },
  });
  for await (const step of walker as AsyncGenerator<ListStep<ListPage>>) steps.push(step.kind === 'loop' ? `loop ${step.token}` : step.kind);
  return { asked, steps };
}

const page = (token?: string, errors: ListPage['errors'] = []): ListPage => ({ errors, ...(token ? { token } : {}) });

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
