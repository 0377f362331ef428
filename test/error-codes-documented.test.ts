// Every error code a package defines is named in docs/ (an operator reading `[ERR_…]` on a line
// finds what it means), and nothing names a code that does not exist: not a doc, not a README,
// not a comment in the sources. A code is defined by a `…ErrorCode` union type or by an error
// class's `readonly code = 'ERR_…'`; any other `ERR_…` in the sources must be one of those or
// one of Node's own codes listed below.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** Node's own codes that our sources test for or explain (streams, workers, zlib); not ours to document. */
const NODE_CODES = new Set(['ERR_INTERNAL_ASSERTION', 'ERR_STREAM_DESTROYED', 'ERR_STREAM_PREMATURE_CLOSE', 'ERR_WORKER_OUT_OF_MEMORY']);

/** A whole code: not a piece of a longer one (`ERR_ARCHIVE_IO` is not in `ERR_ARCHIVE_IOX`). */
const CODE = /(?<![A-Z0-9_])ERR_[A-Z0-9_]*[A-Z0-9](?![A-Z0-9_])/g;
/** A family written as a prefix (`ERR_HARVEST_*`, `code.startsWith('ERR_HARVEST_')`). */
const FAMILY = /(?<![A-Z0-9_])ERR_[A-Z0-9_]*_(?![A-Z0-9])/g;

function files(dir: string, ending: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? files(join(dir, entry.name), ending) : entry.name.endsWith(ending) ? [join(dir, entry.name)] : [],
  );
}

const packages = readdirSync(join(ROOT, 'packages'));
const sources = packages.flatMap((name) => files(join(ROOT, 'packages', name, 'src'), '.ts')).map((path) => ({ path, text: readFileSync(path, 'utf8') }));
const docs = files(join(ROOT, 'docs'), '.md').map((path) => ({ path, text: readFileSync(path, 'utf8') }));
const readmes = [join(ROOT, 'README.md'), ...packages.map((name) => join(ROOT, 'packages', name, 'README.md'))].flatMap((path) => {
  try {
    return [{ path, text: readFileSync(path, 'utf8') }];
  } catch {
    return [];
  }
});

/** The codes the packages define, each with the file that defines it. */
function definedCodes(): Map<string, string> {
  const defined = new Map<string, string>();
  for (const { path, text } of sources) {
    for (const union of text.matchAll(/\btype\s+\w*ErrorCode\s*=([^;]*);/g)) {
      for (const literal of union[1]!.matchAll(/'(ERR_[A-Z0-9_]+)'/g)) defined.set(literal[1]!, path);
    }
    for (const field of text.matchAll(/readonly\s+code\s*=\s*'(ERR_[A-Z0-9_]+)'/g)) defined.set(field[1]!, path);
  }
  return defined;
}

const defined = definedCodes();
const where = (path: string) => relative(ROOT, path);

test('the codes are found where each package defines them (this test would pass vacuously otherwise)', () => {
  for (const code of ['ERR_ARCHIVE_USAGE', 'ERR_HARVEST_LIMIT', 'ERR_IMPORT_KIND', 'ERR_DIDL_INPUT', 'ERR_REPO_ROOT', 'ERR_AUTH_FILE']) {
    assert.ok(defined.has(code), `${code} was not found as a defined code; has its union type or class moved?`);
  }
  assert.ok(defined.size >= 40, `only ${defined.size} codes found`);
});

test('every defined error code is named in some docs/*.md', () => {
  const named = new Set(docs.flatMap(({ text }) => [...text.matchAll(CODE)].map((match) => match[0])));
  const missing = [...defined].filter(([code]) => !named.has(code)).map(([code, path]) => `${code} (${where(path)})`);
  assert.deepEqual(missing, [], `error codes in no docs page: ${missing.join(', ')}`);
});

test('no doc, README or source names a code that does not exist, nor a family no code belongs to', () => {
  const unknown: string[] = [];
  for (const { path, text } of [...docs, ...readmes, ...sources]) {
    for (const [code] of text.matchAll(CODE)) {
      if (!defined.has(code) && !NODE_CODES.has(code)) unknown.push(`${code} in ${where(path)}`);
    }
    for (const [family] of text.matchAll(FAMILY)) {
      if (![...defined.keys()].some((code) => code.startsWith(family))) unknown.push(`${family}* in ${where(path)}`);
    }
  }
  assert.deepEqual([...new Set(unknown)], [], `codes that nothing defines: ${unknown.join(', ')}`);
});
