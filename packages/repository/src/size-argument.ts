import { byteSize } from '@oaibag/oai-pmh';
import { InvalidArgumentError } from 'commander';

/** `16M` → 16777216; plain digits are bytes. For command-line options. */
export function parseByteSize(value: string): number {
  const bytes = byteSize(value);
  if (bytes === null) throw new InvalidArgumentError('expected a size in bytes, like 1048576, 512K, 16M or 1G');
  return bytes;
}

/** A whole number of at least 0. */
export function parseCount(value: string): number {
  if (!/^\d+$/.test(value.trim())) throw new InvalidArgumentError('expected a whole number');
  const count = Number(value);
  if (!Number.isSafeInteger(count)) throw new InvalidArgumentError('the number is too large');
  return count;
}
