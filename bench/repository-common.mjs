// Shared by the repository benchmark (repository.mjs) and its server child (repository-server.mjs):
// loading the built package, starting servers as child processes, a keep-alive OAI-PMH client,
// and the small statistics the figures need. Plain ESM, no build step.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const REPOSITORY_PACKAGE = join(ROOT, 'packages/repository');
/** The installed command (a shim importing dist/cli.js). */
export const REPOSITORY_BIN = join(REPOSITORY_PACKAGE, 'bin/oaibag-repository.js');

/** A module of the repository's build output (the root script runs `tsc -b` first). */
export async function loadRepository(file = 'index.js') {
  try {
    return await import(new URL(`../packages/repository/dist/${file}`, import.meta.url).href);
  } catch (error) {
    if (error?.code === 'ERR_MODULE_NOT_FOUND') {
      throw new Error('packages/repository/dist is missing: build first (npx tsc -b), or run `npx --yes pnpm@10.34.9 bench:repository`');
    }
    throw error;
  }
}

/** better-sqlite3 is a dependency of @oaibag/repository, not of the root: resolve it from there. */
export function loadBetterSqlite3() {
  const require = createRequire(join(REPOSITORY_PACKAGE, 'package.json'));
  const Database = require('better-sqlite3');
  const main = require.resolve('better-sqlite3');
  const version = JSON.parse(readFileSync(join(dirname(main), '..', 'package.json'), 'utf8')).version;
  return { Database, version };
}

/**
 * A child process that prints JSON lines on stdout. `next()` resolves with the next line
 * (rejects if the child exits first); `stop()` sends SIGTERM and waits for the exit.
 */
export function startChild(command, args, { label, onStderr } = {}) {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const lines = [];
  const waiters = [];
  let buffered = '';
  let stderr = '';
  let exited = null;
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (text) => {
    buffered += text;
    for (let newline; (newline = buffered.indexOf('\n')) !== -1; ) {
      const line = buffered.slice(0, newline);
      buffered = buffered.slice(newline + 1);
      if (line.trim() === '') continue;
      const waiter = waiters.shift();
      if (waiter) waiter.resolve(line);
      else lines.push(line);
    }
  });
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (text) => {
    stderr += text;
    onStderr?.(text, stderr);
  });
  const exit = new Promise((resolveExit) => {
    child.on('exit', (code, signal) => {
      exited = { code, signal };
      for (const waiter of waiters.splice(0)) waiter.reject(new Error(`${label ?? command} exited (${code ?? signal}) before answering: ${stderr.trim()}`));
      resolveExit(exited);
    });
  });
  return {
    pid: child.pid,
    get stderr() {
      return stderr;
    },
    next() {
      if (lines.length > 0) return Promise.resolve(lines.shift());
      if (exited) return Promise.reject(new Error(`${label ?? command} exited (${exited.code ?? exited.signal}): ${stderr.trim()}`));
      return new Promise((resolveLine, reject) => waiters.push({ resolve: resolveLine, reject }));
    },
    async nextJson() {
      return JSON.parse(await this.next());
    },
    async stop() {
      if (!exited) child.kill('SIGTERM');
      const result = await exit;
      if (result.code !== 0 && result.signal !== 'SIGTERM') throw new Error(`${label ?? command} ended with ${result.code ?? result.signal}: ${stderr.trim()}`);
      return result;
    },
    exit,
  };
}

/** Our server child (repository-server.mjs) in a given mode; see that file. */
export function startServerChild(options) {
  return startChild(process.execPath, [join(ROOT, 'bench/repository-server.mjs'), JSON.stringify(options)], { label: `repository-server (${options.mode})` });
}

/** One harvester: a keep-alive connection of its own, requests one after another. */
export function harvester() {
  return new Agent({ keepAlive: true, maxSockets: 1 });
}

/**
 * GET `url`; the body is either kept whole (`keep: 'all'`, as a string) or only counted,
 * with its last bytes kept (`keep: 'tail'`), which is all a harvester needs to find the
 * resumptionToken of a page of By-Value records hundreds of MB long. `onChunk` sees every
 * chunk. Resolves once the body has been consumed.
 */
export function get(agent, url, { keep = 'all', onChunk } = {}) {
  return new Promise((resolveAnswer, reject) => {
    const started = performance.now();
    const req = request(url, { agent }, (res) => {
      let bytes = 0;
      const parts = [];
      let previous = null;
      let last = null;
      res.on('data', (chunk) => {
        bytes += chunk.length;
        onChunk?.(chunk);
        if (keep === 'all') parts.push(chunk);
        else {
          previous = last;
          last = chunk;
        }
      });
      res.on('end', () => {
        const body = keep === 'all' ? Buffer.concat(parts).toString('utf8') : undefined;
        const tail =
          keep === 'all'
            ? body.slice(-4096)
            : Buffer.concat([previous ?? Buffer.alloc(0), last ?? Buffer.alloc(0)])
                .toString('utf8')
                .slice(-4096);
        resolveAnswer({ status: res.statusCode, headers: res.headers, bytes, body, tail, milliseconds: performance.now() - started });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** The resumptionToken of a page: undefined when the page has none, '' on the last page of a list. */
export function resumptionOf(tail) {
  const match = /<resumptionToken([^>]*?)(?:\/>|>([^<]*)<\/resumptionToken>)/.exec(tail);
  if (!match) return undefined;
  const attribute = (name) => {
    const found = new RegExp(`${name}="(\\d+)"`).exec(match[1]);
    return found ? Number(found[1]) : undefined;
  };
  return { token: match[2] ?? '', cursor: attribute('cursor'), completeListSize: attribute('completeListSize') };
}

/** An OAI-PMH error code in a response, if any. */
export function oaiErrorOf(text) {
  return /<error code="([^"]+)"/.exec(text)?.[1];
}

/** How many times `needle` occurs in `haystack`. */
export function occurrences(haystack, needle) {
  let count = 0;
  for (let at = haystack.indexOf(needle); at !== -1; at = haystack.indexOf(needle, at + needle.length)) count++;
  return count;
}

/**
 * Counts a byte pattern across the chunks of a stream (a match may straddle two chunks).
 * Buffer.indexOf on the chunks themselves: no string conversion of hundreds of MB.
 */
export function streamCounter(pattern) {
  const needle = Buffer.from(pattern);
  let carry = Buffer.alloc(0);
  let count = 0;
  return {
    write(chunk) {
      if (carry.length > 0) {
        const seam = Buffer.concat([carry, chunk.subarray(0, needle.length - 1)]);
        if (seam.indexOf(needle) !== -1) count++;
      }
      for (let at = chunk.indexOf(needle); at !== -1; at = chunk.indexOf(needle, at + needle.length)) count++;
      carry = Buffer.from(chunk.subarray(Math.max(0, chunk.length - (needle.length - 1))));
    },
    get count() {
      return count;
    },
  };
}

export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

/** Nearest-rank percentile (p95 of 20 samples is the 19th smallest). */
export function percentile(values, p) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)];
}

export function round(value, digits) {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

/** VmRSS / VmHWM of a process, in bytes (Linux). */
export function memoryOf(pid) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const field = (name) => {
      const match = new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status);
      return match ? Number(match[1]) * 1024 : undefined;
    };
    return { rss: field('VmRSS'), hwm: field('VmHWM') };
  } catch {
    return { rss: undefined, hwm: undefined };
  }
}

/** User + system CPU seconds a process has used so far (Linux, /proc/PID/stat). */
export function cpuSecondsOf(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime are fields 14 and 15 of stat, 12 and 13 after the command name.
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return undefined;
  }
}

/**
 * Pages through a whole ListIdentifiers or ListRecords list with one keep-alive connection.
 * `patterns` are counted across each page's bytes (e.g. '</record>'); bodies are kept whole
 * for ListIdentifiers (a page is small), only their tails for ListRecords. `stopAfter`
 * stops once that many items were listed and returns the token that continues the list.
 */
export async function harvestList(baseUrl, { verb, metadataPrefix, patterns = {}, stopAfter, first } = {}) {
  const agent = harvester();
  const counters = Object.fromEntries(Object.entries(patterns).map(([name, pattern]) => [name, streamCounter(pattern)]));
  const onChunk =
    Object.keys(counters).length > 0
      ? (chunk) => {
          for (const counter of Object.values(counters)) counter.write(chunk);
        }
      : undefined;
  const keep = verb === 'ListIdentifiers' ? 'all' : 'tail';
  let url = first ?? `${baseUrl}/oai?verb=${verb}&metadataPrefix=${metadataPrefix}`;
  const result = { pages: 0, headers: 0, bytes: 0, completeListSize: undefined, pageMilliseconds: [], token: undefined };
  const started = performance.now();
  try {
    for (;;) {
      const answer = await get(agent, url, { keep, onChunk });
      if (answer.status !== 200) throw new Error(`${url}: HTTP ${answer.status}`);
      const head = keep === 'all' ? answer.body.slice(0, 4096) : answer.tail;
      const error = oaiErrorOf(head);
      if (error) throw new Error(`${url}: OAI-PMH error ${error}`);
      result.pages++;
      result.bytes += answer.bytes;
      result.pageMilliseconds.push(answer.milliseconds);
      if (keep === 'all') result.headers += occurrences(answer.body, '<header');
      const resumption = resumptionOf(answer.tail);
      if (resumption?.completeListSize !== undefined) result.completeListSize = resumption.completeListSize;
      if (!resumption || resumption.token === '') break;
      url = `${baseUrl}/oai?verb=${verb}&resumptionToken=${encodeURIComponent(resumption.token)}`;
      if (stopAfter !== undefined && result.headers >= stopAfter) {
        result.token = resumption;
        break;
      }
    }
  } finally {
    agent.destroy();
  }
  result.seconds = (performance.now() - started) / 1000;
  for (const [name, counter] of Object.entries(counters)) result[name] = counter.count;
  return result;
}
