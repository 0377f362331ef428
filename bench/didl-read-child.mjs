// One reader run in a fresh process, for its peak memory: `didl-parse.mjs` starts it under
// `/usr/bin/time -v`. Prints one JSON line: the run's figures and VmHWM (peak RSS as the
// kernel counts it for this process), which is the fallback when GNU time is missing.
//
//   node bench/didl-read-child.mjs bench/work/didl-1024MiB.xml
//
// Also handy for profiling the reader alone: node --cpu-prof bench/didl-read-child.mjs FILE
import { loadDidl, measureReader, peakRssFromProc } from './didl-common.mjs';

const path = process.argv[2];
if (!path) {
  process.stderr.write('usage: node bench/didl-read-child.mjs DIDL_FILE\n');
  process.exit(2);
}
const { readDidlFile } = await loadDidl();
const result = await measureReader(readDidlFile, path);
process.stdout.write(`${JSON.stringify({ ...result, vmHwmBytes: peakRssFromProc() })}\n`);
