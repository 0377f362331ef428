// The `oaibag` command itself: version, help, unknown commands (each command has its own tests).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

const BIN = new URL('../packages/archiver/dist/cli.js', import.meta.url).pathname;
const oaibag = (...args: string[]) => spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8' });
const COMMANDS = ['harvest', 'mirror', 'restore', 'audit', 'verify', 'urls', 'status', 'serve'];

test('--version and -V print the version of package.json and exit 0', () => {
  const { version } = JSON.parse(readFileSync(new URL('../packages/archiver/package.json', import.meta.url), 'utf8')) as { version: string };
  for (const flag of ['--version', '-V']) {
    const result = oaibag(flag);
    assert.equal(result.status, 0, result.stderr);
    assert.equal(result.stdout, `${version}\n`);
  }
});

test('--help names every command and exits 0', () => {
  const result = oaibag('--help');
  assert.equal(result.status, 0, result.stderr);
  for (const command of COMMANDS) assert.match(result.stdout, new RegExp(`^\\s+${command}\\b`, 'm'), `${command} is not in the help`);
});

test('harvest --help documents its exit codes and OAIBAG_SYNC', () => {
  const result = oaibag('harvest', '--help');
  assert.equal(result.status, 0, result.stderr);
  assert.match(result.stdout, /Exit codes: 0 all done; 1 /);
  assert.match(result.stdout, /OAIBAG_SYNC=files/);
  assert.match(result.stdout, /--allow-private-refs/);
  assert.match(result.stdout, /redirects are followed \(at most 10\)/);
});

test('an unknown command exits 2 with a one-line error and where the help is, no stack trace', () => {
  const result = oaibag('harvset');
  assert.equal(result.status, 2);
  assert.match(result.stderr, /unknown command 'harvset'/);
  assert.doesNotMatch(result.stderr, /\n\s+at /);
  assert.deepEqual(result.stderr.split('\n').slice(1), ['(see `oaibag --help`)', '']);
});

test('a usage error is at most two lines on stderr (the error, where the help is), not the whole --help, and exit 2', () => {
  const cases: [string[], RegExp][] = [
    [['serve', '--prot', '8080'], /^error: unknown option '--prot' \(Did you mean --port\?\)$/],
    [['serve', '--by-value-max', 'lots'], /^error: option '--by-value-max <SIZE>' argument 'lots' is invalid\. .*expected a size in bytes/],
    [['harvest'], /^error: missing required argument/],
    [['status', '--no-such-option'], /^error: unknown option '--no-such-option'$/],
  ];
  for (const [args, firstLine] of cases) {
    const result = oaibag(...args);
    assert.equal(result.status, 2, `${args.join(' ')}: ${result.stderr}`);
    const lines = result.stderr.trimEnd().split('\n');
    assert.ok(lines.length <= 2, `${args.join(' ')} printed ${lines.length} lines:\n${result.stderr}`);
    assert.match(lines[0]!, firstLine);
    assert.equal(lines[1], `(see \`oaibag ${args[0]} --help\`)`);
    assert.equal(result.stdout, '');
  }
});
