// The processes of the scale benchmark (scale.mjs), each measured on its own: a command that runs
// to its end (`oaibag restore`, `audit`…: wall time, CPU time and peak RSS of that process), and
// a server that lives through several steps (the repository, `oaibag serve`: the CPU it used and
// the peak RSS it reached during each step, read from /proc). Standard output goes to a file, so
// a command printing a line per resource costs the benchmark nothing.
import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ARCHIVER_BIN } from './harvest-common.mjs';
import { cpuSecondsOf, memoryOf, ROOT } from './repository-common.mjs';

const PEAK_PRELOAD = join(ROOT, 'bench/harvest-peak.mjs');
const SAMPLE_MS = 100;

/**
 * Resets the kernel's peak RSS of a process (`echo 5 > /proc/PID/clear_refs`), so that VmHWM
 * is the peak of what follows. False where the kernel does not allow it; the sampled peak
 * stands in then.
 */
function resetPeak(pid) {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

/**
 * `oaibag ARGS…` (or `node SCRIPT ARGS…` with `script`) in a child of its own, with the peak
 * preload (bench/harvest-peak.mjs writes VmHWM and CPU times as it exits). Standard output to
 * `stdoutFile` (or discarded). Resolves with { seconds, cpuSeconds, peakRssBytes, exitCode,
 * stdoutBytes, stderr, timedOut }; after `timeoutSeconds` the child is killed and the figures
 * are those it had reached.
 */
export function runMeasured({ args, script = ARCHIVER_BIN, stdoutFile, timeoutSeconds, label = `oaibag ${args[0]}` }) {
  const peakFile = join(tmpdir(), `oaibag-scale-${process.pid}-${Date.now()}.peak.json`);
  const out = stdoutFile ? openSync(stdoutFile, 'w') : 'ignore';
  const started = performance.now();
  const child = spawn(process.execPath, ['--import', PEAK_PRELOAD, script, ...args], {
    stdio: ['ignore', out, 'pipe'],
    env: { ...process.env, OAIBAG_BENCH_PEAK_FILE: peakFile },
  });
  if (typeof out === 'number') closeSync(out);
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (text) => {
    stderr = (stderr + text).slice(-20_000);
  });
  let sampledPeak = 0;
  let lastCpu = 0;
  const sampler = setInterval(() => {
    sampledPeak = Math.max(sampledPeak, memoryOf(child.pid).rss ?? 0);
    lastCpu = cpuSecondsOf(child.pid) ?? lastCpu;
  }, SAMPLE_MS);
  let timedOut = false;
  const timer = timeoutSeconds
    ? setTimeout(() => {
        timedOut = true;
        sampledPeak = Math.max(sampledPeak, memoryOf(child.pid).hwm ?? 0);
        lastCpu = cpuSecondsOf(child.pid) ?? lastCpu;
        child.kill('SIGKILL');
      }, timeoutSeconds * 1000)
    : undefined;
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => {
      const seconds = (performance.now() - started) / 1000;
      clearInterval(sampler);
      clearTimeout(timer);
      const peak = existsSync(peakFile) ? JSON.parse(readFileSync(peakFile, 'utf8')) : undefined;
      rmSync(peakFile, { force: true });
      const stdoutBytes = stdoutFile && existsSync(stdoutFile) ? readFileSync(stdoutFile).length : 0;
      resolve({
        label,
        seconds,
        cpuSeconds: peak ? peak.userSeconds + peak.systemSeconds : lastCpu,
        peakRssBytes: peak?.vmHwmBytes ?? sampledPeak,
        exitCode: code ?? signal,
        timedOut,
        stdoutBytes,
        stderr: stderr.trim().slice(-1500),
      });
    });
  });
}

/**
 * A long-lived child (a server) whose CPU and peak RSS are read per step: `mark()` starts a
 * step (resets VmHWM, notes the CPU used so far), `since(mark)` gives { cpuSeconds,
 * peakRssBytes } of the step. `sampled` keeps the largest VmRSS seen every 100 ms, for kernels
 * that do not reset VmHWM.
 */
export function watchServer(pid) {
  let sampledPeak = 0;
  const sampler = setInterval(() => {
    sampledPeak = Math.max(sampledPeak, memoryOf(pid).rss ?? 0);
  }, SAMPLE_MS);
  sampler.unref();
  return {
    mark() {
      const reset = resetPeak(pid);
      sampledPeak = memoryOf(pid).rss ?? 0;
      return { cpu: cpuSecondsOf(pid) ?? 0, reset };
    },
    since(mark) {
      const { hwm, rss } = memoryOf(pid);
      sampledPeak = Math.max(sampledPeak, rss ?? 0);
      return { cpuSeconds: (cpuSecondsOf(pid) ?? mark.cpu) - mark.cpu, peakRssBytes: mark.reset && hwm ? hwm : sampledPeak };
    },
    /** The peak over the process's whole life (VmHWM unless a step reset it). */
    lifetime() {
      return { cpuSeconds: cpuSecondsOf(pid) ?? 0, peakRssBytes: Math.max(memoryOf(pid).hwm ?? 0, sampledPeak) };
    },
    stop() {
      clearInterval(sampler);
    },
  };
}

/**
 * A child that prints JSON lines on stdout and takes commands on stdin (bench/scale-repository.mjs):
 * `next()` resolves with the next parsed line; `send(object)` writes one line; `stop()` sends
 * SIGTERM and waits for the exit.
 */
export function startJsonChild(args, { label }) {
  const child = spawn(process.execPath, args, { stdio: ['pipe', 'pipe', 'pipe'] });
  const lines = [];
  const waiters = [];
  let buffered = '';
  let stderr = '';
  let exited;
  child.stdout.setEncoding('utf8').on('data', (text) => {
    buffered += text;
    for (let at = buffered.indexOf('\n'); at !== -1; at = buffered.indexOf('\n')) {
      const line = buffered.slice(0, at).trim();
      buffered = buffered.slice(at + 1);
      if (line === '') continue;
      const waiter = waiters.shift();
      if (waiter) waiter.resolve(JSON.parse(line));
      else lines.push(JSON.parse(line));
    }
  });
  child.stderr.setEncoding('utf8').on('data', (text) => {
    stderr = (stderr + text).slice(-20_000);
  });
  const exit = new Promise((resolve) => {
    child.on('exit', (code, signal) => {
      exited = { code, signal };
      for (const waiter of waiters.splice(0)) waiter.reject(new Error(`${label} exited (${code ?? signal}): ${stderr.trim().slice(-1500)}`));
      resolve(exited);
    });
  });
  return {
    pid: child.pid,
    next() {
      if (lines.length > 0) return Promise.resolve(lines.shift());
      if (exited) return Promise.reject(new Error(`${label} exited (${exited.code ?? exited.signal}): ${stderr.trim().slice(-1500)}`));
      return new Promise((resolve, reject) => waiters.push({ resolve, reject }));
    },
    send(object) {
      child.stdin.write(`${JSON.stringify(object)}\n`);
    },
    async stop() {
      if (!exited) child.kill('SIGTERM');
      return exit;
    },
    get stderr() {
      return stderr;
    },
  };
}

/**
 * `oaibag serve --archive DIR --port 0 --access-log FILE …`; resolves once it listens, with its URL, a watcher of its CPU and memory, and `stop()`.
 */
export async function startServe({ archiveDir, accessLog, extraArgs = [] }) {
  const child = spawn(process.execPath, [ARCHIVER_BIN, 'serve', '--archive', archiveDir, '--port', '0', '--access-log', accessLog, ...extraArgs], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.setEncoding('utf8');
  const url = await new Promise((resolve, reject) => {
    child.stderr.on('data', (text) => {
      stderr = (stderr + text).slice(-20_000);
      const match = / at (http:\/\/\S+)\/oai /.exec(stderr);
      if (match) resolve(match[1]);
    });
    child.on('exit', (code) => reject(new Error(`oaibag serve exited (${code}): ${stderr.trim().slice(-1500)}`)));
  });
  const watch = watchServer(child.pid);
  return {
    url,
    pid: child.pid,
    watch,
    stop: () =>
      new Promise((resolve) => {
        watch.stop();
        child.on('exit', resolve);
        child.kill('SIGTERM');
      }),
  };
}

/**
 * The milliseconds of the OAI-PMH list requests in an access log (Combined Log Format plus
 * `NNNms`), in order, for one verb: what the first and the last page of a list cost the server.
 */
export function listPageTimes(accessLog, verb) {
  if (!existsSync(accessLog)) return [];
  const times = [];
  for (const line of readFileSync(accessLog, 'utf8').split('\n')) {
    if (!line.includes('/oai?')) continue;
    const request = /"GET (\S+) HTTP/.exec(line)?.[1] ?? '';
    const isVerb = request.includes(`verb=${verb}`);
    const ms = / (\d+)ms$/.exec(line)?.[1];
    if (isVerb && ms !== undefined) times.push(Number(ms));
  }
  return times;
}
