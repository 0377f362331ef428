import type { Stats } from 'node:fs';
import { stat } from 'node:fs/promises';
import { DidlError } from './errors.js';

const REASONS: Record<string, string> = {
  ENOENT: 'no such file',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EISDIR: 'is a directory',
  ENOTDIR: 'a part of the path is not a directory',
  ELOOP: 'too many symbolic links',
};

/** A file-system failure on an input file as a one-line ERR_DIDL_INPUT, or undefined for other errors. */
export function inputFileError(path: string, error: unknown): DidlError | undefined {
  if (error instanceof DidlError) return error;
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (typeof code !== 'string' || !code.startsWith('E')) return undefined;
  return new DidlError('ERR_DIDL_INPUT', `cannot read ${path}: ${REASONS[code] ?? code}`);
}

/** Checks that `path` is a regular file we can stat; throws ERR_DIDL_INPUT otherwise. */
export async function statInputFile(path: string) {
  let info: Stats;
  try {
    info = await stat(path);
  } catch (error) {
    throw inputFileError(path, error) ?? error;
  }
  if (!info.isFile()) throw new DidlError('ERR_DIDL_INPUT', `cannot read ${path}: not a regular file`);
  return info;
}
