// The built `oaibag` command as a child process, for tests that run it as an operator would.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const OAIBAG_BIN = join(resolve(dirname(fileURLToPath(import.meta.url)), '..'), 'packages/archiver/bin/oaibag.js');

export interface CommandResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `oaibag ARGS` to its end. Blocks this process: only for commands that need no server of the test. */
export function oaibag(...args: string[]): CommandResult {
  const result = spawnSync(process.execPath, [OAIBAG_BIN, ...args], { encoding: 'utf8' });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** Runs `oaibag ARGS` to its end without blocking: the test's own servers keep answering meanwhile. */
export async function oaibagAsync(...args: string[]): Promise<CommandResult> {
  const child = spawn(process.execPath, [OAIBAG_BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
  child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
  const [status] = (await once(child, 'close')) as [number | null];
  return { status, stdout, stderr };
}

/** `oaibag ARGS` started with `env` added to this process's environment (a store's credentials). */
export function startOaibag(args: readonly string[], env: Record<string, string> = {}): ChildProcess {
  return spawn(process.execPath, [OAIBAG_BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
}

/** What a started `oaibag` printed, once it has ended. */
export async function ended(child: ChildProcess): Promise<CommandResult> {
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (text: string) => (stdout += text));
  child.stderr!.setEncoding('utf8').on('data', (text: string) => (stderr += text));
  const [status] = (await once(child, 'close')) as [number | null];
  return { status, stdout, stderr };
}

/**
 * What `status --json` and `audit --format json` answer for an archive, less what differs
 * between two archives of the same content: where the catalog and the folder are, the instant
 * status was asked, the disk's free space. `run` runs `oaibag` (with a store's credentials).
 */
export async function archiveAnswers(run: (args: string[]) => Promise<CommandResult>, archive: string): Promise<{ status: unknown; audit: unknown }> {
  const status = await run(['status', '--archive', archive, '--json']);
  if (status.status !== 0) throw new Error(`status: ${status.stderr}`);
  const audit = await run(['audit', '--archive', archive, '--since', '2000-01-01', '--format', 'json']);
  if (audit.status !== 0) throw new Error(`audit: ${audit.stderr}`);
  const { file: _file, health, ...rest } = JSON.parse(status.stdout) as { file: string; health: { at: string; disk: unknown; archiveDir?: string } };
  const { at: _at, disk: _disk, archiveDir: _dir, ...healthRest } = health;
  return { status: { ...rest, health: healthRest }, audit: JSON.parse(audit.stdout) };
}

/**
 * Where a started `oaibag serve` answers, once its stderr says so; rejects if it exits first.
 * `stderr()` is all it has written so far (it keeps being read).
 */
export async function servingAt(child: ChildProcess): Promise<{ base: string; stderr: () => string }> {
  let stderr = '';
  child.stderr!.setEncoding('utf8');
  const base = await new Promise<string>((resolve, reject) => {
    child.stderr!.on('data', (chunk: string) => {
      stderr += chunk;
      const match = / at (http:\/\/\S+)\/oai /.exec(stderr);
      if (match) resolve(match[1]!);
    });
    child.on('exit', () => reject(new Error(`exited early: ${stderr}`)));
  });
  return { base, stderr: () => stderr };
}
