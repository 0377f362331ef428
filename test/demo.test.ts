import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

test('the README demo wraps, inspects and extracts the embedded site byte for byte', () => {
  const out = join(mkdtempSync(join(tmpdir(), 'oaibag-demo-')), 'demo');
  const result = spawnSync(process.execPath, [join(root, 'scripts/demo.mjs'), '--out', out], { encoding: 'utf8' });
  assert.equal(result.status, 0, result.stderr);
  assert.match(result.stdout, /3 of 3 file\(s\) came back byte for byte/);
  const extracted = join(out, 'extracted', 'images_logo.png', 'logo.png');
  assert.ok(existsSync(extracted));
  assert.ok(readFileSync(extracted).equals(readFileSync(join(root, 'examples/site/images/logo.png'))));
});
