// undici's Pool and error classes, loaded without undici's index. The index also loads fetch,
// WebSocket, the cache stores and the cookie helpers, and through those Node's own bundled copy
// of undici: about 150 ms of every harvest's start, for code a harvest never runs. The files
// below are undici's own modules; the index does exactly this with them. Should a future undici
// move them, the index is loaded instead: slower to start, never broken.

import { createRequire } from 'node:module';
import type * as Undici from 'undici';

const require = createRequire(import.meta.url);

function loadPoolOnly(): Pick<typeof Undici, 'Pool' | 'errors'> {
  try {
    const Pool = require('undici/lib/dispatcher/pool.js') as typeof Undici.Pool;
    const Dispatcher = require('undici/lib/dispatcher/dispatcher.js') as { prototype: object };
    // request(), stream(), pipeline() … are put on every dispatcher by the index, so here too.
    if (!('request' in Dispatcher.prototype)) Object.assign(Dispatcher.prototype, require('undici/lib/api/index.js'));
    const errors = require('undici/lib/core/errors.js') as typeof Undici.errors;
    if (typeof Pool === 'function' && typeof errors.UndiciError === 'function') return { Pool, errors };
  } catch {
    // undici's layout changed: fall through to its index
  }
  return require('undici') as typeof Undici;
}

const loaded = loadPoolOnly();

export const Pool = loaded.Pool;
export type Pool = Undici.Pool;
export const undiciErrors = loaded.errors;
