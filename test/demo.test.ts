import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

test('the README demo harvests, changes, harvests again, audits, restores identically and verifies', async (t) => {
  const work = mkdtempSync(join(tmpdir(), 'oaibag-demo-test-'));
  t.after(() => rmSync(work, { recursive: true, force: true }));
  const out = join(work, 'demo');
  // Fewer files than the README's run: the same steps, a shorter test.
  const child = spawn(process.execPath, [join(root, 'scripts/demo.mjs'), '--out', out, '--files', '80'], { stdio: 'pipe' });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
  child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
  const [code] = (await once(child, 'exit')) as [number | null];
  assert.equal(code, 0, `${stdout}\n${stderr}`);
  assert.match(stdout, /harvest #1 complete: 80 records \(80 added/);
  // 20 touched, 5 rewritten, 5 added, 5 deleted (scripts/demo-site.mjs).
  assert.match(stdout, /harvest #2 complete: 35 records \(5 added, 5 modified, 20 touched, 5 deleted, 0 failed\)/);
  assert.match(stdout, /the restored site equals the site: 80 files, byte for byte and mtime for mtime/);
  assert.match(stdout, /<repositoryName>oaibag demo archive<\/repositoryName>/, 'the archive answers Identify');
  // The first archive holds 85 resources (80, 5 added, 5 of them deleted): all go to the second.
  assert.match(stdout, /harvest #1 complete: 85 records \(80 added, 0 modified, 0 touched, 5 deleted, 0 failed\)/);
  assert.match(stdout, /demo done in/);
  assert.ok(existsSync(join(out, 'archive', 'catalog.sqlite')));
  assert.match(readFileSync(join(out, 'audit.html'), 'utf8'), /<svg/);
  assert.ok(existsSync(join(out, 'restored', 'papers', 'résumé.txt'.normalize('NFC'))) || existsSync(join(out, 'restored', 'papers', 'résumé.txt')));
});
