// Keeps a timed phase from measuring the disk work of what came before it.
//
// Writes: `settleDisk` runs `sync` and waits until the disks have been idle for 2 s, so a
// phase does not pay for the write-back of the previous one (a 292 MB testbed copy, a mirror).
// Deletions: on this machine (ext4 mounted with `discard`, in a virtual machine) a harvest
// right after deleting 250 MB of archives took 3.4 s instead of 2.5 s, with 3x the system time,
// recovering over 20-30 s although the guest saw no disk activity after `sync` (the discards
// are presumably still being carried out by the host). So benchmarks delete nothing between
// phases: every run keeps its folder until the end, and what an earlier invocation left is
// removed first (`removeRunFolders`), followed by a 30 s pause.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

/** Seconds to wait after deleting large trees (measured recovery: 20-30 s). */
const AFTER_DELETION_SECONDS = 30;

/**
 * Removes the `run-*` (and old `run`) folders under `dir` left by an earlier invocation, then,
 * when there were any, waits for the disk to recover (see above).
 */
export async function removeRunFolders(dir, log) {
  let names = [];
  try {
    names = readdirSync(dir).filter((name) => name === 'run' || name.startsWith('run-'));
  } catch {
    return;
  }
  if (names.length === 0) return;
  for (const name of names) rmSync(join(dir, name), { recursive: true, force: true });
  await pauseAfterDeletion(log, `removed ${names.length} folder(s) of an earlier run`);
}

/** `sync`, then the pause a large deletion needs before anything is timed (see above). */
export async function pauseAfterDeletion(log, what) {
  spawnSync('sync');
  log(`  ${what}; waiting ${AFTER_DELETION_SECONDS} s for the disk to recover`);
  await new Promise((done) => setTimeout(done, AFTER_DELETION_SECONDS * 1000));
}

/** Sectors read, written and discarded, and I/Os in flight, summed over the whole-disk devices. */
function diskActivity() {
  let text;
  try {
    text = readFileSync('/proc/diskstats', 'utf8');
  } catch {
    return undefined; // not Linux: nothing to wait for
  }
  const disks = new Set(readdirSync('/sys/block')); // whole disks, not their partitions
  let total = 0;
  for (const line of text.split('\n')) {
    const fields = line.trim().split(/\s+/);
    if (!disks.has(fields[2] ?? '')) continue;
    // 5: sectors read, 9: sectors written, 10: I/Os in flight, 16: sectors discarded (kernel 4.18+).
    for (const index of [5, 9, 10, 16]) total += Number(fields[index] ?? 0);
  }
  return total;
}

/**
 * `sync`, then waits until the disks showed no activity for `quietMs`, at most `maxMs`.
 * Returns the seconds waited (reported by the benchmarks, so a long wait is visible).
 */
export async function settleDisk({ quietMs = 2000, maxMs = 90_000, stepMs = 500 } = {}) {
  const started = Date.now();
  spawnSync('sync');
  let last = diskActivity();
  if (last === undefined) return 0;
  let quietSince = Date.now();
  while (Date.now() - quietSince < quietMs && Date.now() - started < maxMs) {
    await new Promise((done) => setTimeout(done, stepMs));
    const now = diskActivity();
    if (now !== last) quietSince = Date.now();
    last = now;
  }
  return Math.round((Date.now() - started) / 100) / 10;
}
