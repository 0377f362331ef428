// wget, the mod_oai paper's baseline, for the experiment (experiment.mjs): found (or installed
// from Debian), run under /usr/bin/time for its peak RSS, and its requests read from the
// repository's request log by method and status. The log parser is a copy of
// requestLogFigures (harvest-common.mjs) that also keeps the method, which that one drops.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';

const WGET = '/usr/bin/wget';
const TIME = '/usr/bin/time';

/**
 * wget and /usr/bin/time, installed with apt-get when missing (and allowed: root). Returns
 * { wget, version, time } or { missing: reason } — the experiment then reports oaibag alone.
 */
export function ensureWget(log) {
  const missing = [WGET, TIME].filter((file) => !existsSync(file));
  if (missing.length > 0) {
    const packages = missing.map((file) => (file === WGET ? 'wget' : 'time'));
    if (process.getuid?.() !== 0) return { missing: `${packages.join(' and ')} not installed, and not root to apt-get install ${packages.join(' ')}` };
    log(`installing ${packages.join(' ')} from Debian (apt-get install -y ${packages.join(' ')})`);
    const installed = spawnSync('apt-get', ['install', '-y', '--no-install-recommends', ...packages], {
      encoding: 'utf8',
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
    if (installed.status !== 0 && !existsSync(WGET))
      return {
        missing: `apt-get install ${packages.join(' ')} failed: ${(installed.stderr || installed.stdout || String(installed.error)).trim().split('\n').pop()}`,
      };
  }
  if (!existsSync(WGET)) return { missing: 'wget could not be installed' };
  const version = spawnSync(WGET, ['--version'], { encoding: 'utf8' }).stdout.split('\n')[0].trim().replace(/\.$/, '');
  return { wget: WGET, version, time: existsSync(TIME) ? TIME : undefined };
}

/**
 * The wget arguments of a phase. Every mode recurses one level from the listing (which links
 * every file, so depth 1 reaches them all), stays below it, drops the host folder, keeps
 * non-ASCII bytes in file names, and timestamps (-N). `ims` is wget's default -N (a GET with
 * If-Modified-Since per file); `head` is --no-if-modified-since, the paper's HEAD-then-GET.
 */
export function wgetArguments({ url, mirror, logFile, mode }) {
  return [
    '-r',
    '--no-parent',
    '-N',
    '-l',
    '1',
    '-nH',
    '-P',
    mirror,
    '--restrict-file-names=nocontrol',
    '-e',
    'robots=off',
    '-nv',
    '-o',
    logFile,
    ...(mode === 'head' ? ['--no-if-modified-since'] : []),
    url,
  ];
}

/**
 * One wget run (a child process, under /usr/bin/time -f '%M %U %S' when present, else VmRSS polled
 * every `sampleMs`): wall time from spawn to exit, exit code (8 = some server error response,
 * which wget reports without stopping), peak RSS in bytes, CPU seconds (user + system).
 */
export function runWget({ tools, args, sampleMs = 50, timeFile }) {
  rmSync(timeFile, { force: true });
  const [command, argv] = tools.time ? [tools.time, ['-f', '%M %U %S', '-o', timeFile, tools.wget, ...args]] : [tools.wget, args];
  const started = performance.now();
  const child = spawn(command, argv, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (text) => (stderr += text));
  let sampled = 0;
  const sampler = tools.time
    ? undefined
    : setInterval(() => {
        try {
          const kb = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1];
          if (kb) sampled = Math.max(sampled, Number(kb) * 1024);
        } catch {
          // exited between two samples
        }
      }, sampleMs);
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      const seconds = (performance.now() - started) / 1000;
      clearInterval(sampler);
      let peakRssBytes = sampled;
      let cpuSeconds = null;
      let cpuUserSeconds = null;
      if (tools.time && existsSync(timeFile)) {
        const [kb, user, system] = readFileSync(timeFile, 'utf8').trim().split('\n').pop().split(' ').map(Number);
        if (Number.isFinite(kb)) peakRssBytes = kb * 1024;
        if (Number.isFinite(user) && Number.isFinite(system)) [cpuSeconds, cpuUserSeconds] = [user + system, user];
      }
      resolve({
        seconds,
        cpuSeconds,
        cpuUserSeconds,
        exitCode: code,
        peakRssBytes,
        peakRssMethod: tools.time ? '/usr/bin/time %M' : `VmRSS every ${sampleMs} ms`,
        stderr: stderr.trim().slice(-1000),
      });
    });
  });
}

/**
 * The repository's request log from line `fromLine` on: requests and bytes sent, by method,
 * by status, by OAI verb (`file` for everything else), and "METHOD status" pairs.
 */
export function requestLog(file, fromLine = 0) {
  const lines = existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
  const figures = { requests: 0, bytes: 0, byMethod: {}, byStatus: {}, byVerb: {}, byMethodStatus: {}, lines: lines.length };
  const count = (map, key) => (map[key] = (map[key] ?? 0) + 1);
  for (const line of lines.slice(fromLine)) {
    const match = /"(\S+) (\S+) HTTP\/[\d.]+" (\d+)!? (\d+|-)/.exec(line);
    if (!match) continue;
    figures.requests++;
    figures.bytes += match[4] === '-' ? 0 : Number(match[4]);
    count(figures.byMethod, match[1]);
    count(figures.byStatus, match[3]);
    count(figures.byVerb, /[?&]verb=(\w+)/.exec(match[2])?.[1] ?? 'file');
    count(figures.byMethodStatus, `${match[1]} ${match[3]}`);
  }
  return figures;
}

/**
 * What a wget pass found: the mirror's files whose mtime or size changed or that appeared
 * (wget re-downloaded them), compared with a snapshot taken before it. Deletions: never.
 */
export function wgetFound(before, after) {
  const changed = new Set();
  for (const [path, entry] of after) {
    const old = before.get(path);
    if (!old || old.mtimeMs !== entry.mtimeMs || old.size !== entry.size) changed.add(path);
  }
  return { changed, deleted: new Set() };
}
