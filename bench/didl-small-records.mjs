#!/usr/bin/env node
// The DIDL reader's cost per small record: one ListRecords page of the repository (bench:scale's
// site of small files, By-Value), read again and again in memory with the options the harvester
// uses (`keepReceivedXml`, `lenientIdentifier`, `chunksAreOurs`, every datastream read to its
// end). Reports CPU time (user + system) per record, which survives a loaded machine, and what
// garbage collection did. See bench/README.md, "bench:didl", small records.
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { PerformanceObserver } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { parseBenchArgs, wholeNumberArg } from './bench-args.mjs';
import { loadDidl, ROOT } from './didl-common.mjs';
import { loadRepository } from './repository-common.mjs';
import { ensureSite } from './scale-site.mjs';

const USAGE = `usage: node bench/didl-small-records.mjs [--reads N] [--rounds N] [--chunk KiB] [--regenerate] [--against FILE]

  --reads N      reads of the page per round (default 100)
  --rounds N     rounds; the median round is reported (default 9)
  --chunk KiB    size of the chunks the page is handed over in, as a network body's (default 64)
  --regenerate   fetch the page again (cached in bench/work/didl-small-page.xml)
  --against FILE another build's packages/didl/dist/index.js, read in turns with this one (A/B)`;

const { args, usageError } = parseBenchArgs('didl-small-records', USAGE, {
  reads: { type: 'string', default: '100' },
  rounds: { type: 'string', default: '9' },
  chunk: { type: 'string', default: '64' },
  regenerate: { type: 'boolean', default: false },
  against: { type: 'string' },
});
const reads = wholeNumberArg(args.reads, '--reads', usageError);
const rounds = wholeNumberArg(args.rounds, '--rounds', usageError);
const chunkBytes = wholeNumberArg(args.chunk, '--chunk', usageError) * 1024;
const log = (line) => process.stderr.write(`${line}\n`);

const WORK = join(ROOT, 'bench/work');
const PAGE = join(WORK, 'didl-small-page.xml');

/** The first ListRecords page of a repository serving 1,000 files of the scale site. */
async function ensurePage() {
  if (!args.regenerate) {
    try {
      return await readFile(PAGE);
    } catch {}
  }
  const dir = join(WORK, 'didl-small-site');
  const site = await ensureSite({ dir, files: 1000, seed: 1, log });
  const { createRepository } = await loadRepository();
  const repository = await createRepository({ root: site.root, index: join(dir, 'index.db'), watch: false, rescanSeconds: 0, log: () => {} });
  try {
    const baseUrl = await repository.listen(0, '127.0.0.1');
    const response = await fetch(`${baseUrl}/oai?verb=ListRecords&metadataPrefix=oai_didl`);
    const page = Buffer.from(await response.arrayBuffer());
    await mkdir(WORK, { recursive: true });
    await writeFile(PAGE, page);
    return page;
  } finally {
    await repository.close();
  }
}

const readers = [{ name: 'this build', readDidl: (await loadDidl()).readDidl }];
if (args.against) readers.push({ name: args.against, readDidl: (await import(pathToFileURL(resolve(args.against)).href)).readDidl });
const page = await ensurePage();

/** The page in chunks, copied afresh for each read: with `chunksAreOurs` base64 is decoded into them. */
function chunksOf(bytes) {
  const chunks = [];
  for (let at = 0; at < bytes.length; at += chunkBytes) chunks.push(Buffer.from(bytes.subarray(at, at + chunkBytes)));
  return chunks;
}

async function readPage(readDidl) {
  let payload = 0;
  const summary = await readDidl(chunksOf(page), {
    keepReceivedXml: true,
    lenientIdentifier: true,
    recordErrors: 'report',
    chunksAreOurs: true,
    declineHeld: () => false,
    onDatastream: async (datastream) => {
      for await (const chunk of datastream.bytes) payload += chunk.length;
    },
    onRecord: (record) => {
      if (record.error) throw record.error;
    },
  });
  return { records: summary.records, payload };
}

const first = await readPage(readers[0].readDidl);
log(`page: ${page.length} bytes, ${first.records} records, ${first.payload} bytes of payload, chunks of ${chunkBytes / 1024} KiB`);

let gcCount = 0;
const observer = new PerformanceObserver((list) => {
  gcCount += list.getEntries().length;
});
observer.observe({ entryTypes: ['gc'] });

/** One round of one reader: CPU µs a record, and garbage collections a 1,000 records. */
async function round(readDidl) {
  await new Promise((resolve) => setTimeout(resolve, 20)); // the previous round's GCs reported
  gcCount = 0;
  const before = process.cpuUsage();
  for (let i = 0; i < reads; i++) await readPage(readDidl);
  const cpu = process.cpuUsage(before);
  await new Promise((resolve) => setTimeout(resolve, 20)); // GC entries come asynchronously
  const records = reads * first.records;
  return { usPerRecord: (cpu.user + cpu.system) / records, gcPerThousand: (gcCount * 1000) / records };
}

for (const reader of readers) for (let i = 0; i < 50; i++) await readPage(reader.readDidl); // warm-up
// With --against the readers take turns, round by round, so that the machine's load falls on both alike.
const results = readers.map(() => []);
for (let r = 0; r < rounds; r++) {
  for (let k = 0; k < readers.length; k++) results[k].push(await round(readers[k].readDidl));
}
observer.disconnect();
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const summary = readers.map((reader, k) => {
  const us = results[k].map((result) => result.usPerRecord);
  return {
    reader: reader.name,
    usPerRecordMedian: median(us),
    usPerRecordBest: Math.min(...us),
    gcPerThousandMedian: median(results[k].map((result) => result.gcPerThousand)),
    rounds: us,
  };
});
for (const s of summary) {
  log(
    `${s.reader}: ${s.usPerRecordMedian.toFixed(1)} µs CPU a record (median round; best ${s.usPerRecordBest.toFixed(1)}), ${s.gcPerThousandMedian.toFixed(1)} GCs a 1,000 records`,
  );
}
const output = { records: first.records, pageBytes: page.length, payloadBytes: first.payload, reads, rounds, readers: summary };
if (readers.length === 2) {
  // The ratio of each round's pair: the load of the moment cancels out.
  output.ratioMedian = median(results[0].map((result, r) => result.usPerRecord / results[1][r].usPerRecord));
  log(`this build / other, median of the rounds' ratios: ${output.ratioMedian.toFixed(3)}`);
}
process.stdout.write(`${JSON.stringify(output)}\n`);
