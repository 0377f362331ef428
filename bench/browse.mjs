#!/usr/bin/env node
// The pages people browse (issue 29: "home, search, history and replay each under 200 ms server
// time" on the 1M archive of bench:scale): `oaibag serve` of a kept archive, each page asked
// `--runs` times in turn after one cold round; the server's own time from its access log (whole
// milliseconds), the client's from send to the last byte. Figures in bench/README.md.
//
//     node bench/browse.mjs --archive /work/scale1m/1M/archive [--runs 7] [--results FILE]
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseBenchArgs, wholeNumberArg } from './bench-args.mjs';
import { checkBuilt } from './harvest-common.mjs';
import { median } from './repository-common.mjs';
import { startServe } from './scale-process.mjs';

const TARGET_MS = 200;
const USAGE = `usage: node bench/browse.mjs --archive DIR [--runs N] [--results FILE]

  --archive DIR    an archive harvested by bench:scale (e.g. /work/scale1m/1M/archive)
  --runs N         warm rounds after the cold one; medians are reported (default 7)
  --results FILE   where the JSON goes (default bench/results/browse.json)`;

const { args, usageError } = parseBenchArgs('browse', USAGE, {
  archive: { type: 'string' },
  runs: { type: 'string', default: '7' },
  results: { type: 'string', default: 'bench/results/browse.json' },
});
if (!args.archive) usageError('--archive is required');
const runs = wholeNumberArg(args.runs, '--runs', usageError);
const log = (line) => process.stderr.write(`${line}\n`);
checkBuilt();

const work = mkdtempSync(join(tmpdir(), 'oaibag-bench-browse-'));
const accessLog = join(work, 'access.log');
const started = Date.now();
const serve = await startServe({ archiveDir: args.archive, accessLog });
const startSeconds = (Date.now() - started) / 1000;
log(`serve listens at ${serve.url} after ${startSeconds.toFixed(1)} s (a catalog of schema 11 builds the URL search index first)`);

try {
  // Real URLs of the archive, found through its own search.
  const firstHit = async (query) => {
    const html = await (await fetch(`${serve.url}/search?${query}`)).text();
    const url = /href="[^"]*\/history\/([^"]+)"/.exec(html)?.[1];
    if (!url) throw new Error(`no hit for ${query}`);
    return url.replaceAll('&amp;', '&');
  };
  const page = await firstHit('q=p050000&set=mime%3Atext%3Ahtml');
  const image = await firstHit('q=p050000&set=mime%3Aimage');
  const site = page.slice(0, page.indexOf('/s0'));
  const historyHtml = await (await fetch(`${serve.url}/history/${page}`)).text();
  const replayPath = /href="[^"]*(\/replay\/\d{14}\/[^"]+)"/.exec(historyHtml)?.[1];
  if (!replayPath) throw new Error('no replay link on the history page');
  const stamp = /\/replay\/(\d{14})\//.exec(replayPath)[1];
  const deepAfter = /after=(\d+)/.exec(await (await fetch(`${serve.url}/search?q=.html`)).text())?.[1];
  const pages = [
    ['home', '/'],
    ['search: contains, one hit', '/search?q=p0500000'],
    ['search: contains, 1,000 hits', '/search?q=d00999%2F'],
    ['search: contains, a sixth of the archive', '/search?q=.html'],
    ['search: contains, next page from the end', `/search?q=.html&after=${Number(deepAfter) > 0 ? 990_000 : 0}`],
    ['search: contains, every URL, page from the end', '/search?q=http&after=990000'],
    ['search: contains, 1,000 hits, page from the middle', '/search?q=d00999%2F&after=500000'],
    ['search: contains, rare text, page from the end', '/search?q=p0999998&after=990000'],
    ['search: begins with a folder', `/search?q=${encodeURIComponent(`${site}/s000/d00500/`)}&match=prefix`],
    [
      'search: begins with the site, last page',
      `/search?q=${encodeURIComponent(site)}&match=prefix&after=${encodeURIComponent(JSON.stringify([`${site}/s000/d00999/p0999990.html`, 0]))}`,
    ],
    ['search: MIME set and text', '/search?q=s000%2Fd0099&set=mime%3Aimage'],
    ['history', `/history/${page}`],
    ['replay: banner page', `/replay/${stamp}/${page}`],
    ['replay: the page rewritten', `/replay/${stamp}mp_/${page}`],
    ['replay: an image', `/replay/${stamp}mp_/${image}`],
    ['replay: at an instant between captures', `/replay/${String(Number(stamp.slice(0, 4)) + 1)}/${page}`],
  ];
  const client = new Map(pages.map(([name]) => [name, []]));
  const statuses = new Map();
  for (let round = 0; round <= runs; round++) {
    for (const [name, path] of pages) {
      const t0 = process.hrtime.bigint();
      const response = await fetch(`${serve.url}${path}`, { redirect: 'manual' });
      await response.arrayBuffer();
      const ms = Number(process.hrtime.bigint() - t0) / 1e6;
      statuses.set(name, response.status);
      if (round > 0) client.get(name).push(ms);
    }
  }
  // The server's times, from its access log, matched to the pages by the request line; the log
  // is written by a stream, so its last lines may land a moment after the last answer.
  const serverTimes = new Map(pages.map(([name]) => [name, []]));
  const byPath = new Map(pages.map(([name, path]) => [path, name]));
  for (let waited = 0; ; waited += 100) {
    for (const list of serverTimes.values()) list.length = 0;
    for (const line of readFileSync(accessLog, 'utf8').split('\n')) {
      const name = byPath.get(/"(?:GET|HEAD) (\S+) HTTP/.exec(line)?.[1] ?? '');
      const ms = / (\d+)ms$/.exec(line)?.[1];
      if (name !== undefined && ms !== undefined) serverTimes.get(name).push(Number(ms));
    }
    if ([...serverTimes.values()].every((list) => list.length >= runs + 1) || waited > 5000) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const rows = pages.map(([name, path]) => {
    // The last runs + 1 requests of the path: discovery may have asked one of them before.
    const server = serverTimes.get(name).slice(-(runs + 1));
    const warm = server.slice(1);
    return {
      name,
      path,
      status: statuses.get(name),
      serverColdMs: server[0],
      serverMedianMs: median(warm),
      serverMaxMs: Math.max(...warm),
      clientMedianMs: Math.round(median(client.get(name)) * 10) / 10,
      pass: Math.max(...warm) < TARGET_MS,
    };
  });
  const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  const result = { at: new Date().toISOString(), archive: args.archive, runs, load, serveStartSeconds: startSeconds, targetMs: TARGET_MS, rows };
  let previous = [];
  try {
    previous = JSON.parse(readFileSync(args.results, 'utf8'));
  } catch {}
  writeFileSync(args.results, `${JSON.stringify([...previous, result], null, 2)}\n`);
  console.log(`| page | status | server cold (ms) | server median (ms) | server max (ms) | client median (ms) | < ${TARGET_MS} ms |`);
  console.log('|---|---|---|---|---|---|---|');
  for (const row of rows) {
    console.log(
      `| ${row.name} | ${row.status} | ${row.serverColdMs} | ${row.serverMedianMs} | ${row.serverMaxMs} | ${row.clientMedianMs} | ${row.pass ? 'PASS' : '**MISS**'} |`,
    );
  }
  console.log(`\nload average at the end: ${load}; serve started in ${startSeconds.toFixed(1)} s`);
} finally {
  await serve.stop();
  rmSync(work, { recursive: true, force: true });
}
