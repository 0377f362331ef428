#!/usr/bin/env node
// The installed `oaibag` command. A committed shim, so that pnpm can link the bin at install
// time, before the build has written dist/. It runs the bundled command (scripts/bundle-cli.mjs),
// which the build writes after `tsc -b`.
import '../dist/bundle/oaibag.js';
