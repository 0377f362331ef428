import { randomBytes, type ScryptOptions, scrypt, timingSafeEqual } from 'node:crypto';

/**
 * Password hashes for the `--auth` file, in the PHC-like form
 * `$scrypt$ln=15,r=8,p=1$<salt>$<key>` (base64 without padding). scrypt because it is in
 * node:crypto (no dependency) and memory-hard; the parameters live in the string so that a
 * later, costlier default still verifies the hashes already written into auth files.
 */

const LOG_N = 15;
const BLOCK_SIZE = 8;
const PARALLELISM = 1;
const SALT_BYTES = 16;
const KEY_BYTES = 32;

/** Parameter bounds. Outside them a hash is either too weak to trust or costly enough to be an attack on the server. */
const LOG_N_RANGE = [10, 20] as const;
const BLOCK_SIZE_RANGE = [1, 32] as const;
const PARALLELISM_RANGE = [1, 16] as const;
const SALT_BYTES_RANGE = [8, 64] as const;
const KEY_BYTES_RANGE = [16, 64] as const;

interface ParsedHash {
  logN: number;
  blockSize: number;
  parallelism: number;
  salt: Buffer;
  key: Buffer;
}

/**
 * Hashes a password for an auth file with a fresh random salt. Asynchronous because one
 * hash takes about 100 ms of CPU, which runs on the libuv pool instead of the event loop.
 */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const key = await deriveKey(password, salt, KEY_BYTES, LOG_N, BLOCK_SIZE, PARALLELISM);
  return `$scrypt$ln=${LOG_N},r=${BLOCK_SIZE},p=${PARALLELISM}$${unpadded(salt)}$${unpadded(key)}`;
}

/**
 * True when `password` matches `stored`. A malformed hash or one with absurd parameters is
 * simply not a match (false), so a damaged entry can never let anyone in; failures of
 * scrypt itself (such as the machine refusing the memory) reject instead of answering false,
 * because denying a correct password without a trace would be a silent outage.
 */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parsed = parseHash(stored);
  if (parsed === null) return false;
  const key = await deriveKey(password, parsed.salt, parsed.key.length, parsed.logN, parsed.blockSize, parsed.parallelism);
  return timingSafeEqual(key, parsed.key);
}

/** True when `value` has the form `verifyPassword` accepts; the auth file parser uses it to reject a bad `user` line early. */
export function isPasswordHash(value: string): boolean {
  return parseHash(value) !== null;
}

const HASH_FORM = /^\$scrypt\$ln=([1-9][0-9]?),r=([1-9][0-9]?),p=([1-9][0-9]?)\$([A-Za-z0-9+/]+)\$([A-Za-z0-9+/]+)$/;

function parseHash(value: string): ParsedHash | null {
  const match = HASH_FORM.exec(value);
  if (match === null) return null;
  const logN = Number(match[1]);
  const blockSize = Number(match[2]);
  const parallelism = Number(match[3]);
  const salt = decodeUnpadded(match[4] ?? '');
  const key = decodeUnpadded(match[5] ?? '');
  if (salt === null || key === null) return null;
  if (!within(logN, LOG_N_RANGE) || !within(blockSize, BLOCK_SIZE_RANGE) || !within(parallelism, PARALLELISM_RANGE)) return null;
  if (!within(salt.length, SALT_BYTES_RANGE) || !within(key.length, KEY_BYTES_RANGE)) return null;
  return { logN, blockSize, parallelism, salt, key };
}

function within(value: number, [low, high]: readonly [number, number]): boolean {
  return value >= low && value <= high;
}

/**
 * RFC 7613/7617 ask for Unicode Normalization Form C on passwords, so the same password typed
 * on systems that compose characters differently gives the same bytes.
 */
function deriveKey(password: string, salt: Buffer, length: number, logN: number, blockSize: number, parallelism: number): Promise<Buffer> {
  const N = 2 ** logN;
  // OpenSSL needs about 128·r·(N + p) bytes; twice that leaves room without a fixed ceiling
  // that a valid (within the bounds above) but costlier hash would hit.
  const options: ScryptOptions = { N, r: blockSize, p: parallelism, maxmem: Math.max(64 * 1024 * 1024, 256 * blockSize * (N + parallelism)) };
  return new Promise((resolve, reject) => {
    scrypt(Buffer.from(password.normalize('NFC'), 'utf8'), salt, length, options, (error, key) => {
      if (error) reject(error);
      else resolve(key);
    });
  });
}

function unpadded(bytes: Buffer): string {
  return bytes.toString('base64').replace(/=+$/, '');
}

/** Decodes only the canonical encoding, so one hash has exactly one spelling. */
function decodeUnpadded(text: string): Buffer | null {
  if (text.length % 4 === 1) return null;
  const bytes = Buffer.from(text, 'base64');
  return unpadded(bytes) === text ? bytes : null;
}
