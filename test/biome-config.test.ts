// README command 2 starts with `biome ci .`: the project's biome.json must lint the project's
// folders and nothing a user keeps beside them in the clone (notes, scratch scripts), which
// `biome ci .` would otherwise fail on.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIOME = join(ROOT, 'node_modules/.bin/biome');
const BADLY_FORMATTED = 'const   x = "bad"  ;;\nexport { x }\n';

function biomeCi(dir: string) {
  return spawnSync(BIOME, ['ci', '.', '--colors=off'], { cwd: dir, encoding: 'utf8' });
}

test("biome ci . passes beside a user's badly formatted untracked files at the clone's root, and still fails on one in the project's folders", () => {
  const clone = mkdtempSync(join(tmpdir(), 'oaibag-biome-'));
  try {
    spawnSync('git', ['init', '-q'], { cwd: clone });
    copyFileSync(join(ROOT, 'biome.json'), join(clone, 'biome.json'));
    mkdirSync(join(clone, 'packages/x/src'), { recursive: true });
    writeFileSync(join(clone, 'packages/x/src/fine.ts'), "export const fine = 'yes';\n");
    writeFileSync(join(clone, 'scratch.ts'), BADLY_FORMATTED);
    writeFileSync(join(clone, 'notes.md'), '#   notes\n\n\n\n*  one\n');
    mkdirSync(join(clone, 'my-stuff'));
    writeFileSync(join(clone, 'my-stuff/try.json'), '{ "a":1,\n"b" :2}');
    const beside = biomeCi(clone);
    assert.equal(beside.status, 0, beside.stdout + beside.stderr);

    writeFileSync(join(clone, 'packages/x/src/bad.ts'), BADLY_FORMATTED);
    const inside = biomeCi(clone);
    assert.equal(inside.status, 1, inside.stdout + inside.stderr);
    assert.match(inside.stdout + inside.stderr, /packages\/x\/src\/bad\.ts/);
  } finally {
    rmSync(clone, { recursive: true, force: true });
  }
});
