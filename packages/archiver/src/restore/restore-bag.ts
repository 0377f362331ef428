// What `oaibag restore` needs to read the archive's payload files: how a payload file is opened,
// and the error that reports one that fails its check (the bytes come from the catalog's index
// of payload files, see stage-version.ts; no tag file or manifest is read by a restore).

import { constants as fsConstants } from 'node:fs';

/** Opens a payload file for reading, never through a symbolic link. */
export const OPEN_PAYLOAD = fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW;

/** A payload file that fails a check: the restore reports it by name and writes nothing of it. */
export class Damage extends Error {
  constructor(
    message: string,
    readonly expected?: string,
    readonly found?: string,
  ) {
    super(message);
  }
}
