// The machine's own limits for the experiment's work, measured in the same run (experiment.mjs):
// how fast node:crypto hashes sha-256, how fast Buffer decodes base64 (By-Value records arrive
// as base64), how fast the disk takes a sequential write with fsync. A harvest cannot beat these;
// they say how far each contender is from the hardware.
import { createHash } from 'node:crypto';
import { closeSync, fsyncSync, mkdirSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';

const MiB = 2 ** 20;
const MB = 1e6;

/** The best of `repeat` timings of `work()`, in seconds. */
function best(repeat, work) {
  let seconds = Infinity;
  for (let i = 0; i < repeat; i++) {
    const started = performance.now();
    work();
    seconds = Math.min(seconds, (performance.now() - started) / 1000);
  }
  return seconds;
}

/**
 * sha-256 of 256 MiB (a 64 MiB buffer four times, in 1 MiB updates), base64 decoding of 256 MiB
 * of output (a 64 MiB buffer's base64 decoded four times), and a 512 MiB sequential write in
 * 8 MiB blocks then fsync, into `dir`, each in MB/s (10^6 bytes), best of two; and how many small
 * files a second the disk takes written, fsynced and renamed one by one (what bagging costs).
 */
export function measureMachine(dir) {
  const block = Buffer.alloc(64 * MiB);
  for (let i = 0; i < block.length; i += 4) block.writeUInt32LE((i * 2654435761) >>> 0, i);
  const hashSeconds = best(2, () => {
    const hash = createHash('sha256');
    for (let round = 0; round < 4; round++) for (let at = 0; at < block.length; at += MiB) hash.update(block.subarray(at, at + MiB));
    hash.digest();
  });
  const text = block.toString('base64');
  const base64Seconds = best(2, () => {
    for (let round = 0; round < 4; round++) Buffer.from(text, 'base64');
  });
  const file = join(dir, 'machine-write-test.bin');
  const write = block.subarray(0, 8 * MiB);
  const diskSeconds = best(2, () => {
    const fd = openSync(file, 'w');
    try {
      for (let n = 0; n < 64; n++) writeSync(fd, write);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
      rmSync(file, { force: true });
    }
  });
  // What a bag costs the file system: many small files, each written, fsynced, renamed.
  const smallDir = join(dir, 'machine-small-files');
  rmSync(smallDir, { recursive: true, force: true });
  mkdirSync(smallDir, { recursive: true });
  const small = block.subarray(0, 4096);
  const smallCount = 1000;
  const smallStarted = performance.now();
  for (let n = 0; n < smallCount; n++) {
    const temp = join(smallDir, `${n}.tmp`);
    const fd = openSync(temp, 'w');
    writeSync(fd, small);
    fsyncSync(fd);
    closeSync(fd);
    renameSync(temp, join(smallDir, `${n}.txt`));
  }
  const smallSeconds = (performance.now() - smallStarted) / 1000;
  rmSync(smallDir, { recursive: true, force: true });
  const rate = (bytes, seconds) => Math.round((bytes / MB / seconds) * 10) / 10;
  return {
    sha256MBps: rate(256 * MiB, hashSeconds),
    base64DecodeMBps: rate(256 * MiB, base64Seconds),
    diskWriteMBps: rate(512 * MiB, diskSeconds),
    smallFileFsyncsPerSecond: Math.round(smallCount / smallSeconds),
    method:
      'best of 2: sha-256 of 256 MiB in memory (node:crypto, 1 MiB updates); Buffer.from(base64) yielding 256 MiB; 512 MiB written in 8 MiB blocks + fsync to bench/work/experiment; 1,000 files of 4 KiB each written, fsynced, closed and renamed, one after the other (once)',
  };
}
