// The steps of the scale benchmark (scale.mjs), each timed with the CPU time and peak RSS of every
// process taking part: `oaibag` (the command the step runs), the repository (oaibag-repository's
// library in bench/scale-repository.mjs) and `oaibag serve`. A step's record:
//   { step, seconds, processes: { oaibag?, repository?, serve? }, facts, ok, timedOut?, error? }
// where each process is { cpuSeconds, peakRssBytes } (user + system CPU of that process alone).
import { existsSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { loadBetterSqlite3, ROOT } from './repository-common.mjs';
import { listPageTimes, runMeasured, startJsonChild, startServe, watchServer } from './scale-process.mjs';
import { changeSite, touchSite } from './scale-site.mjs';

/** Steps over a real site, in the order they run. */
export const SITE_STEPS = ['scan', 'baseline', 'noop', 'touch', 'change', 'urls'];
export const ARCHIVE_STEPS = ['serve-harvest', 'sparql', 'restore-dry', 'restore', 'audit', 'export-rdf', 'verify', 'reindex'];
export const STEPS = [...SITE_STEPS, ...ARCHIVE_STEPS];
/** Steps over a synthetic catalog (no payload read, no bag written). */
export const SYNTHETIC_STEPS = ['serve-pages', 'restore-dry', 'audit', 'export-rdf'];

const processOf = (run) => ({ cpuSeconds: run.cpuSeconds, peakRssBytes: run.peakRssBytes });

/** A step's record from an `oaibag` run (and the servers' figures over the same time). */
function record(step, run, { servers = {}, facts = {}, seconds = run.seconds } = {}) {
  const ok = run.exitCode === 0 && !run.timedOut;
  return {
    step,
    seconds,
    processes: { oaibag: processOf(run), ...servers },
    facts,
    ok,
    ...(run.timedOut ? { timedOut: true } : {}),
    ...(ok ? {} : { error: `${run.label} ended with ${run.exitCode}${run.timedOut ? ' (timed out)' : ''}: ${run.stderr.slice(-600)}` }),
  };
}

/** The counts a harvest printed (its --json summary), or undefined. */
function harvestCounts(file) {
  try {
    const summary = JSON.parse(readFileSync(file, 'utf8'));
    const pick = (object) => object && Object.fromEntries(Object.entries(object).filter(([, value]) => typeof value === 'number'));
    return pick(summary.counts ?? summary);
  } catch {
    return undefined;
  }
}

/** The repository in its child, listening on `port` (0: any); `scan()` rescans and times it. */
export async function startRepository({ root, index, fresh, port }) {
  const child = startJsonChild([join(ROOT, 'bench/scale-repository.mjs'), JSON.stringify({ root, index, fresh, port })], { label: 'repository' });
  const watch = watchServer(child.pid);
  const started = performance.now();
  const ready = await child.next();
  return {
    ...ready,
    wallSeconds: (performance.now() - started) / 1000,
    oaiUrl: `${ready.baseUrl}/oai`,
    watch,
    async scan() {
      child.send({ command: 'scan' });
      return child.next();
    },
    async stop() {
      watch.stop();
      await child.stop();
    },
  };
}

/**
 * The steps that need the site's repository: the scan of a fresh index, the baseline harvest,
 * the no-op, touch and change updates (a rescan of the repository, then the harvest; both
 * timed), `oaibag urls` over the repository. `run(step)` tells whether a step was asked for.
 */
export async function siteSteps({ ctx, site, run }) {
  const { dir, archive, timeoutSeconds, log, state } = ctx;
  const results = [];
  const fresh = run('baseline');
  if (fresh) rmSync(archive, { recursive: true, force: true });
  const started = performance.now();
  const repository = await startRepository({ root: site.root, index: join(dir, 'index.sqlite'), fresh, port: fresh ? 0 : state.port });
  state.port = Number(new URL(repository.baseUrl).port);
  const life = repository.watch.lifetime();
  if (fresh)
    results.push({
      step: 'scan',
      seconds: repository.seconds,
      processes: { repository: life },
      facts: { files: repository.files, startSeconds: (performance.now() - started) / 1000 },
      ok: true,
    });
  log(`  repository at ${repository.baseUrl}${fresh ? `: scanned ${repository.files} files in ${repository.seconds.toFixed(1)} s` : ''}`);
  try {
    const harvest = async (step, { before } = {}) => {
      const mark = repository.watch.mark();
      const change = before ? await before() : undefined;
      const scanStarted = performance.now();
      const scan = before ? await repository.scan() : undefined;
      const scanSeconds = (performance.now() - scanStarted) / 1000;
      const stdoutFile = join(dir, `${step}.json`);
      const measured = await runMeasured({ args: ['harvest', repository.oaiUrl, '--archive', archive, '--json'], stdoutFile, timeoutSeconds });
      const facts = { counts: harvestCounts(stdoutFile), ...(change ? { change, rescanSeconds: scanSeconds, rescan: scan?.summary } : {}) };
      return record(step, measured, { servers: { repository: repository.watch.since(mark) }, facts, seconds: measured.seconds + (before ? scanSeconds : 0) });
    };
    if (run('baseline')) results.push(await harvest('baseline'));
    if (results.at(-1)?.ok === false) return results;
    if (run('noop')) results.push(await harvest('noop'));
    if (run('touch')) results.push(await harvest('touch', { before: () => touchSite({ dir, root: site.root }) }));
    if (run('change')) results.push(await harvest('change', { before: () => changeSite({ dir, root: site.root }) }));
    if (run('urls')) {
      const mark = repository.watch.mark();
      const measured = await runMeasured({ args: ['urls', repository.oaiUrl], stdoutFile: join(dir, 'urls.txt'), timeoutSeconds });
      results.push(record('urls', measured, { servers: { repository: repository.watch.since(mark) }, facts: { outputBytes: measured.stdoutBytes } }));
      rmSync(join(dir, 'urls.txt'), { force: true });
    }
  } finally {
    await repository.stop();
  }
  for (const result of results) log(`  ${summaryLine(result)}`);
  return results;
}

/** One line of a step's figures for the log. */
export function summaryLine(result) {
  const parts = Object.entries(result.processes).map(
    ([name, figures]) => `${name} ${figures.cpuSeconds?.toFixed(1)} s CPU, ${(figures.peakRssBytes / 1e6).toFixed(0)} MB`,
  );
  return `${result.step}: ${result.seconds.toFixed(1)} s (${parts.join('; ')})${result.ok ? '' : ` FAILED ${result.error}`}`;
}

/** A resource's identifier from the catalog (read-only), and the start of its latest harvest. */
function catalogFacts(archive) {
  const { Database } = loadBetterSqlite3();
  const db = new Database(join(archive, 'catalog.sqlite'), { readonly: true, fileMustExist: true });
  try {
    const count = db.prepare('SELECT COUNT(*) AS n FROM resources').get().n;
    const { identifier } = db.prepare('SELECT identifier FROM resources WHERE deleted_at IS NULL ORDER BY id LIMIT 1 OFFSET ?').get(Math.floor(count / 2));
    const { started } = db.prepare('SELECT MAX(started_at) AS started FROM harvests').get();
    return { identifier, lastHarvestStarted: started, resources: count };
  } finally {
    db.close();
  }
}

/** The SPARQL queries timed: the point query, what changed since, the digest join of docs/linked-data.md. */
function sparqlQueries({ identifier, lastHarvestStarted }) {
  const prefixes =
    'prefix dcterms: <http://purl.org/dc/terms/> prefix prov: <http://www.w3.org/ns/prov#> prefix oaibag: <urn:oaibag:terms:> prefix xsd: <http://www.w3.org/2001/XMLSchema#> ';
  return {
    'point: the versions of one URL': `${prefixes}select ?v ?t where { ?i dcterms:source <${identifier}> . ?v dcterms:isVersionOf ?i ; prov:generatedAtTime ?t } order by ?t`,
    'what changed since the last harvest began': `${prefixes}select ?item ?version ?change where { ?version prov:generatedAtTime ?t ; oaibag:change ?change ; dcterms:isVersionOf ?item . filter (?t >= "${lastHarvestStarted.replace(/\.\d+Z$/, 'Z')}"^^xsd:dateTime) } limit 1000`,
    'resources deleted since a date': `${prefixes}select ?item ?original ?at where { ?item prov:qualifiedInvalidation ?deletion . optional { ?item dcterms:source ?original } ?deletion prov:atTime ?at . filter (?at >= "2000-01-01T00:00:00Z"^^xsd:dateTime) } order by ?at limit 1000`,
    'digest join: versions whose bytes were already held': `${prefixes}select ?version ?earlier where { ?version dcterms:identifier ?digest ; prov:generatedAtTime ?t ; dcterms:isVersionOf ?item . ?earlier dcterms:identifier ?digest ; prov:generatedAtTime ?t0 ; dcterms:isVersionOf ?other . filter (?t0 < ?t) } limit 100`,
  };
}

async function sparql(url, query) {
  const started = performance.now();
  const response = await fetch(`${url}/sparql?query=${encodeURIComponent(query)}`, { headers: { accept: 'application/sparql-results+json' } });
  const text = await response.text();
  const seconds = (performance.now() - started) / 1000;
  if (response.status !== 200) return { seconds, status: response.status, error: text.slice(0, 300) };
  const answer = JSON.parse(text);
  return { seconds, status: 200, rows: answer.results?.bindings?.length ?? (answer.boolean === undefined ? 0 : 1) };
}

/**
 * The steps over the harvested archive: `serve` harvested in full by a second archive (with the
 * server's time for the first and the last ListRecords page), SPARQL, restore (dry run and in
 * full), audit of everything, export-rdf, verify, reindex.
 */
export async function archiveSteps({ ctx, run }) {
  const { dir, archive, timeoutSeconds, log, sparqlStore } = ctx;
  const results = [];
  const push = (result) => {
    results.push(result);
    log(`  ${summaryLine(result)}`);
  };
  if (run('serve-harvest')) {
    const accessLog = join(dir, 'serve-access.log');
    rmSync(accessLog, { force: true });
    const second = join(dir, 'second-archive');
    rmSync(second, { recursive: true, force: true });
    const serve = await startServe({ archiveDir: archive, accessLog });
    try {
      await warmUp(serve.url);
      const mark = serve.watch.mark();
      const stdoutFile = join(dir, 'serve-harvest.json');
      const measured = await runMeasured({ args: ['harvest', `${serve.url}/oai`, '--archive', second, '--json'], stdoutFile, timeoutSeconds });
      push(
        record('serve-harvest', measured, {
          servers: { serve: serve.watch.since(mark) },
          facts: { counts: harvestCounts(stdoutFile), ...pageFacts(accessLog, 'ListRecords') },
        }),
      );
    } finally {
      await serve.stop();
      rmSync(second, { recursive: true, force: true });
    }
  }
  if (run('sparql')) push(await sparqlStep({ archive, dir, sparqlStore }));
  if (run('restore-dry')) {
    const target = join(dir, 'restore-dry');
    const measured = await runMeasured({
      args: ['restore', '--archive', archive, '--to', target, '--dry-run'],
      stdoutFile: join(dir, 'restore-dry.txt'),
      timeoutSeconds,
    });
    push(record('restore-dry', measured, { facts: { outputBytes: measured.stdoutBytes } }));
    rmSync(join(dir, 'restore-dry.txt'), { force: true });
  }
  if (run('restore')) {
    const target = join(dir, 'restored');
    rmSync(target, { recursive: true, force: true });
    const measured = await runMeasured({
      args: ['restore', '--archive', archive, '--to', target, '--json'],
      stdoutFile: join(dir, 'restore.json'),
      timeoutSeconds,
    });
    push(record('restore', measured, { facts: { files: countFiles(target) } }));
    rmSync(target, { recursive: true, force: true });
  }
  if (run('audit')) push(await auditStep({ archive, dir, timeoutSeconds }));
  if (run('export-rdf')) push(await exportRdfStep({ archive, dir, timeoutSeconds }));
  if (run('verify')) {
    const measured = await runMeasured({ args: ['verify', '--archive', archive, '--json'], stdoutFile: join(dir, 'verify.json'), timeoutSeconds });
    push(record('verify', measured));
  }
  if (run('reindex')) {
    const measured = await runMeasured({ args: ['reindex', '--archive', archive, '--force', '--json'], stdoutFile: join(dir, 'reindex.json'), timeoutSeconds });
    push(record('reindex', measured));
    // The catalog reindex replaced is kept beside it (catalog.sqlite.<time>): not needed here.
    for (const name of readdirSync(archive)) if (/^catalog\.sqlite\.\d/.test(name)) rmSync(join(archive, name), { force: true });
  }
  return results;
}

async function auditStep({ archive, dir, timeoutSeconds }) {
  const out = join(dir, 'audit.csv');
  const measured = await runMeasured({ args: ['audit', '--archive', archive, '--since', '2000-01-01', '--format', 'csv', '--out', out], timeoutSeconds });
  const result = record('audit', measured, { facts: { outputBytes: sizeOf(out) } });
  rmSync(out, { force: true });
  return result;
}

async function exportRdfStep({ archive, dir, timeoutSeconds }) {
  const out = join(dir, 'graph.nq');
  const measured = await runMeasured({ args: ['export-rdf', '--archive', archive, '--out', out], timeoutSeconds });
  const result = record('export-rdf', measured, { facts: { outputBytes: sizeOf(out) } });
  rmSync(out, { force: true });
  return result;
}

/**
 * The server's milliseconds for the first and the last page of a list, from its access log, and
 * their ratio (the larger over the smaller). The last page is often short: the one before it, a
 * full page at the end of the list, is the one compared. One page against one page is noisy on
 * a shared machine (at 30k beside another job, pages took 16 to 175 ms): the medians of the
 * first ten and the last ten full pages are reported beside it, as context.
 */
function pageFacts(accessLog, verb) {
  const times = listPageTimes(accessLog, verb);
  if (times.length === 0) return { pages: 0 };
  const first = times[0];
  const last = times.at(-1);
  const lastFull = times.length > 1 ? times.at(-2) : last;
  const ratio = Math.max(first, lastFull) / Math.max(1, Math.min(first, lastFull));
  const medianOf = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
  const full = times.length > 1 ? times.slice(0, -1) : times;
  return {
    pages: times.length,
    firstPageMs: first,
    secondPageMs: times[1],
    lastPageMs: last,
    lastFullPageMs: lastFull,
    pageRatio: ratio,
    firstTenMedianMs: medianOf(full.slice(0, 10)),
    lastTenMedianMs: medianOf(full.slice(-10)),
    medianPageMs: medianOf(full),
  };
}

/**
 * One ListIdentifiers page asked before a list is timed, so that the list's first page does not
 * also pay for the server's first query (opening the catalog, compiling the statements).
 */
async function warmUp(url) {
  const response = await fetch(`${url}/oai?verb=ListIdentifiers&metadataPrefix=oai_didl`);
  await response.arrayBuffer();
  return response.status;
}

/**
 * `serve` answering the SPARQL queries: the first query waits for the store to be ready
 * (embedded: loaded from the catalog; `--sparql-store URL`: the external store, given to serve),
 * then each query three times (the median is kept). The serve process's peak RSS is the step's.
 */
async function sparqlStep({ archive, dir, sparqlStore }) {
  const facts = catalogFacts(archive);
  const accessLog = join(dir, 'serve-sparql.log');
  const extraArgs = ['--sparql-timeout', '600', ...(sparqlStore ? ['--sparql-store', sparqlStore] : [])];
  const serve = await startServe({ archiveDir: archive, accessLog, extraArgs });
  try {
    const mark = serve.watch.mark();
    const started = performance.now();
    const ready = await sparql(serve.url, 'ask { ?s ?p ?o }');
    const queries = {};
    for (const [name, query] of Object.entries(sparqlQueries(facts))) {
      const runs = [];
      for (let n = 0; n < 3; n++) runs.push(await sparql(serve.url, query));
      const times = runs.map((answer) => answer.seconds).sort((a, b) => a - b);
      queries[name] = { medianSeconds: times[1], rows: runs[0].rows, status: runs[0].status, ...(runs[0].error ? { error: runs[0].error } : {}) };
    }
    const ok = ready.status === 200 && Object.values(queries).every((query) => query.status === 200);
    return {
      step: 'sparql',
      seconds: (performance.now() - started) / 1000,
      processes: { serve: serve.watch.since(mark) },
      facts: { store: sparqlStore ?? 'embedded', firstAnswerSeconds: ready.seconds, firstAnswerStatus: ready.status, queries },
      ok,
      ...(ok ? {} : { error: `SPARQL answered ${ready.status}${ready.error ? `: ${ready.error}` : ''}; ${JSON.stringify(queries).slice(0, 600)}` }),
    };
  } finally {
    await serve.stop();
  }
}

/**
 * The steps over a synthetic catalog: serve's lists walked in full by `oaibag urls` (the server's
 * time for the first and last ListIdentifiers page from its access log, and one ListRecords
 * page), restore --dry-run, audit, export-rdf. reindex needs the bags of every resource and
 * cannot run here.
 */
export async function syntheticSteps({ ctx, archive, run }) {
  const { dir, timeoutSeconds, log } = ctx;
  const results = [];
  const push = (result) => {
    results.push(result);
    log(`  ${summaryLine(result)}`);
  };
  if (run('serve-pages')) {
    const accessLog = join(dir, 'serve-access.log');
    rmSync(accessLog, { force: true });
    const serve = await startServe({ archiveDir: archive, accessLog });
    try {
      const mark = serve.watch.mark();
      const first = await fetch(`${serve.url}/oai?verb=ListRecords&metadataPrefix=oai_didl`).then(async (response) => ({
        status: response.status,
        bytes: (await response.arrayBuffer()).byteLength,
      }));
      const measured = await runMeasured({
        args: ['urls', `${serve.url}/oai`],
        stdoutFile: join(dir, 'urls.txt'),
        timeoutSeconds,
        label: 'oaibag urls (serve)',
      });
      const facts = {
        ...pageFacts(accessLog, 'ListIdentifiers'),
        firstListRecordsMs: listPageTimes(accessLog, 'ListRecords')[0],
        firstListRecordsStatus: first.status,
        outputBytes: measured.stdoutBytes,
      };
      push(record('serve-pages', measured, { servers: { serve: serve.watch.since(mark) }, facts }));
      rmSync(join(dir, 'urls.txt'), { force: true });
    } finally {
      await serve.stop();
    }
  }
  if (run('restore-dry')) {
    const measured = await runMeasured({
      args: ['restore', '--archive', archive, '--to', join(dir, 'restore-dry'), '--dry-run'],
      stdoutFile: join(dir, 'restore-dry.txt'),
      timeoutSeconds,
    });
    push(record('restore-dry', measured, { facts: { outputBytes: measured.stdoutBytes } }));
    rmSync(join(dir, 'restore-dry.txt'), { force: true });
  }
  if (run('audit')) push(await auditStep({ archive, dir, timeoutSeconds }));
  if (run('export-rdf')) push(await exportRdfStep({ archive, dir, timeoutSeconds }));
  return results;
}

function sizeOf(file) {
  return existsSync(file) ? statSync(file).size : 0;
}

function countFiles(dir) {
  if (!existsSync(dir)) return 0;
  let count = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) if (entry.isFile()) count++;
  return count;
}
