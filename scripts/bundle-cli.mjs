#!/usr/bin/env node
// Bundles the `oaibag` command into one file, packages/archiver/dist/bundle/oaibag.js, after
// `tsc -b` has written dist/: the archiver's and the DIDL reader's modules in one scope.
//
// Why: a harvest is a fresh process each time, and its code runs once. Loaded as ~90 separate
// ES modules, Node spent about 80 ms more resolving, reading and linking them before the first
// request, and the update of the mod_oai benchmark took 5-12% longer (median of 6 paired runs,
// 2 cores; bench/README.md). better-sqlite3 (native) and undici (loaded piecemeal by
// oai/undici-pool.ts) stay outside. sax and commander are CommonJS and come inside: imported
// from outside, Node ran its CommonJS export scanner over each at every start, and V8 then spent
// some 150 ms of background compiling on that scanner during a harvest.
//
// The bundle sits one folder below dist/, as every module that finds a file relative to its
// own URL does (core/version.ts: ../../package.json; verify/: ../verify/verify-worker.js).
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const archiver = join(dirname(fileURLToPath(import.meta.url)), '..', 'packages', 'archiver');

await build({
  entryPoints: [join(archiver, 'dist', 'cli.js')],
  outfile: join(archiver, 'dist', 'bundle', 'oaibag.js'),
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  external: ['better-sqlite3', 'undici', 'oxigraph', '@aws-sdk/client-s3'],
  // sax and commander are CommonJS and require Node's modules: the bundle gives them `require`.
  banner: { js: "import { createRequire as createRequireForBundle } from 'node:module';\nconst require = createRequireForBundle(import.meta.url);" },
  sourcemap: 'linked',
  logLevel: 'warning',
});
