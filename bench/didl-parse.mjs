#!/usr/bin/env node
// DIDL parse benchmark: our streaming reader against plain sax on one large By-Value record.
// See bench/README.md. Run with `npx --yes pnpm@10.34.9 bench:didl [-- --size MiB --runs N]`.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import v8 from 'node:v8';
import vm from 'node:vm';
import { machineFacts, parseBenchArgs, wholeNumberArg } from './bench-args.mjs';
import { loadDidl, loadSax, measureBase64, measureFileRead, measureReader, measureSax, measureSha256, ROOT } from './didl-common.mjs';
import { ensureFixture } from './didl-fixture.mjs';

const MB = 1e6; // every "MB" printed or stored here is 10^6 bytes
const DEFAULT_SIZE_MIB = 1024;
const TARGET_RATIO = 3; // reader XML throughput >= 3x plain sax
const TARGET_RSS_BYTES = 100 * MB; // reader peak RSS < 100 MB
const GNU_TIME = '/usr/bin/time';

const USAGE = `usage: node bench/didl-parse.mjs [--size MiB] [--runs N] [--regenerate] [--out FILE] [--strict]

  --size MiB      payload of the By-Value Resource, in MiB (default ${DEFAULT_SIZE_MIB})
  --runs N        rounds of measurements; medians are reported (default 3)
  --regenerate    rebuild the cached input document under bench/work/
  --out FILE      where to write the JSON (default bench/results/didl-parse.json for the
                  default size, bench/work/results/didl-parse-<size>MiB.json otherwise)
  --strict        exit with status 1 when a target is missed`;

const { args, usageError } = parseBenchArgs('didl-parse', USAGE, {
  size: { type: 'string', default: String(DEFAULT_SIZE_MIB) },
  runs: { type: 'string', default: '3' },
  regenerate: { type: 'boolean', default: false },
  out: { type: 'string' },
  strict: { type: 'boolean', default: false },
});
const sizeMiB = Number(args.size);
const runs = wholeNumberArg(args.runs, '--runs', usageError);
if (!Number.isFinite(sizeMiB) || sizeMiB <= 0) usageError(`--size must be a positive number of MiB, not "${args.size}"`);
const payloadBytes = Math.round(sizeMiB * 2 ** 20);
const outPath = resolve(
  args.out ?? (sizeMiB === DEFAULT_SIZE_MIB ? join(ROOT, 'bench/results/didl-parse.json') : join(ROOT, `bench/work/results/didl-parse-${args.size}MiB.json`)),
);

const log = (line) => process.stderr.write(`${line}\n`);
const gc = exposeGc();

const { readDidlFile, writeDidl, Base64Decoder } = await loadDidl();
const { sax, version: saxVersion } = loadSax();
const fixture = await ensureFixture({ workDir: join(ROOT, 'bench/work'), payloadBytes, regenerate: args.regenerate, writeDidl, log });
const file = fixture.path;
const fileBytes = fixture.fileBytes;
log(`input: ${relative(ROOT, file)}, ${mb(fileBytes)} MB of XML, ${mb(payloadBytes)} MB of payload`);

const useGnuTime = existsSync(GNU_TIME);
if (!useGnuTime) log(`${GNU_TIME} not found (Debian: apt-get install -y time): peak RSS falls back to the child's own VmHWM`);

const samples = { reader: [], sax: [], nodeBase64: [], ourBase64: [], fileRead: [], sha256: [], child: [] };
for (let round = 1; round <= runs; round++) {
  log(`round ${round}/${runs}`);
  samples.fileRead.push(
    await step(
      'file read only',
      () => measureFileRead(file),
      (r) => `${rate(fileBytes, r.seconds)} MB/s`,
    ),
  );
  const reader = await step(
    'our reader',
    () => measureReader(readDidlFile, file),
    (r) => `${rate(fileBytes, r.seconds)} MB/s of XML`,
  );
  if (reader.decodedBytes !== payloadBytes || reader.size !== payloadBytes || reader.sha256 !== fixture.sha256) {
    throw new Error(`reader delivered ${reader.decodedBytes} bytes (sha-256 ${reader.sha256}); expected ${payloadBytes} (${fixture.sha256})`);
  }
  samples.reader.push(reader);
  samples.sax.push(
    await step(
      'plain sax',
      () => measureSax(sax, file),
      (r) => `${rate(fileBytes, r.seconds)} MB/s of XML`,
    ),
  );
  const base64 = await step(
    'base64 decode',
    () => measureBase64(Base64Decoder, file, fixture.region),
    (r) => `Buffer.from ${rate(r.inputBytes, r.node.seconds)} MB/s, Base64Decoder ${rate(r.inputBytes, r.ours.seconds)} MB/s`,
  );
  for (const [name, result] of [
    ['Buffer.from', base64.node],
    ['Base64Decoder', base64.ours],
  ]) {
    if (result.decodedBytes !== payloadBytes) throw new Error(`${name} decoded ${result.decodedBytes} bytes, expected ${payloadBytes}`);
  }
  samples.nodeBase64.push({ ...base64.node, inputBytes: base64.inputBytes });
  samples.ourBase64.push({ ...base64.ours, inputBytes: base64.inputBytes });
  samples.sha256.push(
    await step(
      'sha-256',
      () => measureSha256(file, payloadBytes),
      (r) => `${rate(r.bytes, r.seconds)} MB/s`,
    ),
  );
  samples.child.push(
    await step(
      'reader in a child process (peak RSS)',
      () => runChild(file),
      (r) => `${mb(r.peakRssBytes)} MB peak RSS`,
    ),
  );
}

// ---- figures -------------------------------------------------------------------------------
const readerSeconds = median(samples.reader.map((r) => r.seconds));
const saxSeconds = median(samples.sax.map((r) => r.seconds));
const figures = {
  readerXmlMBps: rate(fileBytes, readerSeconds),
  readerPayloadMBps: rate(payloadBytes, readerSeconds),
  saxXmlMBps: rate(fileBytes, saxSeconds),
  readerOverSax: round(saxSeconds / readerSeconds, 2),
  nodeBase64MBps: rate(fixture.region.end - fixture.region.start, median(samples.nodeBase64.map((r) => r.seconds))),
  ourBase64MBps: rate(fixture.region.end - fixture.region.start, median(samples.ourBase64.map((r) => r.seconds))),
  fileReadMBps: rate(fileBytes, median(samples.fileRead.map((r) => r.seconds))),
  sha256MBps: rate(payloadBytes, median(samples.sha256.map((r) => r.seconds))),
  readerPeakRssBytes: Math.max(...samples.child.map((r) => r.peakRssBytes)),
  childReaderXmlMBps: rate(fileBytes, median(samples.child.map((r) => r.seconds))),
};
// Slowest and fastest run of each throughput: this 2-core VM is noisy, so medians alone hide a lot.
const spread = (bytes, list) => [rate(bytes, Math.max(...list.map((r) => r.seconds))), rate(bytes, Math.min(...list.map((r) => r.seconds)))];
const ranges = {
  readerXmlMBps: spread(fileBytes, samples.reader),
  saxXmlMBps: spread(fileBytes, samples.sax),
  nodeBase64MBps: spread(fixture.region.end - fixture.region.start, samples.nodeBase64),
  ourBase64MBps: spread(fixture.region.end - fixture.region.start, samples.ourBase64),
  readerPeakRssMB: [mb(Math.min(...samples.child.map((r) => r.peakRssBytes))), mb(figures.readerPeakRssBytes)],
};
const targets = [
  {
    metric: 'reader XML throughput / plain sax',
    value: figures.readerOverSax,
    target: `>= ${TARGET_RATIO}`,
    pass: figures.readerOverSax >= TARGET_RATIO,
  },
  {
    metric: 'reader peak RSS (MB)',
    value: mb(figures.readerPeakRssBytes),
    target: `< ${TARGET_RSS_BYTES / MB}`,
    pass: figures.readerPeakRssBytes < TARGET_RSS_BYTES,
  },
];

const rows = [
  ['(a) reader, XML (MB/s)', figures.readerXmlMBps, `>= ${round(figures.saxXmlMBps * TARGET_RATIO, 1)} (3x sax)`, targets[0].pass],
  ['(a) reader, payload (MB/s)', figures.readerPayloadMBps, '', undefined],
  ['(b) plain sax, XML (MB/s)', figures.saxXmlMBps, '', undefined],
  ['(a)/(b) reader / sax', `${figures.readerOverSax}x`, `>= ${TARGET_RATIO}x`, targets[0].pass],
  ['(c) Buffer.from base64 (MB/s in)', figures.nodeBase64MBps, '', undefined],
  ['(c) Base64Decoder (MB/s in)', figures.ourBase64MBps, '', undefined],
  ['(d) reader peak RSS (MB)', mb(figures.readerPeakRssBytes), `< ${TARGET_RSS_BYTES / MB}`, targets[1].pass],
  ['    file read only (MB/s)', figures.fileReadMBps, '', undefined],
  ['    sha-256 (MB/s)', figures.sha256MBps, '', undefined],
];
console.log(`\nDIDL parse benchmark: ${mb(fileBytes)} MB of XML (${sizeMiB} MiB payload), median of ${runs} run(s); MB = 10^6 bytes`);
console.log(`peak RSS from ${useGnuTime ? `${GNU_TIME} -v (Maximum resident set size)` : "the child process's VmHWM"}, worst of ${runs} child run(s)\n`);
console.log(
  table(
    ['metric', 'value', 'target', 'result'],
    rows.map(([metric, value, target, pass]) => [metric, String(value), target, pass === undefined ? '' : pass ? 'PASS' : 'FAIL']),
  ),
);

const report = {
  benchmark: 'didl-parse',
  date: new Date().toISOString(),
  units: { MB: 1e6, note: 'throughputs in MB/s (10^6 bytes per second); medians over runs; peak RSS is the worst child run' },
  machine: machineFacts(),
  software: { sax: saxVersion, ...gitInfo() },
  options: { sizeMiB, runs },
  input: {
    file: relative(ROOT, file),
    fileBytes,
    payloadBytes,
    base64Bytes: fixture.region.end - fixture.region.start,
    sha256: fixture.sha256,
    generatedThisRun: fixture.generated,
    ...(fixture.generated ? { generationSeconds: round(fixture.generationSeconds, 1) } : {}),
  },
  figures: { ...figures, readerPeakRssMB: mb(figures.readerPeakRssBytes) },
  ranges,
  targets,
  allTargetsMet: targets.every((t) => t.pass),
  peakRssMethod: useGnuTime ? `${GNU_TIME} -v, Maximum resident set size` : '/proc/self/status VmHWM in the child',
  samples: {
    readerSeconds: samples.reader.map((r) => round(r.seconds, 3)),
    saxSeconds: samples.sax.map((r) => round(r.seconds, 3)),
    nodeBase64Seconds: samples.nodeBase64.map((r) => round(r.seconds, 3)),
    ourBase64Seconds: samples.ourBase64.map((r) => round(r.seconds, 3)),
    fileReadSeconds: samples.fileRead.map((r) => round(r.seconds, 3)),
    sha256Seconds: samples.sha256.map((r) => round(r.seconds, 3)),
    childReaderSeconds: samples.child.map((r) => round(r.seconds, 3)),
    childPeakRssBytes: samples.child.map((r) => r.peakRssBytes),
    childVmHwmBytes: samples.child.map((r) => r.vmHwmBytes ?? null),
    readerStreamChunks: samples.reader[0].streamChunks,
    saxTextEvents: samples.sax[0].textEvents,
  },
};
await mkdir(dirname(outPath), { recursive: true });
await writeFile(`${outPath}.tmp`, `${JSON.stringify(report, null, 2)}\n`);
await rename(`${outPath}.tmp`, outPath);
console.log(
  `\nslowest..fastest of ${runs} run(s): reader ${ranges.readerXmlMBps.join('..')} MB/s, sax ${ranges.saxXmlMBps.join('..')} MB/s, ` +
    `Base64Decoder ${ranges.ourBase64MBps.join('..')} MB/s, peak RSS ${ranges.readerPeakRssMB.join('..')} MB`,
);
console.log(`${report.allTargetsMet ? 'all targets met' : 'TARGET MISSED'}; figures written to ${relative(ROOT, outPath)}`);
if (args.strict && !report.allTargetsMet) process.exitCode = 1;

// ---- helpers -------------------------------------------------------------------------------
async function step(name, run, describe) {
  gc?.();
  const result = await run();
  log(`  ${name}: ${describe(result)}`);
  return result;
}

/** The reader alone in a fresh Node process; peak RSS from GNU time, else from the child's VmHWM. */
function runChild(path) {
  const child = join(ROOT, 'bench/didl-read-child.mjs');
  const command = useGnuTime ? GNU_TIME : process.execPath;
  const commandArgs = useGnuTime ? ['-v', process.execPath, child, path] : [child, path];
  const result = spawnSync(command, commandArgs, { encoding: 'utf8', maxBuffer: 16 << 20 });
  if (result.status !== 0) throw new Error(`reader child failed (${result.status ?? result.signal}): ${result.stderr}`);
  const figures = JSON.parse(result.stdout.trim().split('\n').pop());
  if (figures.decodedBytes !== payloadBytes || figures.sha256 !== fixture.sha256) throw new Error('reader child: wrong datastream');
  let peakRssBytes = figures.vmHwmBytes;
  if (useGnuTime) {
    const match = /Maximum resident set size \(kbytes\):\s*(\d+)/.exec(result.stderr);
    if (!match) throw new Error(`no "Maximum resident set size" in ${GNU_TIME} output:\n${result.stderr}`);
    peakRssBytes = Number(match[1]) * 1024;
  }
  if (peakRssBytes === undefined) throw new Error('peak RSS unavailable: neither GNU time nor /proc/self/status');
  return { ...figures, peakRssBytes };
}

/** A full garbage collection between measurements, so one run's garbage is not the next's cost. */
function exposeGc() {
  try {
    v8.setFlagsFromString('--expose-gc');
    return vm.runInNewContext('gc');
  } catch {
    return undefined;
  }
}

function gitInfo() {
  const git = (...gitArgs) => spawnSync('git', gitArgs, { cwd: ROOT, encoding: 'utf8' });
  const head = git('rev-parse', 'HEAD');
  if (head.status !== 0) return {};
  const dirty = git('status', '--porcelain', '--untracked-files=no', '--', 'packages');
  return { gitCommit: head.stdout.trim(), packagesDirty: dirty.status === 0 ? dirty.stdout.trim() !== '' : null };
}

function table(header, body) {
  const all = [header, ...body];
  const widths = header.map((_, i) => Math.max(...all.map((row) => row[i].length)));
  const line = (row) =>
    row
      .map((cell, i) => (i === 1 ? cell.padStart(widths[i]) : cell.padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line)].join('\n');
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

function rate(bytes, seconds) {
  return round(bytes / MB / seconds, 1);
}

function mb(bytes) {
  return round(bytes / MB, 1);
}

function round(value, digits) {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}
