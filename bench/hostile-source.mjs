#!/usr/bin/env node
// Hostile sources (issue 24): the worst scenario of each class of test/hostile-source.test.ts,
// run once against the test's own hostile server (test/hostile-source-server.ts, loaded through
// tsx), with the built `oaibag harvest` as a child process. Prints per class the outcome, the
// child's peak RSS (process.resourceUsage().maxRSS at its exit, worker threads included), the
// peak bytes under the archive's tmp/ (polled every 50 ms) and the time. The worst of a class
// may be a known bug (its scenario is a todo of the test): the figures say how bad. See
// bench/README.md, "Hostile sources (issue 24)".
// Run after `npx tsc -b && node scripts/bundle-cli.mjs`: `node bench/hostile-source.mjs [--only class,class] [--json]`.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { register } from 'tsx/esm/api';
import { machineFacts, parseBenchArgs, sectionsArg } from './bench-args.mjs';

const USAGE = `usage: node bench/hostile-source.mjs [--only class,class] [--json]

  --only  the classes to run (default all), e.g. --only "compression bombs,connections"
  --json  print the results as JSON too`;

const { args, usageError } = parseBenchArgs('hostile-source.mjs', USAGE, {
  only: { type: 'string' },
  json: { type: 'boolean', default: false },
});

register();
const { SCENARIOS } = await import('../test/hostile-source-scenarios.ts');
const { runOaibag, startHostileServer } = await import('../test/hostile-source-server.ts');

const worst = SCENARIOS.filter((scenario) => scenario.worst);
const classes = sectionsArg(
  args.only,
  worst.map((scenario) => scenario.class),
  usageError,
);
const runs = worst.filter((scenario) => classes.includes(scenario.class)).map((scenario) => ({ scenario, args: scenario.args ?? [] }));

const work = mkdtempSync(join(tmpdir(), 'oaibag-bench-hostile-'));
const results = [];
try {
  for (const [index, { scenario, args: options }] of runs.entries()) {
    const server = await startHostileServer();
    server.behaviour = scenario.behaviour;
    const dir = join(work, String(index));
    const cwd = join(dir, 'cwd');
    mkdirSync(cwd, { recursive: true });
    const archive = join(dir, 'archive');
    const run = await runOaibag(['harvest', server.baseUrl, '--archive', archive, ...options], {
      cwd,
      archive,
      rssFile: join(dir, 'rss'),
      timeoutMs: 600_000,
    });
    await server.close();
    rmSync(dir, { recursive: true, force: true });
    const line = run.stderr.split('\n').find((text) => /\[ERR_[A-Z0-9_]+\]/.test(text));
    const result = {
      class: scenario.class,
      scenario: scenario.name,
      options: options.join(' '),
      exit: run.timedOut ? 'killed' : run.code,
      code: /\[(ERR_[A-Z0-9_]+)\]/.exec(line ?? '')?.[1] ?? null,
      peakRssMB: run.peakRss === undefined ? null : Math.round(run.peakRss / 1e5) / 10,
      peakTmpBytes: run.peakTmp,
      seconds: Math.round(run.ms / 100) / 10,
    };
    results.push(result);
    process.stdout.write(
      `${result.class.padEnd(30)} ${String(result.exit).padStart(6)} ${String(result.code ?? '-').padEnd(24)} ` +
        `${String(result.peakRssMB).padStart(7)} MB ${String(result.peakTmpBytes).padStart(10)} B tmp/ ${String(result.seconds).padStart(6)} s  ` +
        `${result.scenario}${result.options ? ` (${result.options})` : ''}${scenario.todo ? ' [known bug]' : ''}\n`,
    );
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
if (args.json) process.stdout.write(`${JSON.stringify({ machine: machineFacts(), results }, null, 2)}\n`);
