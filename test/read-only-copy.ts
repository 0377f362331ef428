// Read-only copies of an archive and the built `oaibag` run against them as a user whom file modes
// bind (test/read-only-archive.test.ts, packages/archiver/test/older-catalog.test.ts). When we
// are root, chmod does not stop us, so the command runs as root without any capability
// (setpriv --bounding-set=-all): the copy's 0444/0555 refuse it as they refuse anyone, while the
// clone (wherever CI put it, in a folder only root may enter) stays readable.
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { chmodSync, cpSync, existsSync, lstatSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIN = join(ROOT, 'packages/archiver/bin/oaibag.js');
const BUILT = existsSync(join(ROOT, 'packages/archiver/dist/bundle/oaibag.js'));

/**
 * How the commands are run so that the copy's permissions apply: as ourselves, or when we are
 * root as root without capabilities. Undefined when we are root without setpriv.
 */
export const RUN_AS: string[] | undefined = (() => {
  if (process.getuid?.() !== 0) return [];
  const found = spawnSync('setpriv', ['--version'], { encoding: 'utf8' });
  return found.status === 0 ? ['setpriv', '--bounding-set=-all', '--inh-caps=-all'] : undefined;
})();

/** Why the command-line tests of a read-only copy are skipped here, or false. */
export const SKIP_CLI: string | false = !BUILT
  ? 'the oaibag bundle is not built (npx tsc -b && node scripts/bundle-cli.mjs)'
  : RUN_AS === undefined
    ? 'SKIPPED: running as root without setpriv, so a read-only copy cannot be made read-only for the commands'
    : false;

/** Every entry below `dir`: its path, kind, mode and, for a file, the sha-256 of its bytes. */
export function tree(dir: string): string[] {
  const lines: string[] = [];
  const walk = (path: string, rel: string): void => {
    for (const name of readdirSync(path).sort()) {
      const full = join(path, name);
      const info = lstatSync(full);
      const mode = (info.mode & 0o7777).toString(8);
      if (info.isDirectory()) {
        lines.push(`${rel}${name}/ ${mode}`);
        walk(full, `${rel}${name}/`);
      } else {
        lines.push(`${rel}${name} ${mode} ${createHash('sha256').update(readFileSync(full)).digest('hex')}`);
      }
    }
  };
  walk(dir, '');
  return lines;
}

/** Makes every file and folder below (and at) `dir` read-only for everyone. */
export function makeReadOnly(dir: string): void {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) makeReadOnly(full);
    else chmodSync(full, 0o444);
  }
  chmodSync(dir, 0o555);
}

/**
 * A read-only copy of the archive `from` at `<parent>/archive` (`extra` changes the copy first),
 * in a folder anyone may traverse; returns the copy's path.
 */
export function readOnlyCopy(from: string, parent: string, extra?: (dir: string) => void): string {
  const dir = join(parent, 'archive');
  cpSync(from, dir, { recursive: true });
  extra?.(dir);
  makeReadOnly(dir);
  chmodSync(parent, 0o755);
  return dir;
}

/**
 * `oaibag ARGS` as the user the copy is read-only for, in `cwd` with `tmpdir` as its TMPDIR.
 * Asynchronous: a repository it may ask (urls, harvest) answers from this process.
 */
export async function oaibagAs(args: string[], cwd: string, tmpdir: string): Promise<{ status: number | null; stdout: string; stderr: string }> {
  if (RUN_AS === undefined) throw new Error(SKIP_CLI || 'no way to run oaibag as a user the copy binds');
  const [command, ...prefix] = [...RUN_AS, process.execPath];
  const child = spawn(command!, [...prefix, BIN, ...args], { cwd, env: { ...process.env, TMPDIR: tmpdir }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString('utf8');
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  const [status] = (await once(child, 'close')) as [number | null];
  return { status, stdout, stderr };
}
