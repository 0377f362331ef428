import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { sha256, validateWithSchema } from './helpers.ts';

// The built command, as users run it (the test script builds before testing).
const cli = resolve(dirname(fileURLToPath(import.meta.url)), '../dist/cli.js');

function didl(args: string[], input?: Buffer) {
  const result = spawnSync(process.execPath, [cli, ...args], { input, maxBuffer: 1 << 28 });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr.toString('utf8') };
}

function workdir(): string {
  return mkdtempSync(join(tmpdir(), 'didl-cli-'));
}

function assertOneLineError(stderr: string, code: string) {
  const lines = stderr.trim().split('\n');
  assert.equal(lines.length, 1, `expected one line, got:\n${stderr}`);
  assert.match(lines[0]!, /^didl: /);
  assert.ok(lines[0]!.includes(`[${code}]`), lines[0]);
  assert.doesNotMatch(stderr, /^\s+at /m, 'no stack trace');
}

test('didl wrap writes a schema-valid document whose datastream extracts byte for byte', () => {
  const dir = workdir();
  const payload = randomBytes(200_000);
  const file = join(dir, 'report 2026.pdf');
  writeFileSync(file, payload);
  const wrapped = didl(['wrap', file, '--id', 'http://www.example.org/docs/report%202026.pdf', '--by-value', '--header', 'ETag: "abc"']);
  assert.equal(wrapped.status, 0, wrapped.stderr);
  const xml = wrapped.stdout.toString('utf8');
  assert.ok(validateWithSchema(xml, 'didl.xsd').ok);
  assert.match(xml, /<http:Content-Type>application\/pdf<\/http:Content-Type>/);
  assert.match(xml, /<http:ETag>"abc"<\/http:ETag>/);
  const record = join(dir, 'record.xml');
  writeFileSync(record, xml);

  const out = join(dir, 'out');
  const extracted = didl(['extract', record, '--out', out]);
  assert.equal(extracted.status, 0, extracted.stderr);
  assert.ok(readFileSync(join(out, 'report 2026.pdf')).equals(payload));
  assert.match(extracted.stdout.toString(), new RegExp(`sha256 ${sha256(payload)}  200000 bytes`));

  // Refuses to overwrite, unless told to.
  const again = didl(['extract', record, '--out', out]);
  assert.equal(again.status, 1);
  assertOneLineError(again.stderr, 'ERR_DIDL_OUTPUT_EXISTS');
  assert.equal(didl(['extract', record, '--out', out, '--force']).status, 0);
});

test('didl inspect prints headers, sizes and digests, as text and as JSON, from a file or stdin', () => {
  const dir = workdir();
  const file = join(dir, 'a.txt');
  writeFileSync(file, 'hello\n');
  const xml = didl(['wrap', file, '--id', 'https://example.org/a.txt', '--by-value']).stdout;
  const text = didl(['inspect', '-'], xml);
  assert.equal(text.status, 0, text.stderr);
  assert.match(text.stdout.toString(), /identifier\s+https:\/\/example.org\/a.txt/);
  assert.match(text.stdout.toString(), /by-value\s+text\/plain\s+6 bytes\s+sha256 5891b5b5\w+\s+\(matches digest\)/);
  const recordFile = join(dir, 'a.xml');
  writeFileSync(recordFile, xml);
  const json = didl(['inspect', recordFile, '--json']);
  const parsed = JSON.parse(json.stdout.toString());
  assert.equal(parsed.records[0].didl.identifier, 'https://example.org/a.txt');
  assert.equal(parsed.records[0].didl.item.components[0].resources[1].byValue.size, 6);
});

test('bad input: one line naming the problem and its code, exit 1, no stack trace', () => {
  const dir = workdir();
  const file = join(dir, 'a.bin');
  writeFileSync(file, randomBytes(5000));
  const xml = didl(['wrap', file, '--id', 'http://example.org/a.bin', '--by-value']).stdout.toString();
  const truncated = join(dir, 'truncated.xml');
  writeFileSync(truncated, xml.slice(0, xml.length / 2));
  const result = didl(['inspect', truncated]);
  assert.equal(result.status, 1);
  assertOneLineError(result.stderr, 'ERR_DIDL_TRUNCATED');
  assert.match(result.stderr, /line \d+, column \d+/);

  const missing = didl(['inspect', join(dir, 'nope.xml')]);
  assert.equal(missing.status, 1);
  assertOneLineError(missing.stderr, 'ERR_DIDL_INPUT');

  const ftp = didl(['wrap', file, '--id', 'ftp://example.org/a.bin']);
  assert.equal(ftp.status, 1);
  assertOneLineError(ftp.stderr, 'ERR_DIDL_BAD_REF');
});

test('a record whose size disagrees with its Content-Length extracts nothing', () => {
  const dir = workdir();
  const file = join(dir, 'a.bin');
  writeFileSync(file, randomBytes(3000));
  const xml = didl(['wrap', file, '--id', 'http://example.org/a.bin', '--by-value']).stdout.toString();
  const lying = join(dir, 'lying.xml');
  writeFileSync(lying, xml.replace('<http:Content-Length>3000<', '<http:Content-Length>2999<'));
  const out = join(dir, 'out');
  const result = didl(['extract', lying, '--out', out]);
  assert.equal(result.status, 1);
  assertOneLineError(result.stderr, 'ERR_DIDL_LENGTH_MISMATCH');
  assert.deepEqual(readdirSync(out), [], 'no file, not even a temporary one');
});

test('usage errors exit 2 and say what is missing', () => {
  const result = didl(['wrap', 'x']);
  assert.equal(result.status, 2);
  assert.match(result.stderr, /--id/);
  assert.equal(didl(['frobnicate']).status, 2);
  const help = didl(['--help']);
  assert.equal(help.status, 0);
  assert.match(help.stdout.toString(), /Exit codes/);
});

test('didl inspect --lenient reads identifiers as the harvester does; without it the mod_oai profile is checked', () => {
  const dir = mkdtempSync(join(tmpdir(), 'didl-lenient-'));
  const file = join(dir, 'dare.xml');
  writeFileSync(
    file,
    '<didl:DIDL xmlns:didl="urn:mpeg:mpeg21:2002:02-DIDL-NS" xmlns:dii="urn:mpeg:mpeg21:2002:01-DII-NS"><didl:Item>' +
      '<didl:Descriptor><didl:Statement mimeType="application/xml"><dii:Identifier>URN:NBN:NL:UI:17-548</dii:Identifier></didl:Statement></didl:Descriptor>' +
      '<didl:Descriptor><didl:Statement mimeType="application/xml"><dii:Identifier>info:doi/10.1000/548</dii:Identifier></didl:Statement></didl:Descriptor>' +
      '</didl:Item></didl:DIDL>',
  );
  const strict = didl(['inspect', file]);
  assert.equal(strict.status, 1);
  assert.match(strict.stdout.toString(), /ERR_DIDL_REPEATED_IDENTIFIER/);
  const lenient = didl(['inspect', '--lenient', file]);
  assert.equal(lenient.status, 0, lenient.stderr.toString());
  assert.match(lenient.stdout.toString(), /identifier {6}URN:NBN:NL:UI:17-548\n {2}also {12}info:doi\/10\.1000\/548\n/);
});
