#!/usr/bin/env node
// The README's first command ends here. Until the archiver exists, the main job is the DIDL
// codec: wrap each file of a site as an oai_didl record (By-Reference and By-Value), inspect
// it, extract the datastream again and compare it byte for byte with the original.
//
//   node scripts/demo.mjs [SITE_DIR] [--base-url URL] [--out DIR]
//
// SITE_DIR defaults to the embedded example site (examples/site); output goes to .demo/.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, mkdirSync, openSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const didl = join(root, 'packages/didl/dist/cli.js');
const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { 'base-url': { type: 'string', default: 'http://www.example.org/' }, out: { type: 'string', default: join(root, '.demo') } },
});
const site = resolve(positionals[0] ?? join(root, 'examples/site'));
const out = resolve(values.out);
const baseUrl = values['base-url'].endsWith('/') ? values['base-url'] : `${values['base-url']}/`;

rmSync(out, { recursive: true, force: true });
mkdirSync(join(out, 'records'), { recursive: true });

const files = listFiles(site);
if (files.length === 0) fail(`no files under ${site}`);
console.log(`oaibag demo: ${files.length} file(s) from ${site}\n`);

const rows = [];
for (const file of files) {
  const path = relative(site, file).split(sep).join('/');
  const url = baseUrl + path.split('/').map(encodeURIComponent).join('/');
  const record = join(out, 'records', `${path.replaceAll('/', '_')}.didl.xml`);
  const extracted = join(out, 'extracted', path.replaceAll('/', '_'));

  step(`didl wrap ${relative(root, file)} --id ${url} --by-value > ${relative(root, record)}`);
  run(['wrap', file, '--id', url, '--by-value'], record);
  step(`didl inspect ${relative(root, record)}`);
  process.stdout.write(indent(run(['inspect', record])));
  step(`didl extract ${relative(root, record)} --out ${relative(root, extracted)}`);
  process.stdout.write(indent(run(['extract', record, '--out', extracted])));

  const [written] = readdirSync(extracted).map((name) => join(extracted, name));
  const original = readFileSync(file);
  const copy = readFileSync(written);
  const same = original.equals(copy);
  rows.push({ path, bytes: original.length, record: statSync(record).size, sha256: sha256(original).slice(0, 16), same });
  console.log(`  compare: ${same ? 'identical' : 'DIFFERENT'}\n`);
}

console.log('file'.padEnd(24), 'bytes'.padStart(8), 'record'.padStart(8), 'sha-256 (first 16)'.padEnd(18), 'round trip');
for (const row of rows) {
  console.log(row.path.padEnd(24), String(row.bytes).padStart(8), String(row.record).padStart(8), row.sha256.padEnd(18), row.same ? 'identical' : 'DIFFERENT');
}
const bad = rows.filter((row) => !row.same).length;
console.log(`\n${rows.length - bad} of ${rows.length} file(s) came back byte for byte. Records and extracted files are in ${relative(root, out) || out}/`);
process.exitCode = bad === 0 ? 0 : 1;

function run(args, stdoutFile) {
  // With stdoutFile the command writes straight into it, as `> FILE` does in a shell.
  const fd = stdoutFile ? openSync(stdoutFile, 'w') : undefined;
  try {
    const result = spawnSync(process.execPath, [didl, ...args], {
      encoding: 'utf8',
      stdio: ['ignore', fd ?? 'pipe', 'pipe'],
    });
    if (result.status !== 0) fail(`didl ${args[0]} failed: ${String(result.stderr).trim()}`);
    return result.stdout ?? '';
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

function listFiles(dir) {
  const found = [];
  for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
    if (entry.name.startsWith('.')) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) found.push(...listFiles(path));
    else if (entry.isFile()) found.push(path);
  }
  return found;
}

function sha256(bytes) {
  return createHash('sha256').update(bytes).digest('hex');
}

function step(text) {
  console.log(`$ ${text}`);
}

function indent(text) {
  return text.replace(/^(?=.)/gm, '  ');
}

function fail(message) {
  console.error(`demo: ${message}`);
  process.exit(1);
}
