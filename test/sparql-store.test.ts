// `serve --sparql-store` against a real Virtuoso Open Source 7 (test/virtuoso-server.ts): the
// archive's graph written into the store and kept in step with harvests (a change and a
// deletion), by SPARQL Update and by the Graph Store Protocol (through a loopback relay that
// counts its POSTs), the documented example queries answering as the embedded store does, a restarted
// serve resuming from its cursor, the store down during a harvest (a visible failure, then the
// catch-up), updates and federated queries refused, and the time, row and size bounds of
// `/sparql` holding against the remote store.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Parser as N3Parser } from 'n3';
import { type ArchiveServer, type ArchiveServerOptions, Catalog, startArchiveServer } from '../packages/archiver/src/index.ts';
import type { Repository } from '../packages/repository/src/index.ts';
import { HarvestedSite, SPARQL_PREFIXES as PREFIXES, YEAR_2000 } from './harvested-site.ts';
import { RUN_AS, readOnlyCopy, SKIP_CLI, tree } from './read-only-copy.ts';
import { startVirtuoso, VIRTUOSO_SKIP, type Virtuoso } from './virtuoso-server.ts';

const BIN = new URL('../packages/archiver/dist/bundle/oaibag.js', import.meta.url).pathname;
const DOCS = readFileSync(new URL('../docs/linked-data.md', import.meta.url), 'utf8');
/** The example queries of docs/linked-data.md, in its order. */
const EXAMPLES = [...DOCS.slice(DOCS.indexOf('## Example queries')).matchAll(/```sparql\n([\s\S]*?)```/g)].map((match) => match[1]!).slice(0, 4);
const XSD_DATE_TIME = 'http://www.w3.org/2001/XMLSchema#dateTime';

let fixture: HarvestedSite;
let archive: string;
let repository: Repository;
let virtuoso: Virtuoso;
const logged: string[] = [];

function storeOptions(): NonNullable<ArchiveServerOptions['sparqlStore']> {
  return { queryUrl: virtuoso.queryUrl, updateUrl: virtuoso.updateUrl, credentials: { user: virtuoso.user, password: virtuoso.password } };
}

async function serveRemote(extra: Partial<ArchiveServerOptions> = {}): Promise<ArchiveServer> {
  return startArchiveServer({ archiveDir: archive, sparqlStore: storeOptions(), log: (line) => logged.push(line), ...extra });
}

/**
 * A loopback relay to `target` (the store's Graph Store Protocol endpoint) that counts the
 * N-Triples POSTs the store accepted: proof that writes took that way.
 */
async function countingRelay(target: string): Promise<{ url: string; accepted: () => number; server: Server }> {
  let accepted = 0;
  const server = createServer(async (request, response) => {
    const body: Buffer[] = [];
    for await (const part of request) body.push(part as Buffer);
    const headers = Object.fromEntries(
      Object.entries(request.headers).filter(([name, value]) => typeof value === 'string' && !['host', 'connection', 'content-length'].includes(name)),
    ) as Record<string, string>;
    const answer = await fetch(target + request.url!.slice(request.url!.indexOf('?')), {
      method: request.method!,
      headers,
      ...(body.length > 0 ? { body: Buffer.concat(body) } : {}),
    });
    if (answer.ok && request.method === 'POST' && headers['content-type'] === 'application/n-triples') accepted++;
    const challenge = answer.headers.get('www-authenticate');
    response.writeHead(answer.status, challenge ? { 'WWW-Authenticate': challenge } : {});
    response.end(Buffer.from(await answer.arrayBuffer()));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}/sparql-graph-crud-auth`, accepted: () => accepted, server };
}

/** Waits until the follower has written everything the catalog holds (and says so at /metrics). */
async function inStep(server: ArchiveServer): Promise<void> {
  for (let attempt = 0; attempt < 60; attempt++) {
    await server.sparqlStore!.nextAttempt();
    const state = server.sparqlStore!.state();
    if (state.failures === 0 && state.writtenAt !== undefined && state.writtenVersion === state.lastVersion) return;
  }
  assert.fail(`the store did not catch up: ${JSON.stringify(server.sparqlStore!.state())}`);
}

async function sparql(server: ArchiveServer, query: string, accept = 'application/sparql-results+json', init: RequestInit = {}): Promise<Response> {
  return fetch(`${server.baseUrl}/sparql?query=${encodeURIComponent(query)}`, { headers: { Accept: accept }, ...init });
}

/** A select query's solutions, each a line of its terms with the server's base URL written B, sorted. */
async function solutions(server: ArchiveServer, query: string): Promise<string[]> {
  const response = await sparql(server, query);
  const text = await response.text();
  assert.equal(response.status, 200, text);
  const json = JSON.parse(text) as {
    head: { vars: string[] };
    results: { bindings: Array<Record<string, { type: string; value: string; datatype?: string }>> };
  };
  return json.results.bindings
    .map((row) =>
      json.head.vars
        .map((name) => {
          const term = row[name];
          if (!term) return '-';
          // Virtuoso keeps a dateTime as written (…35.180Z), oxigraph gives its canonical form (…35.18Z).
          const value = term.datatype === XSD_DATE_TIME ? new Date(term.value).toISOString() : term.value.split(server.baseUrl).join('B');
          return `${term.type}:${value}${term.datatype ? `^^${term.datatype}` : ''}`;
        })
        .join(' '),
    )
    .sort();
}

async function count(server: ArchiveServer, where: string): Promise<number> {
  const [line] = await solutions(server, `${PREFIXES}SELECT (COUNT(*) AS ?n) WHERE { ${where} }`);
  return Number(/:(\d+)/.exec(line!)![1]);
}

/** Each documented example answers on `remote` as on `embedded`. */
async function sameAnswers(remote: ArchiveServer, embedded: ArchiveServer): Promise<void> {
  assert.equal(EXAMPLES.length, 4, 'docs/linked-data.md has its four example queries');
  for (const query of EXAMPLES) assert.deepEqual(await solutions(remote, query), await solutions(embedded, query), query);
  const all = `${PREFIXES}SELECT ?s ?p ?o WHERE { ?s ?p ?o }`;
  assert.deepEqual(await solutions(remote, all), await solutions(embedded, all), 'every triple');
}

/** Asks Virtuoso directly (not through serve). */
async function storeCount(where: string): Promise<number> {
  const response = await fetch(virtuoso.queryUrl, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', Accept: 'application/sparql-results+json' },
    body: new URLSearchParams({ query: `select (count(*) as ?n) where { ${where} }` }).toString(),
  });
  const json = (await response.json()) as { results: { bindings: Array<{ n: { value: string } }> } };
  return Number(json.results.bindings[0]!.n.value);
}

async function storeUpdate(update: string): Promise<void> {
  virtuoso.update(update);
}

before(async () => {
  if (VIRTUOSO_SKIP) return;
  virtuoso = await startVirtuoso();
  fixture = await HarvestedSite.start('oaibag-sparql-store-', {
    'index.html': '<p>home</p>',
    'a.txt': 'a',
    'docs/report.pdf': '%PDF-1.4 report',
    'img/logo.png': 'png',
    'gone.txt': 'soon deleted',
    'é è/naïve “quoted”.txt': 'text with "quotes" and \\ backslash',
  });
  ({ archive, repository } = fixture);
});

after(async () => {
  await fixture?.close();
  await virtuoso?.remove();
});

test('the graph is written into the store and kept in step: a change and a deletion arrive; answers as the embedded store gives', {
  skip: VIRTUOSO_SKIP,
}, async () => {
  const relay = await countingRelay(virtuoso.dataUrl);
  // Two followers, each its own graph (its own base URL): one writes by SPARQL Update only, one
  // POSTs its triples by the Graph Store Protocol.
  const remote = await serveRemote();
  const posting = await serveRemote({ sparqlStore: { ...storeOptions(), dataUrl: relay.url } });
  const embedded = await startArchiveServer({ archiveDir: archive });
  try {
    await inStep(remote);
    await inStep(posting);
    assert.ok(relay.accepted() > 0, 'the triples were POSTed by the Graph Store Protocol');
    for (const server of [remote, posting]) {
      assert.equal(await count(server, '?i a oai:Item'), 6);
      await sameAnswers(server, embedded);
    }
    // The graph is the archive's named graph; the cursor of a writable archive is in its catalog, not in the store.
    assert.ok((await storeCount(`graph <${remote.baseUrl}/graph> { ?s ?p ?o }`)) > 50);
    assert.equal(await storeCount(`graph <${remote.baseUrl}/graph#oaibag-cursor> { ?s ?p ?o }`), 0);
    const posted = relay.accepted();

    fixture.write('index.html', '<p>home, edited</p>', YEAR_2000 + 86_400);
    fixture.write('docs/report.pdf', '%PDF-1.4 report, second edition', YEAR_2000 + 86_400);
    fixture.remove('gone.txt');
    await fixture.harvestAgain();
    await inStep(remote);
    await inStep(posting);
    // The embedded store reads the catalog at most once a second: its last read, before the
    // harvest, may be less than a second old when a quick harvest ends (seen on a fast machine).
    await new Promise((resolve) => setTimeout(resolve, 1100));
    assert.ok(relay.accepted() > posted, 'the second harvest was POSTed too');
    for (const server of [remote, posting]) {
      assert.equal(await count(server, '?v oaibag:change "modified"'), 2);
      assert.equal(await count(server, '?i prov:qualifiedInvalidation ?d'), 1);
      // The second harvest's status was written as running, then rewritten: one status each.
      assert.equal(await count(server, '?h a prov:Activity ; oaibag:status ?s'), 2);
      assert.equal(await count(server, '?h a prov:Activity ; oaibag:status "complete"'), 2);
      await sameAnswers(server, embedded);
      const pdfs = await solutions(server, EXAMPLES[0]!);
      assert.equal(pdfs.length, 1, 'the PDF changed in the last harvest');
    }
  } finally {
    await remote.close();
    await posting.close();
    await embedded.close();
    relay.server.close();
  }
});

test('a restarted serve resumes from its cursor: nothing written again, nothing missed', { skip: VIRTUOSO_SKIP }, async () => {
  let remote = await serveRemote();
  await inStep(remote);
  const graph = `${remote.baseUrl}/graph`;
  const triples = await storeCount(`graph <${graph}> { ?s ?p ?o }`);
  await remote.close();
  // A triple only the store has: had the graph been cleared and written again, it would be gone.
  await storeUpdate(`INSERT DATA { GRAPH <${graph}> { <urn:test:sentinel> <urn:test:p> "kept" } }`);
  fixture.write('new.txt', 'added while serve was stopped', YEAR_2000 + 2 * 86_400);
  await fixture.harvestAgain();
  // The same base URL, so the same graph and cursor.
  const port = Number(new URL(remote.baseUrl).port);
  remote = await serveRemote({ port });
  const embedded = await startArchiveServer({ archiveDir: archive });
  try {
    await inStep(remote);
    assert.equal(await storeCount(`graph <${graph}> { <urn:test:sentinel> ?p ?o }`), 1, 'resumed, not written again');
    assert.equal(await count(remote, `?i dcterms:identifier ?id FILTER (strends(str(?id), "new.txt"))`), 1);
    await storeUpdate(`DELETE DATA { GRAPH <${graph}> { <urn:test:sentinel> <urn:test:p> "kept" } }`);
    await sameAnswers(remote, embedded);
    assert.ok((await storeCount(`graph <${graph}> { ?s ?p ?o }`)) > triples);
  } finally {
    await remote.close();
    await embedded.close();
  }
});

test('the store down during a harvest: the failure is logged and at /metrics, /sparql answers 503; then it catches up', { skip: VIRTUOSO_SKIP }, async () => {
  const remote = await serveRemote();
  const embedded = await startArchiveServer({ archiveDir: archive });
  try {
    await inStep(remote);
    await virtuoso.stop();
    fixture.write('a.txt', 'a, changed while the store was down', YEAR_2000 + 3 * 86_400);
    await fixture.harvestAgain();
    await remote.sparqlStore!.nextAttempt();
    await remote.sparqlStore!.nextAttempt();
    const metrics = await (await fetch(`${remote.baseUrl}/metrics`)).text();
    assert.match(metrics, /^oaibag_sparql_store_up\{store="[^"]+"\} 0$/m);
    assert.match(metrics, /^oaibag_sparql_store_failed_attempts\{store="[^"]+"\} [2-9]$/m);
    assert.match(metrics, /^oaibag_sparql_store_versions_behind\{store="[^"]+"\} [1-9]/m);
    assert.ok(
      logged.some((line) => line.includes('could not be written') && line.includes('retrying in')),
      logged.join('\n'),
    );
    const down = await sparql(remote, 'select * where { ?s ?p ?o } limit 1');
    assert.equal(down.status, 503);
    assert.match(await down.text(), /the SPARQL store at .* is not answering/);
    // OAI-PMH does not need the store.
    assert.equal((await fetch(`${remote.baseUrl}/oai?verb=Identify`)).status, 200);

    await virtuoso.start();
    await inStep(remote);
    assert.ok(logged.some((line) => line.includes('is written again')));
    assert.match(await (await fetch(`${remote.baseUrl}/metrics`)).text(), /^oaibag_sparql_store_versions_behind\{store="[^"]+"\} 0$/m);
    await sameAnswers(remote, embedded);
  } finally {
    await remote.close();
    await embedded.close();
  }
});

test('read-only: updates and federated queries are refused before they reach the store', { skip: VIRTUOSO_SKIP }, async () => {
  const remote = await serveRemote();
  try {
    await inStep(remote);
    const graph = `${remote.baseUrl}/graph`;
    const before = await storeCount(`graph <${graph}> { ?s ?p ?o }`);
    const insert = `INSERT DATA { GRAPH <${graph}> { <urn:x> <urn:y> "z" } }`;
    const attempts = [
      fetch(`${remote.baseUrl}/sparql?update=${encodeURIComponent(insert)}`),
      fetch(`${remote.baseUrl}/sparql`, { method: 'POST', headers: { 'Content-Type': 'application/sparql-update' }, body: insert }),
      sparql(remote, insert),
      sparql(remote, `DELETE WHERE { GRAPH <${graph}> { ?s ?p ?o } }`),
      sparql(remote, 'PREFIX x: <urn:x> CLEAR ALL'),
    ];
    for (const response of await Promise.all(attempts)) {
      assert.equal(response.status, 400);
      assert.match(await response.text(), /read-only/);
    }
    const federated = await sparql(remote, 'select * where { SERVICE <http://127.0.0.1:9/sparql> { ?s ?p ?o } }');
    assert.equal(federated.status, 400);
    assert.match(await federated.text(), /SERVICE/);
    const pragma = await sparql(remote, 'define get:soft "replace" select * where { ?s ?p ?o }');
    assert.equal(pragma.status, 400);
    // A string that merely says SERVICE is a query like any other.
    assert.equal((await sparql(remote, 'select * where { ?s ?p "SERVICE <x>" }')).status, 200);
    const wrong = await sparql(remote, 'select where {');
    assert.equal(wrong.status, 400);
    assert.match(await wrong.text(), /^the query cannot be run: /);
    assert.equal(await storeCount(`graph <${graph}> { ?s ?p ?o }`), before);
    // Other graphs of the store are not the archive's: not seen without naming them.
    assert.equal(await count(remote, '?s <urn:test:other> ?o'), 0);
  } finally {
    await remote.close();
  }
});

test('the bounds hold against the remote store: rows, answer size, query size, time', { skip: VIRTUOSO_SKIP }, async () => {
  const remote = await serveRemote({ sparqlRowLimit: 3, sparqlTimeoutMs: 1000, sparqlBounds: { resultBytes: 4096, queryBytes: 1024 } });
  try {
    await inStep(remote);
    const rows = await sparql(remote, 'select ?s ?p ?o where { ?s ?p ?o }', 'text/csv');
    assert.equal(rows.status, 200);
    assert.equal(rows.headers.get('sparql-results-truncated'), 'the first 3 solutions');
    assert.equal((await rows.text()).trim().split(/\r?\n/).length, 4, 'a header and three rows');
    // As many solutions as the limit: not cut.
    const three = await sparql(remote, 'select ?x where { values ?x { 1 2 3 } }');
    assert.equal(three.headers.get('sparql-results-truncated'), null);
    assert.equal(((await three.json()) as { results: { bindings: unknown[] } }).results.bindings.length, 3);
    const large = await sparql(remote, 'construct { ?s ?p ?o } where { ?s ?p ?o }', 'application/n-triples');
    assert.equal(large.status, 503);
    assert.equal(await large.text(), 'the result is larger than the limit (4K, --sparql-result-size)\n');
    const long = await sparql(remote, `select * where { ?s ?p "${'x'.repeat(2000)}" }`);
    assert.equal(long.status, 413);
    const slow = await sparql(remote, 'select (count(*) as ?n) where { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i . ?j ?k ?l . ?m ?n2 ?o }');
    assert.equal(slow.status, 503);
    assert.equal(await slow.text(), 'the query ran past the time limit (1 s) and was stopped\n');
    // And the next query is answered.
    assert.equal((await sparql(remote, 'ask { ?s ?p ?o }')).status, 200);
  } finally {
    await remote.close();
  }
});

test('the formats through the remote store: XML, CSV, TSV, ASK, Turtle and N-Triples; /data and /page', { skip: VIRTUOSO_SKIP }, async () => {
  const remote = await serveRemote();
  const embedded = await startArchiveServer({ archiveDir: archive });
  try {
    await inStep(remote);
    const query = `${PREFIXES}select ?i ?id where { ?i a oai:Item ; dcterms:identifier ?id } order by ?id`;
    for (const type of ['application/sparql-results+xml', 'text/csv', 'text/tab-separated-values']) {
      const [a, b] = await Promise.all([sparql(remote, query, type), sparql(embedded, query, type)]);
      assert.match(String(a.headers.get('content-type')), new RegExp(`^${type.replace('+', '\\+')}`));
      // Line by line, in any order: Virtuoso orders strings otherwise than oxigraph (docs/linked-data.md).
      const lines = async (response: Response, base: string) => (await response.text()).split(base).join('B').split(/\r?\n/).sort();
      assert.deepEqual(await lines(a, remote.baseUrl), await lines(b, embedded.baseUrl), type);
    }
    for (const ask of ['ask { ?s ?p ?o }', 'ask { <urn:nothing> ?p ?o }']) {
      for (const type of ['application/sparql-results+json', 'application/sparql-results+xml', 'text/csv']) {
        const [a, b] = await Promise.all([sparql(remote, ask, type), sparql(embedded, ask, type)]);
        assert.equal(await a.text(), await b.text(), `${ask} as ${type}`);
      }
    }
    const construct = `${PREFIXES}construct { ?h ?p ?o } where { ?h a prov:Activity ; ?p ?o }`;
    for (const type of ['text/turtle', 'application/n-triples']) {
      const [a, b] = await Promise.all([sparql(remote, construct, type), sparql(embedded, construct, type)]);
      assert.match(String(a.headers.get('content-type')), new RegExp(`^${type}`));
      const parse = async (response: Response, base: string) =>
        new N3Parser({ format: type })
          .parse((await response.text()).split(base).join('http://b'))
          .map((quad) => {
            const object =
              quad.object.termType === 'Literal' && quad.object.datatype.value === XSD_DATE_TIME
                ? new Date(quad.object.value).toISOString()
                : quad.object.value;
            return `${quad.subject.value} ${quad.predicate.value} ${object}`;
          })
          .sort();
      assert.deepEqual(await parse(a, remote.baseUrl), await parse(b, embedded.baseUrl), type);
    }
    const data = await fetch(`${remote.baseUrl}/data/source/1`, { headers: { Accept: 'application/n-triples' } });
    assert.equal(data.status, 200);
    assert.ok(new N3Parser({ format: 'application/n-triples' }).parse(await data.text()).length >= 3);
    const page = await fetch(`${remote.baseUrl}/page/source/1`);
    assert.equal(page.status, 200);
    assert.equal((await fetch(`${remote.baseUrl}/resource/source/999`)).status, 404);
  } finally {
    await remote.close();
    await embedded.close();
  }
});

test('oaibag serve --sparql-store: the account from a password file; the options go together', { skip: VIRTUOSO_SKIP }, async () => {
  const args = ['serve', '--archive', archive, '--port', '0', '--access-log', '/dev/null', '--sparql-store', virtuoso.queryUrl];
  const child = spawn(
    process.execPath,
    [
      BIN,
      ...args,
      '--sparql-store-update',
      virtuoso.updateUrl,
      '--sparql-store-data',
      virtuoso.dataUrl,
      '--sparql-store-user',
      virtuoso.user,
      '--sparql-store-password-file',
      virtuoso.passwordFile,
    ],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  try {
    let stderr = '';
    child.stderr!.setEncoding('utf8');
    const base = await new Promise<string>((resolve, reject) => {
      child.stderr!.on('data', (text: string) => {
        stderr += text;
        const match = / at (http:\/\/\S+)\/oai /.exec(stderr);
        if (match) resolve(match[1]!);
      });
      child.once('exit', () => reject(new Error(stderr)));
    });
    let metrics = '';
    for (let attempt = 0; attempt < 100 && !/oaibag_sparql_store_versions_behind\{[^}]*\} 0/.test(metrics); attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 300));
      metrics = await (await fetch(`${base}/metrics`)).text();
    }
    assert.match(metrics, /^oaibag_sparql_store_up\{store="[^"]+"\} 1$/m, stderr);
    const answer = await fetch(`${base}/sparql?query=${encodeURIComponent(`${PREFIXES}select (count(*) as ?n) where { ?i a oai:Item }`)}`, {
      headers: { Accept: 'text/csv' },
    });
    assert.match(await answer.text(), /^n\r\n\d+\r\n$/);
    assert.doesNotMatch(stderr, new RegExp(virtuoso.password));
  } finally {
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
  }
  for (const [option, said] of [
    [['--sparql-store-user', 'oaibag'], /--sparql-store-user and --sparql-store-password-file go together/],
    [['--sparql-store-data', virtuoso.dataUrl], /--sparql-store-data needs --sparql-store/],
  ] as const) {
    const lone = spawn(process.execPath, [BIN, 'serve', '--archive', archive, ...option], { stdio: ['ignore', 'ignore', 'pipe'] });
    let text = '';
    lone.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      text += chunk;
    });
    const code = await new Promise((resolve) => lone.once('exit', resolve));
    assert.equal(code, 2);
    assert.match(text, said);
  }
});

/** `oaibag serve ARGS` as a process (as a user the archive's modes bind, with `asUser`); its base URL and a way to stop it. */
async function serveCommand(args: string[], asUser = false): Promise<{ base: string; stderr: () => string; stop: () => Promise<number | null> }> {
  const [command, ...prefix] = asUser ? [...RUN_AS!, process.execPath] : [process.execPath];
  const child = spawn(command!, [...prefix, BIN, 'serve', '--port', '0', '--access-log', '/dev/null', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.setEncoding('utf8');
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  const base = await new Promise<string>((resolve, reject) => {
    child.stderr!.on('data', (text: string) => {
      stderr += text;
      const match = / at (http:\/\/\S+)\/oai /.exec(stderr);
      if (match) resolve(match[1]!);
    });
    child.once('exit', () => reject(new Error(stderr)));
  });
  return {
    base,
    stderr: () => stderr,
    stop: async () => {
      child.kill('SIGTERM');
      return exited;
    },
  };
}

/** Waits until serve's /metrics says the store holds every version. */
async function metricsInStep(base: string): Promise<string> {
  let metrics = '';
  for (let attempt = 0; attempt < 200 && !/^oaibag_sparql_store_versions_behind\{[^}]*\} 0$/m.test(metrics); attempt++) {
    await new Promise((resolve) => setTimeout(resolve, 300));
    metrics = await (await fetch(`${base}/metrics`)).text();
  }
  return metrics;
}

test('a read-only archive: the cursor is kept in the store, in a graph of its own, and a restart resumes from it', {
  skip: VIRTUOSO_SKIP || SKIP_CLI,
}, async () => {
  mkdirSync(join(fixture.work, 'read-only'));
  const copy = readOnlyCopy(archive, join(fixture.work, 'read-only'));
  const before = tree(copy);
  const graph = 'urn:oaibag:test:read-only';
  const args = ['--archive', copy, '--sparql-store', virtuoso.queryUrl, '--sparql-store-update', virtuoso.updateUrl, '--sparql-store-graph', graph];
  const account = ['--sparql-store-user', virtuoso.user, '--sparql-store-password-file', virtuoso.passwordFile];
  let serve = await serveCommand([...args, ...account], true);
  try {
    assert.match(await metricsInStep(serve.base), /^oaibag_sparql_store_up\{[^}]*\} 1$/m, serve.stderr());
    assert.match(serve.stderr(), /the archive is read-only: the SPARQL store's cursor is kept in the store, graph <urn:oaibag:test:read-only#oaibag-cursor>/);
  } finally {
    assert.equal(await serve.stop(), 0, serve.stderr());
  }
  assert.equal(await storeCount(`graph <${graph}#oaibag-cursor> { ?s <urn:oaibag:terms:cursor> ?c }`), 1);
  const triples = await storeCount(`graph <${graph}> { ?s ?p ?o }`);
  assert.ok(triples > 50);
  await storeUpdate(`INSERT DATA { GRAPH <${graph}> { <urn:test:sentinel> <urn:test:p> "kept" } }`);
  // The same port, so the same base URL: the same URIs and cursor.
  serve = await serveCommand([...args, ...account, '--port', new URL(serve.base).port], true);
  try {
    await metricsInStep(serve.base);
    assert.equal(await storeCount(`graph <${graph}> { <urn:test:sentinel> ?p ?o }`), 1, 'resumed, not written again');
  } finally {
    assert.equal(await serve.stop(), 0, serve.stderr());
  }
  assert.deepEqual(tree(copy), before, 'nothing written to the read-only archive');
});

test('an item whose MIME type changes in later versions moves to the new set, in the store and the embedded one alike', { skip: VIRTUOSO_SKIP }, async () => {
  const remote = await serveRemote();
  const embedded = await startArchiveServer({ archiveDir: archive });
  const identifier = `${repository.baseUrl}/a.txt`;
  const setsOf = (server: ArchiveServer) =>
    solutions(
      server,
      `${PREFIXES}SELECT ?set WHERE { ?i dcterms:identifier "${identifier}" ; dcterms:isPartOf ?set FILTER (CONTAINS(STR(?set), "/set/mime")) }`,
    );
  const catalog = Catalog.open(archive, { create: false });
  /** A new version of a.txt of `mimeType`: the same bytes, another datestamp. */
  const version = (mimeType: string, day: number) => {
    const source = catalog.source(`${repository.baseUrl}/oai`)!;
    const latest = catalog.latestVersion(source.id, identifier)!;
    const datestamp = `2001-01-${String(day).padStart(2, '0')}T00:00:00Z`;
    const { bagPath, record, size, sha256 } = latest;
    catalog.recordVersion({ sourceId: source.id, identifier, datestamp, size, sha256, mimeType, bagPath, record, parts: [sha256] });
  };
  const both = async (expected: string[]) => {
    await inStep(remote);
    await new Promise((resolve) => setTimeout(resolve, 1100)); // the embedded store reads the catalog at most once a second
    assert.deepEqual(await setsOf(remote), expected, 'the SPARQL store');
    assert.deepEqual(await setsOf(embedded), expected, 'the embedded store');
  };
  try {
    await both(['uri:B/resource/set/mime%3Atext%3Aplain']);
    // Two versions in one transaction (the store sees both at once: a chain), then one more.
    catalog.transaction(() => {
      version('application/pdf', 2);
      version('image/png', 3);
    });
    await both(['uri:B/resource/set/mime%3Aimage%3Apng']);
    version('text/plain', 4);
    await both(['uri:B/resource/set/mime%3Atext%3Aplain']);
    await sameAnswers(remote, embedded);
  } finally {
    catalog.close();
    await remote.close();
    await embedded.close();
  }
});
