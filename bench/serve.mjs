#!/usr/bin/env node
// `oaibag serve` with one 1 GiB payload (issue 14: "a 1 GiB payload By-Value or By-Reference
// without growing the server"): a site of one 1 GiB file is harvested into an archive, then
// `oaibag serve` (a child process of its own, its peak RSS written by bench/harvest-peak.mjs
// as it exits) sends that payload three ways: By-Value in an oai_didl GetRecord (about 1.4 GB
// of base64), By-Reference from /files/, and through `oaibag harvest` of the served archive
// into a second archive (every byte checked again). Figures in bench/README.md.
// Run with `npx --yes pnpm@10.34.9 bench:serve [-- --mib N] [-- --runs N]`.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { parseBenchArgs, wholeNumberArg } from './bench-args.mjs';
import { ARCHIVER_BIN, checkBuilt, runHarvester, startRepository } from './harvest-common.mjs';
import { ensureLargeSite } from './harvest-fixture.mjs';
import { median, ROOT, round } from './repository-common.mjs';

const MB = 1e6;
const MiB = 2 ** 20;
const TARGET_RSS_BYTES = 150 * MB;

const USAGE = `usage: node bench/serve.mjs [--mib N] [--runs N] [--keep]

  --mib N    the payload's size in MiB (default 1024)
  --runs N   repetitions of the three transfers; medians are reported (default 1)
  --keep     keep the site under bench/work/serve/ (1 GiB)`;

const { args, usageError } = parseBenchArgs('serve', USAGE, {
  mib: { type: 'string', default: '1024' },
  runs: { type: 'string', default: '1' },
  keep: { type: 'boolean', default: false },
});
const size = wholeNumberArg(args.mib, '--mib', usageError) * MiB;
const runs = wholeNumberArg(args.runs, '--runs', usageError);
const log = (line) => process.stderr.write(`${line}\n`);
checkBuilt();

const dir = join(ROOT, 'bench/work/serve');
const site = ensureLargeSite({ dir, size, regenerate: false, log });
const expectedSha = await sha256OfFile(join(site.root, 'large.bin'));
const archive = join(dir, 'archive');
const second = join(dir, 'second-archive');
rmSync(archive, { recursive: true, force: true });
const repository = await startRepository({ root: site.root, index: join(dir, 'index.sqlite'), fresh: true, byValueMax: size + 1, pageBytes: size + 1 });
try {
  log(`harvesting the ${size} byte file into ${archive}`);
  const harvested = await runHarvester({ oaiUrl: repository.oaiUrl, archiveDir: archive, sampleMs: 50 });
  log(`  ${round(harvested.seconds, 1)} s`);
} finally {
  await repository.child.stop();
}

const samples = [];
for (let run = 1; run <= runs; run++) {
  const server = await startServe(archive, size + 1);
  try {
    const identifier = encodeURIComponent(`${new URL(repository.baseUrl).origin}/large.bin`);
    const byValue = await timed(`${server.url}/oai?verb=GetRecord&metadataPrefix=oai_didl&identifier=${identifier}`, 'base64');
    const ref = byValue.ref;
    const byReference = await timed(ref, 'bytes');
    rmSync(second, { recursive: true, force: true });
    await new Promise((done) => setTimeout(done, 1100 - (Date.now() % 1000)));
    const harvest = await runHarvester({ oaiUrl: `${server.url}/oai`, archiveDir: second, sampleMs: 50 });
    const peak = await server.stop();
    if (byValue.sha256 !== expectedSha || byReference.sha256 !== expectedSha) throw new Error('the bytes served are not the file');
    const sample = {
      byValueSeconds: byValue.seconds,
      byValueBytes: byValue.bytes,
      byReferenceSeconds: byReference.seconds,
      secondHarvestSeconds: harvest.seconds,
      secondHarvesterPeakRssBytes: harvest.peak?.vmHwmBytes ?? null,
      serverPeakRssBytes: peak.vmHwmBytes,
    };
    samples.push(sample);
    log(
      `run ${run}: By-Value ${round(byValue.bytes / MB, 0)} MB of XML in ${round(byValue.seconds, 1)} s; By-Reference ${round(byReference.seconds, 1)} s; ` +
        `harvest of the served archive ${round(harvest.seconds, 1)} s; server peak RSS ${round(peak.vmHwmBytes / MB, 1)} MB`,
    );
  } catch (error) {
    await server.stop().catch(() => undefined);
    throw error;
  }
}
rmSync(second, { recursive: true, force: true });
rmSync(archive, { recursive: true, force: true });
if (!args.keep) rmSync(dir, { recursive: true, force: true });
const peakRss = Math.max(...samples.map((sample) => sample.serverPeakRssBytes));
const result = {
  payloadBytes: size,
  runs,
  medians: Object.fromEntries(Object.keys(samples[0]).map((key) => [key, median(samples.map((sample) => sample[key]))])),
  serverPeakRssBytes: peakRss,
  target: { serverPeakRssBytes: TARGET_RSS_BYTES, met: peakRss < TARGET_RSS_BYTES },
  samples,
};
process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);

/** `oaibag serve` in a child with the peak-RSS preload; `stop` sends SIGTERM and reads the peak. */
async function startServe(archiveDir, byValueMax) {
  const peakFile = `${archiveDir}.serve-peak.json`;
  rmSync(peakFile, { force: true });
  const child = spawn(
    process.execPath,
    [
      '--import',
      join(ROOT, 'bench/harvest-peak.mjs'),
      ARCHIVER_BIN,
      'serve',
      '--archive',
      archiveDir,
      '--port',
      '0',
      '--by-value-max',
      String(byValueMax),
      '--page-bytes',
      String(byValueMax),
    ],
    { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, OAIBAG_BENCH_PEAK_FILE: peakFile } },
  );
  let stderr = '';
  child.stderr.setEncoding('utf8');
  const url = await new Promise((resolve, reject) => {
    child.stderr.on('data', (text) => {
      stderr += text;
      const match = / at (http:\/\/\S+)\/oai /.exec(stderr);
      if (match) resolve(match[1]);
    });
    child.on('exit', () => reject(new Error(`oaibag serve exited: ${stderr}`)));
  });
  return {
    url,
    stop: () =>
      new Promise((resolve, reject) => {
        child.on('exit', () => {
          try {
            resolve(JSON.parse(readFileSync(peakFile, 'utf8')));
          } catch (error) {
            reject(error);
          }
        });
        child.kill('SIGTERM');
      }),
  };
}

/** Reads a URL to the end: seconds, bytes, and the SHA-256 of the payload (decoded from the base64 for a record). */
async function timed(url, kind) {
  const started = performance.now();
  const response = await fetch(url);
  if (response.status !== 200) throw new Error(`${url}: ${response.status}`);
  const hash = createHash('sha256');
  let bytes = 0;
  let ref;
  let inBase64 = false;
  let pending = '';
  const decoder = new TextDecoder();
  for await (const chunk of response.body) {
    bytes += chunk.length;
    if (kind === 'bytes') {
      hash.update(chunk);
      continue;
    }
    // The record: find the ref, then decode the base64 between its Resource tags as it comes.
    pending += decoder.decode(chunk, { stream: true });
    if (!inBase64) {
      ref ??= /ref="([^"]+\/files\/[^"]+)"/.exec(pending)?.[1];
      const at = pending.indexOf('encoding="base64">');
      if (at === -1) continue;
      inBase64 = true;
      pending = pending.slice(at + 'encoding="base64">'.length);
    }
    const end = pending.indexOf('<');
    const text = (end === -1 ? pending : pending.slice(0, end)).replace(/\s+/g, '');
    const whole = text.length - (text.length % 4);
    if (end === -1) {
      hash.update(Buffer.from(text.slice(0, whole), 'base64'));
      pending = text.slice(whole);
    } else {
      hash.update(Buffer.from(text, 'base64'));
      pending = '';
      inBase64 = false;
    }
  }
  return { seconds: (performance.now() - started) / 1000, bytes, sha256: hash.digest('hex'), ref };
}

async function sha256OfFile(file) {
  const { createReadStream } = await import('node:fs');
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk);
  return hash.digest('hex');
}
