// The repository benchmark's measurements, one function per section of bench/README.md.
// Each returns plain data (raw samples included); repository.mjs computes the figures.
import { existsSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  cpuSecondsOf,
  get,
  harvester,
  harvestList,
  median,
  memoryOf,
  REPOSITORY_BIN,
  resumptionOf,
  startChild,
  startServerChild,
} from './repository-common.mjs';

/**
 * (1) and (2), over the small site, in one pass of server children (each scan of 100,000
 * files takes long enough that starting a process only to wait for its start-up scan is
 * worth avoiding):
 *   - child k (k <= runs, when `scans`) deletes the index, creates the repository (the first
 *     scan of a new index: every file opened, checked and hashed; createRepository waits for
 *     it), times one rescan with nothing changed (lstat against the index, nothing opened),
 *     and then serves;
 *   - any other child opens the existing index and serves once its start-up rescan is over;
 *   - child k serves ListIdentifiers with pages of pageSizes[k] (a server setting), and is
 *     harvested `runs` times, one keep-alive connection, one request after another.
 * The index file's size is taken once the last scanning child has stopped (closing
 * checkpoints the WAL into it).
 */
export async function measureSmallSite({ site, indexFile, scans, pageSizes, runs, log }) {
  const scanSamples = [];
  const lists = [];
  let indexBytes;
  const children = Math.max(scans ? runs : 0, pageSizes.length);
  if (!scans && !existsSync(indexFile)) await ensureIndex({ root: site.root, indexFile });
  for (let k = 0; k < children; k++) {
    const scanning = scans && k < runs;
    const pageIdentifiers = pageSizes[k];
    const child = scanning
      ? startServerChild({ mode: 'scan', root: site.root, index: indexFile, rescans: 1, serveAfter: pageIdentifiers !== undefined, pageIdentifiers })
      : startServerChild({ mode: 'serve', root: site.root, index: indexFile, waitForScan: true, pageIdentifiers });
    try {
      if (scanning) {
        const result = await child.nextJson();
        const rescan = result.rescans[0];
        if (result.first.files !== site.files || rescan.files !== site.files) {
          throw new Error(`scan saw ${result.first.files} files, rescan ${rescan.files}; the site has ${site.files}`);
        }
        if (rescan.added + rescan.changed + rescan.deleted !== 0) throw new Error(`a rescan with nothing changed reported changes: ${JSON.stringify(rescan)}`);
        log(`  scan run ${k + 1}/${runs}: first scan ${result.first.seconds.toFixed(1)} s, rescan ${rescan.seconds.toFixed(1)} s`);
        scanSamples.push(result);
      }
      if (pageIdentifiers !== undefined) {
        const { baseUrl, scan } = await child.nextJson();
        if (scan) log(`  server for pages of ${pageIdentifiers}: start-up rescan ${(scan.milliseconds / 1000).toFixed(1)} s`);
        const samples = [];
        for (let run = 1; run <= runs; run++) {
          const harvest = await harvestList(baseUrl, { verb: 'ListIdentifiers', metadataPrefix: 'oai_dc' });
          if (harvest.headers !== site.files || (harvest.completeListSize ?? harvest.headers) !== site.files) {
            throw new Error(
              `ListIdentifiers listed ${harvest.headers} headers (completeListSize ${harvest.completeListSize}); the site has ${site.files} files`,
            );
          }
          log(
            `  pages of ${pageIdentifiers}, run ${run}/${runs}: ${harvest.pages} pages in ${harvest.seconds.toFixed(2)} s, ${Math.round(harvest.headers / harvest.seconds)} identifiers/s`,
          );
          const { pageMilliseconds, token, ...rest } = harvest;
          samples.push({ ...rest, firstPageMilliseconds: pageMilliseconds[0], medianPageMilliseconds: median(pageMilliseconds) });
        }
        lists.push({ pageIdentifiers, startupScan: scan ?? null, samples });
      }
    } finally {
      await child.stop();
    }
    if (scanning) indexBytes = fileSize(indexFile) + fileSize(`${indexFile}-wal`);
  }
  return { scan: scans ? { samples: scanSamples, indexBytes } : undefined, list: pageSizes.length > 0 ? lists : undefined };
}

function fileSize(file) {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}

/** Makes an index of `root` (a first scan in a server child) for the sections that need one. */
export async function ensureIndex({ root, indexFile }) {
  const child = startServerChild({ mode: 'scan', root, index: indexFile, rescans: 0 });
  const result = await child.nextJson();
  await child.stop();
  return result;
}

/**
 * (3) ListIdentifiers over the million-row index. The server child listens at once, so the
 * first figures are taken while its start-up scan of the existing index runs (what a
 * harvester meets right after a restart); then, once that scan is over, `runs` rounds of
 * `requests` first pages (each a new list) and of `requests` repetitions of one page from
 * the middle of the list (a real token, obtained by paging there once).
 */
export async function measureMillion({ fixture, runs, requests, log }) {
  const child = startServerChild({ mode: 'serve', root: fixture.root, index: fixture.indexFile, waitForScan: false });
  try {
    const { baseUrl, openedSeconds } = await child.nextJson();
    let scanned;
    const scanEnd = child.nextJson().then((line) => (scanned = line.scan));
    const firstUrl = `${baseUrl}/oai?verb=ListIdentifiers&metadataPrefix=oai_dc`;
    const agent = harvester();

    const duringScan = [];
    for (let n = 0; n < requests && !scanned; n++) {
      const answer = await checked(agent, firstUrl, fixture.rows);
      duringScan.push({ milliseconds: answer.milliseconds, scanOver: scanned !== undefined });
    }
    log(`  ${duringScan.length} first pages during the start-up scan; waiting for the scan to end`);
    await scanEnd;
    log(
      `  start-up scan of ${scanned.files} files: ${scanned.secondsSinceStart.toFixed(1)} s (added ${scanned.added}, changed ${scanned.changed}, deleted ${scanned.deleted})`,
    );
    if (scanned.added + scanned.changed + scanned.deleted !== 0) throw new Error(`the start-up scan changed the million-row index: ${JSON.stringify(scanned)}`);

    const middle = await harvestList(baseUrl, { verb: 'ListIdentifiers', metadataPrefix: 'oai_dc', stopAfter: Math.floor(fixture.rows / 2) });
    const deepUrl = `${baseUrl}/oai?verb=ListIdentifiers&resumptionToken=${encodeURIComponent(middle.token.token)}`;
    log(`  paged to cursor ${middle.headers} in ${middle.seconds.toFixed(1)} s (${middle.pages} pages)`);

    const rounds = [];
    for (let run = 1; run <= runs; run++) {
      const first = [];
      for (let n = 0; n < requests; n++) first.push((await checked(agent, firstUrl, fixture.rows)).milliseconds);
      const deep = [];
      for (let n = 0; n < requests; n++) deep.push((await checked(agent, deepUrl, fixture.rows, middle.headers)).milliseconds);
      log(`  run ${run}/${runs}: first page median ${median(first).toFixed(1)} ms, deep page median ${median(deep).toFixed(1)} ms`);
      rounds.push({ first, deep });
    }
    agent.destroy();
    const { pageMilliseconds, token, ...pagedToMiddle } = middle;
    return { openedSeconds, startupScan: scanned, duringScan, pagedToMiddle: { ...pagedToMiddle, medianPageMilliseconds: median(pageMilliseconds) }, rounds };
  } finally {
    await child.stop();
  }
}

/** One ListIdentifiers page, checked: 1000 headers and a token at the expected cursor. */
async function checked(agent, url, rows, cursor = 0) {
  const answer = await get(agent, url);
  const resumption = resumptionOf(answer.tail);
  if (answer.status !== 200 || !resumption || resumption.cursor !== cursor || resumption.completeListSize < rows) {
    throw new Error(`${url}: unexpected page (HTTP ${answer.status}, ${answer.body.slice(0, 300)}…${answer.tail.slice(-300)})`);
  }
  return answer;
}

/**
 * (4) ListRecords oai_didl, By-Value, through HTTP without compression, against reading the
 * same files and base64-encoding them in this process (readFile + toString('base64')).
 */
export async function measureByValue({ fixture, indexFile, byValueMax, runs, log }) {
  const scan = await ensureIndex({ root: fixture.root, indexFile });
  const child = startServerChild({ mode: 'serve', root: fixture.root, index: indexFile, waitForScan: true, byValueMax });
  const files = [];
  for (const { prefix, files: count } of fixture.groups)
    for (let n = 0; n < count; n++) files.push(join(fixture.root, `${prefix}-${String(n).padStart(3, '0')}.bin`));
  try {
    const { baseUrl } = await child.nextJson();
    const samples = [];
    for (let run = 1; run <= runs; run++) {
      const harvest = await harvestList(baseUrl, {
        verb: 'ListRecords',
        metadataPrefix: 'oai_didl',
        patterns: { records: '</record>', byValue: 'encoding="base64"' },
      });
      if (harvest.records !== fixture.files || harvest.byValue !== fixture.files) {
        throw new Error(`ListRecords gave ${harvest.records} records, ${harvest.byValue} By-Value; expected ${fixture.files} of each`);
      }
      const baseline = await encodeInProcess(files);
      if (baseline.bytes !== fixture.bytes) throw new Error(`read ${baseline.bytes} bytes, expected ${fixture.bytes}`);
      log(
        `  run ${run}/${runs}: ListRecords ${(fixture.bytes / 1e6 / harvest.seconds).toFixed(1)} MB/s of payload ` +
          `(${harvest.pages} pages, ${(harvest.bytes / 1e6).toFixed(0)} MB of XML), in-process ${(fixture.bytes / 1e6 / baseline.seconds).toFixed(1)} MB/s`,
      );
      const { pageMilliseconds, token, ...rest } = harvest;
      samples.push({ harvest: rest, baseline });
    }
    return { indexSeconds: scan.first.seconds, samples };
  } finally {
    await child.stop();
  }
}

async function encodeInProcess(files) {
  let bytes = 0;
  let characters = 0;
  const started = performance.now();
  for (const file of files) {
    const data = await readFile(file);
    bytes += data.length;
    characters += data.toString('base64').length;
  }
  return { seconds: (performance.now() - started) / 1000, bytes, characters };
}

/**
 * (5) Peak RSS of the installed command (`oaibag-repository`, its own process) while
 * `harvesters` clients page through ListRecords oai_didl By-Value at the same time, each on
 * its own keep-alive connection, counting and discarding the bytes. VmRSS is sampled every
 * `sampleMs`; VmHWM (the kernel's own peak) is read before the server is stopped.
 */
export async function measureMemory({ fixture, indexFile, byValueMax, harvesters, runs, sampleMs, log }) {
  const scan = await ensureIndex({ root: fixture.root, indexFile });
  const samples = [];
  for (let run = 1; run <= runs; run++) {
    let announced;
    const listening = new Promise((resolve) => (announced = resolve));
    const child = startChild(
      process.execPath,
      [
        REPOSITORY_BIN,
        '--root',
        fixture.root,
        '--index',
        indexFile,
        '--port',
        '0',
        '--by-value-max',
        String(byValueMax),
        '--rescan',
        '0',
        '--no-watch',
        '--quiet',
      ],
      {
        label: 'oaibag-repository',
        onStderr: (_text, all) => {
          const match = /serving .* at (http:\/\/\S+?)\/ \(OAI-PMH/.exec(all);
          if (match) announced(match[1]);
        },
      },
    );
    try {
      const baseUrl = await Promise.race([listening, child.exit.then(() => Promise.reject(new Error(`oaibag-repository exited: ${child.stderr}`)))]);
      // Let the start-up scan of the (already complete) index finish before the baseline.
      await new Promise((resolve) => setTimeout(resolve, 1000));
      const idle = memoryOf(child.pid);
      const cpuBefore = cpuSecondsOf(child.pid);
      let peakSampled = idle.rss ?? 0;
      const trace = [];
      const started = performance.now();
      const sampler = setInterval(() => {
        const { rss } = memoryOf(child.pid);
        if (rss === undefined) return;
        peakSampled = Math.max(peakSampled, rss);
        trace.push([Math.round(performance.now() - started), rss]);
      }, sampleMs);
      const results = await Promise.all(
        Array.from({ length: harvesters }, () => harvestList(baseUrl, { verb: 'ListRecords', metadataPrefix: 'oai_didl', patterns: { records: '</record>' } })),
      );
      clearInterval(sampler);
      const seconds = (performance.now() - started) / 1000;
      const { hwm, rss: after } = memoryOf(child.pid);
      const cpuSeconds = cpuSecondsOf(child.pid) - cpuBefore;
      for (const result of results) {
        if (result.records !== fixture.files) throw new Error(`a harvester got ${result.records} records, expected ${fixture.files}`);
      }
      const bytes = results.reduce((sum, result) => sum + result.bytes, 0);
      log(
        `  run ${run}/${runs}: ${harvesters} harvesters, ${(bytes / 1e9).toFixed(1)} GB in ${seconds.toFixed(1)} s; ` +
          `server RSS idle ${(idle.rss / 1e6).toFixed(1)} MB, sampled peak ${(peakSampled / 1e6).toFixed(1)} MB, VmHWM ${(hwm / 1e6).toFixed(1)} MB`,
      );
      samples.push({
        seconds,
        bytes,
        serverCpuSeconds: cpuSeconds,
        pagesPerHarvester: results.map((result) => result.pages),
        idleRssBytes: idle.rss,
        sampledPeakRssBytes: peakSampled,
        vmHwmBytes: hwm,
        rssAfterBytes: after,
        rssSamples: trace.length,
        rssTrace: thin(trace, 200),
      });
    } finally {
      await child.stop();
    }
  }
  return { indexSeconds: scan.first.seconds, samples };
}

/** At most `count` evenly spaced points of a trace, so the JSON stays readable. */
function thin(trace, count) {
  if (trace.length <= count) return trace;
  const step = trace.length / count;
  return Array.from({ length: count }, (_, i) => trace[Math.floor(i * step)]);
}
