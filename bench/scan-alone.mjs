#!/usr/bin/env node
// The repository's first scan of a site into a new index, alone and in this process, with what it
// cost the kernel: bench:scale's `scan` step runs only with a fresh baseline harvest, which takes
// 12 minutes at 1M; this times the scan of a site bench:scale kept (--keep), without touching
// its archive or its index.
//
//   node bench/scan-alone.mjs SITE [SITE…]
//
// For each site, one line: files, wall, user and system CPU, µs of CPU a file, MB read from and
// written to the disk (/proc/self/io), page faults. The index is a temporary file, removed after.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadRepository } from './repository-common.mjs';

const sites = process.argv.slice(2);
if (sites.length === 0) {
  process.stderr.write('usage: node bench/scan-alone.mjs SITE [SITE…]\n');
  process.exit(2);
}
const { createRepository } = await loadRepository();

const io = () =>
  Object.fromEntries(
    readFileSync('/proc/self/io', 'utf8')
      .trim()
      .split('\n')
      .map((line) => line.split(': ').map((part, n) => (n ? Number(part) : part))),
  );
const faults = () => {
  const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ');
  return { minor: Number(fields[7]), major: Number(fields[9]) };
};

for (const site of sites) {
  const dir = mkdtempSync(join(tmpdir(), 'oaibag-scan-alone-'));
  try {
    const io0 = io();
    const faults0 = faults();
    const cpu0 = process.cpuUsage();
    const started = performance.now();
    let files = 0;
    const repository = await createRepository({
      root: site,
      index: join(dir, 'index.sqlite'),
      watch: false,
      rescanSeconds: 0,
      log: () => {},
      onScanProgress: (progress) => {
        files = progress.files;
      },
    });
    const seconds = (performance.now() - started) / 1000;
    const cpu = process.cpuUsage(cpu0);
    const io1 = io();
    const faults1 = faults();
    await repository.close();
    const mb = (bytes) => (bytes / 2 ** 20).toFixed(0);
    console.log(
      `${site}: ${files} files in ${seconds.toFixed(1)} s; CPU user ${(cpu.user / 1e6).toFixed(1)} s, system ${(cpu.system / 1e6).toFixed(1)} s, ` +
        `${((cpu.user + cpu.system) / files).toFixed(1)} µs a file; disk read ${mb(io1.read_bytes - io0.read_bytes)} MB, ` +
        `written ${mb(io1.write_bytes - io0.write_bytes)} MB; page faults ${faults1.minor - faults0.minor} minor, ${faults1.major - faults0.major} major`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
