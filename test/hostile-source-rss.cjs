// Loaded into `oaibag` by test/hostile-source.test.ts and bench/hostile-source.mjs through
// NODE_OPTIONS=--require: writes the process's peak resident set size (kilobytes, worker threads
// included) to the file named by OAIBAG_TEST_RSS_FILE when the process exits.
const file = process.env.OAIBAG_TEST_RSS_FILE;
if (file) {
  process.on('exit', () => {
    require('node:fs').writeFileSync(file, String(process.resourceUsage().maxRSS));
  });
}
