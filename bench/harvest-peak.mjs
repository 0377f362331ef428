// Preloaded into the harvester child (`node --import bench/harvest-peak.mjs …/oaibag.js …`):
// when the process exits, writes its own VmHWM (the kernel's peak resident set), maxRSS and
// CPU times to the file named by OAIBAG_BENCH_PEAK_FILE. The parent's 50 ms samples of VmRSS
// can miss a peak in the last moments and cannot read /proc/PID/status after the exit.
import { readFileSync, writeFileSync } from 'node:fs';

const file = process.env.OAIBAG_BENCH_PEAK_FILE;
if (file) {
  process.on('exit', (code) => {
    const status = readFileSync('/proc/self/status', 'utf8');
    const kB = (name) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024;
    const usage = process.resourceUsage();
    writeFileSync(
      file,
      JSON.stringify({
        code,
        vmHwmBytes: kB('VmHWM'),
        vmRssBytes: kB('VmRSS'),
        maxRssBytes: usage.maxRSS * 1024,
        userSeconds: usage.userCPUTime / 1e6,
        systemSeconds: usage.systemCPUTime / 1e6,
      }),
    );
  });
}
