#!/usr/bin/env node
// The installed `oaibag` command. A committed shim, so that pnpm can link the bin at install
// time, before `tsc -b` has written dist/.
import '../dist/cli.js';
