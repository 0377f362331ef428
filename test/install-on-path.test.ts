// The README's one command that puts `oaibag` on the PATH, run as written into a temporary
// prefix instead of /usr/local: the installed commands run from a bare environment (another
// folder, no npm, a PATH without the clone), and the path docs/mirror.md's unit calls is the
// one the command installs. Needs the build (README command 1 or 2).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const PREFIX = '/usr/local';

test("the README's install command puts oaibag and oaibag-repository on the PATH, where docs/mirror.md's unit calls oaibag", () => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const command = /^sudo (npm install -g --prefix \/usr\/local [^\n]+)$/m.exec(readme)?.[1];
  assert.ok(command, 'README.md gives the install command');
  const mirrorDoc = readFileSync(join(ROOT, 'docs/mirror.md'), 'utf8');
  assert.match(mirrorDoc, new RegExp(`^ExecStart=${PREFIX}/bin/oaibag `, 'm'));
  assert.match(mirrorDoc, new RegExp(`^\\S+ \\S+ \\S+ \\S+ \\S+ +${PREFIX}/bin/oaibag `, 'm'), 'the cron line calls the installed path');

  const prefix = mkdtempSync(join(tmpdir(), 'oaibag-install-'));
  const elsewhere = mkdtempSync(join(tmpdir(), 'oaibag-elsewhere-'));
  try {
    const args = command.split(' ').slice(1);
    args[args.indexOf(PREFIX)] = prefix;
    const install = spawnSync('npm', args, {
      cwd: ROOT,
      encoding: 'utf8',
      env: { ...process.env, npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false' },
    });
    assert.equal(install.status, 0, install.stderr);

    const { version } = JSON.parse(readFileSync(join(ROOT, 'packages/archiver/package.json'), 'utf8')) as { version: string };
    const bare = { PATH: `${join(prefix, 'bin')}:${process.execPath.replace(/\/node$/, '')}:/usr/bin:/bin`, HOME: elsewhere };
    for (const name of ['oaibag', 'oaibag-repository']) {
      const run = spawnSync(name, ['--version'], { cwd: elsewhere, encoding: 'utf8', env: bare });
      assert.equal(run.status, 0, `${name}: ${run.stderr}`);
      assert.equal(run.stdout, `${version}\n`);
    }
    // A command that writes SQLite (better-sqlite3, native) from the installed path.
    mkdirSync(join(elsewhere, 'archive/aips'), { recursive: true });
    const reindex = spawnSync('oaibag', ['reindex', '--archive', 'archive'], { cwd: elsewhere, encoding: 'utf8', env: bare });
    assert.equal(reindex.status, 0, reindex.stderr);
    assert.match(reindex.stdout + reindex.stderr, /rebuilt .*catalog\.sqlite from 0 bag/);
    assert.ok(existsSync(join(elsewhere, 'archive/catalog.sqlite')));
  } finally {
    rmSync(prefix, { recursive: true, force: true });
    rmSync(elsewhere, { recursive: true, force: true });
  }
});
