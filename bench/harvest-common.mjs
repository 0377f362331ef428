// Shared by the benchmarks that run the archiver (harvest.mjs, experiment.mjs, serve.mjs,
// import.mjs): the repository child, an `oaibag` child with its memory sampled, the archive's
// size on disk, the request log, and a summary of a V8 CPU profile. Plain ESM, no build step.
import { spawn } from 'node:child_process';
import { existsSync, lstatSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join, relative } from 'node:path';
import { memoryOf, ROOT, startChild } from './repository-common.mjs';

/** The installed command (a shim importing the bundle in dist/bundle/, scripts/bundle-cli.mjs). */
export const ARCHIVER_BIN = join(ROOT, 'packages/archiver/bin/oaibag.js');

/** Fails early, with the fix, when the archiver has not been built. */
export function checkBuilt() {
  for (const file of ['packages/archiver/dist/bundle/oaibag.js', 'packages/repository/dist/index.js']) {
    if (!existsSync(join(ROOT, file)))
      throw new Error(`${file} is missing: build first (npx --yes pnpm@10.34.9 build), or run \`npx --yes pnpm@10.34.9 bench:harvest\``);
  }
}

/** The repository (bench/harvest-server.mjs) in a child; resolves once it listens. */
export async function startRepository(options) {
  const child = startChild(process.execPath, [join(ROOT, 'bench/harvest-server.mjs'), JSON.stringify(options)], { label: 'harvest-server' });
  try {
    const ready = await child.nextJson();
    return { child, ...ready, oaiUrl: `${ready.baseUrl}/oai` };
  } catch (error) {
    await child.stop().catch(() => undefined);
    throw error;
  }
}

/**
 * One `oaibag harvest URL --archive DIR --json` in a child process of its own: runArchiver
 * (below) with the harvest's arguments. Rejects when the harvest did not end with status 0.
 */
export function runHarvester({ oaiUrl, archiveDir, extraArgs = [], ...options }) {
  return runArchiver({ ...options, archiveDir, args: ['harvest', oaiUrl, '--archive', archiveDir, '--json', ...extraArgs] });
}

/**
 * One `oaibag ARGS…` (harvest, import, export…) in a child process of its own, so that its
 * memory is its own: VmRSS sampled every `sampleMs`, and VmHWM, maxRSS and CPU times written
 * by the preloaded bench/harvest-peak.mjs as it exits (to `ARCHIVE_DIR.peak.json`).
 * `cpuProfileDir` runs it under `node --cpu-prof`. Resolves with the wall time (spawn to exit,
 * Node's start included), the summary the command printed on stdout (parsed as JSON unless
 * `json` is false: then `summary` is null and `stdout` holds the text), and the memory
 * figures; rejects when the command did not end with status 0. After `timeoutSeconds` the
 * child is killed (SIGKILL, after its VmHWM is read) and the result says `timedOut`, with the
 * bytes it had received into the archive's tmp/ so far: a run that does not finish is a figure too.
 * `bin` runs another build of the command (a bundle of another commit, for A/B comparisons).
 */
export function runArchiver({ args, archiveDir, sampleMs, cpuProfileDir, timeoutSeconds, json = true, bin = ARCHIVER_BIN }) {
  const command = `oaibag ${args[0]}`;
  const peakFile = `${archiveDir}.peak.json`;
  rmSync(peakFile, { force: true });
  const nodeArgs = [...(cpuProfileDir ? ['--cpu-prof', `--cpu-prof-dir=${cpuProfileDir}`] : []), '--import', join(ROOT, 'bench/harvest-peak.mjs')];
  const started = performance.now();
  const child = spawn(process.execPath, [...nodeArgs, bin, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, OAIBAG_BENCH_PEAK_FILE: peakFile },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (text) => (stdout += text));
  child.stderr.setEncoding('utf8').on('data', (text) => (stderr += text));
  let sampledPeak = 0;
  const trace = [];
  const sampler = setInterval(() => {
    const { rss } = memoryOf(child.pid);
    if (rss === undefined) return;
    sampledPeak = Math.max(sampledPeak, rss);
    trace.push([Math.round(performance.now() - started), rss]);
  }, sampleMs);
  let timedOut;
  const timer = timeoutSeconds
    ? setTimeout(() => {
        const { hwm, rss } = memoryOf(child.pid);
        timedOut = { seconds: (performance.now() - started) / 1000, vmHwmBytes: hwm, vmRssBytes: rss, receivedBytes: tmpBytes(join(archiveDir, 'tmp')) };
        child.kill('SIGKILL');
      }, timeoutSeconds * 1000)
    : undefined;
  const memory = () => ({ sampledPeakRssBytes: sampledPeak, rssSamples: trace.length, rssTrace: thin(trace, 100), stderr: stderr.trim().slice(-2000) });
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => {
      const seconds = (performance.now() - started) / 1000;
      clearInterval(sampler);
      clearTimeout(timer);
      if (timedOut) {
        rmSync(peakFile, { force: true });
        resolve({
          timedOut: true,
          seconds: timedOut.seconds,
          receivedBytes: timedOut.receivedBytes,
          summary: null,
          peak: { vmHwmBytes: timedOut.vmHwmBytes, vmRssBytes: timedOut.vmRssBytes },
          ...memory(),
        });
        return;
      }
      if (code !== 0) {
        reject(new Error(`${command} ended with ${code ?? signal}: ${stderr.trim().slice(-2000)}`));
        return;
      }
      let summary = null;
      if (json) {
        try {
          summary = JSON.parse(stdout);
        } catch {
          reject(new Error(`${command} printed no JSON summary: ${stdout.slice(0, 500)} ${stderr.slice(-500)}`));
          return;
        }
      }
      const peak = existsSync(peakFile) ? JSON.parse(readFileSync(peakFile, 'utf8')) : {};
      rmSync(peakFile, { force: true });
      resolve({ seconds, summary, ...(json ? {} : { stdout: stdout.trim().slice(-2000) }), peak, ...memory() });
    });
  });
}

/** Bytes of the files in a folder (the harvester's incoming temporary files). */
function tmpBytes(dir) {
  try {
    return readdirSync(dir).reduce((sum, name) => sum + lstatSync(join(dir, name)).size, 0);
  } catch {
    return 0;
  }
}

/**
 * What the archive takes on disk, as du counts it: st_blocks * 512 of every inode once (hard
 * links counted once), split between the catalog (files at the top) and the bags (aips/).
 * Also the apparent bytes, the files, how many of the files are hard links to another, and
 * `inodes`: the unique inodes below `dir` (files and folders, the catalog's files included,
 * `dir` itself not counted), what the tree costs a file system's inode table.
 */
export function archiveUsage(dir) {
  const seen = new Set();
  const usage = { diskBytes: 0, catalogDiskBytes: 0, bagsDiskBytes: 0, apparentBytes: 0, files: 0, directories: 0, linkedFiles: 0 };
  const walk = (path, top) => {
    for (const entry of readdirSync(path, { withFileTypes: true })) {
      const full = join(path, entry.name);
      const stats = lstatSync(full);
      const key = `${stats.dev}:${stats.ino}`;
      const area = top ?? (entry.isDirectory() ? entry.name : 'catalog');
      if (entry.isDirectory()) usage.directories++;
      else {
        usage.files++;
        if (stats.nlink > 1) usage.linkedFiles++;
      }
      if (!seen.has(key)) {
        seen.add(key);
        const bytes = stats.blocks * 512;
        usage.diskBytes += bytes;
        if (!entry.isDirectory()) usage.apparentBytes += stats.size;
        if (area === 'catalog') usage.catalogDiskBytes += bytes;
        else usage.bagsDiskBytes += bytes;
      }
      if (entry.isDirectory()) walk(full, area);
    }
  };
  walk(dir, undefined);
  usage.inodes = seen.size;
  return usage;
}

/** Requests and bytes in the repository's request log (Combined Log Format, one line each). */
export function requestLogFigures(file, fromLine = 0) {
  const lines = existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
  const figures = { requests: 0, bytes: 0, byVerb: {}, statuses: {}, lines: lines.length };
  for (const line of lines.slice(fromLine)) {
    const match = /"(\S+) (\S+) HTTP\/[\d.]+" (\d+!?) (\d+)/.exec(line);
    if (!match) continue;
    figures.requests++;
    figures.bytes += Number(match[4]);
    figures.statuses[match[3]] = (figures.statuses[match[3]] ?? 0) + 1;
    const verb = /[?&]verb=(\w+)/.exec(match[2])?.[1] ?? 'file';
    figures.byVerb[verb] = (figures.byVerb[verb] ?? 0) + 1;
  }
  return figures;
}

/**
 * The self time of a V8 CPU profile (.cpuprofile), by function and by area (our packages,
 * Node's internals, the garbage collector, idle), largest first: what to look at first.
 */
export function summarizeProfile(file, top = 15) {
  const profile = JSON.parse(readFileSync(file, 'utf8'));
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  const self = new Map();
  for (let i = 0; i < profile.samples.length; i++) self.set(profile.samples[i], (self.get(profile.samples[i]) ?? 0) + (profile.timeDeltas[i] ?? 0));
  const total = [...self.values()].reduce((sum, value) => sum + value, 0);
  const byFunction = new Map();
  const byArea = new Map();
  for (const [id, micros] of self) {
    const { functionName, url, lineNumber } = nodes.get(id).callFrame;
    const where = url.startsWith('file://') ? relative(ROOT, new URL(url).pathname) : url;
    const name = `${functionName || '(anonymous)'} ${where ? `${where}:${lineNumber + 1}` : ''}`.trim();
    byFunction.set(name, (byFunction.get(name) ?? 0) + micros);
    const area = areaOf(functionName, where);
    byArea.set(area, (byArea.get(area) ?? 0) + micros);
  }
  const list = (map) =>
    [...map]
      .sort((a, b) => b[1] - a[1])
      .map(([name, micros]) => ({ name, milliseconds: Math.round(micros / 1000), percent: Math.round((1000 * micros) / total) / 10 }));
  return { file: relative(ROOT, file), totalMilliseconds: Math.round(total / 1000), byArea: list(byArea), topFunctions: list(byFunction).slice(0, top) };
}

function areaOf(functionName, where) {
  if (functionName === '(idle)') return 'idle (waiting for I/O)';
  if (functionName === '(garbage collector)') return 'garbage collector';
  if (functionName === '(program)' || functionName === '(root)') return 'V8/native (program)';
  for (const name of ['didl', 'archiver', 'repository']) if (where.includes(`packages/${name}/`) && !where.includes('node_modules')) return `@oaibag/${name}`;
  const module = /node_modules\/(?:\.pnpm\/[^/]+\/node_modules\/)?((?:@[^/]+\/)?[^/]+)/.exec(where);
  if (module) return module[1];
  if (where.startsWith('node:')) return 'node: internals';
  if (where === '') return 'native calls (fs, crypto, zlib bindings)';
  return 'other';
}

/** At most `count` evenly spaced points of a trace, so the JSON stays readable. */
export function thin(trace, count) {
  if (trace.length <= count) return trace;
  const step = trace.length / count;
  return Array.from({ length: count }, (_, i) => trace[Math.floor(i * step)]);
}
