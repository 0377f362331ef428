// The comparisons of `serve --link-to` (docs/linked-data.md, "Links between archives"): a remote's
// values are indexed once, then each of this archive's values is looked up. Equality (a rule at
// threshold 1, and digests) is a hash lookup. Similarity is normalized Levenshtein similarity,
// 1 - distance / length of the longer value, computed only within blocks: the remote values that
// share a word (a run of letters or digits, in lower case) with the value looked up, a word shared
// by more than `blockSize` remote values being no block at all, and whose lengths leave the
// threshold within reach. Values are cut to `valueLength` characters first, and the pairs looked
// at are counted against a budget: never all pairs.
import { createHash } from 'node:crypto';
import { distance } from 'fastest-levenshtein';

/** Values at most this long are their own key in an equality index; a longer one is keyed by its SHA-256. */
const SHORT_KEY = 64;
/** Values rounded this close to the threshold count as reaching it (1 - 0.9 is 0.0999… in floating point). */
const EPSILON = 1e-9;

/** A value as compared: Unicode NFC, without leading or trailing white space. */
export function normalizedValue(value: string): string {
  return value.normalize('NFC').trim();
}

function exactKey(value: string): string {
  return value.length <= SHORT_KEY ? `=${value}` : `#${createHash('sha256').update(value).digest('base64')}`;
}

/** The words a value is blocked by: runs of letters or digits, in lower case, each once. */
export function words(value: string): string[] {
  return [...new Set(value.toLowerCase().split(/[^\p{L}\p{N}]+/u))].filter((word) => word !== '');
}

/** The most edits two values of these lengths may differ by and still reach `threshold`. */
export function allowedEdits(a: number, b: number, threshold: number): number {
  return Math.floor((1 - threshold) * Math.max(a, b) + EPSILON);
}

/** How many pairs may still be looked at; `exceeded` once one more was wanted. */
export class ComparisonBudget {
  exceeded = false;
  private looked = 0;

  constructor(readonly most: number) {}

  /** Counts one pair; false (and `exceeded`) past the budget. */
  take(): boolean {
    if (this.looked >= this.most) {
      this.exceeded = true;
      return false;
    }
    this.looked++;
    return true;
  }

  get used(): number {
    return this.looked;
  }
}

/** Remote subjects by value, for equality. Values are kept as keys only (a long one as its digest). */
export class ExactIndex {
  private readonly subjects = new Map<string, string[]>();
  private count = 0;

  add(value: string, subject: string): void {
    const normal = normalizedValue(value);
    if (normal === '') return;
    const key = exactKey(normal);
    const held = this.subjects.get(key);
    if (held === undefined) this.subjects.set(key, [subject]);
    else if (!held.includes(subject)) held.push(subject);
    this.count++;
  }

  /** The subjects whose value equals `value`. */
  find(value: string): readonly string[] {
    const normal = normalizedValue(value);
    return normal === '' ? [] : (this.subjects.get(exactKey(normal)) ?? []);
  }

  get size(): number {
    return this.count;
  }
}

interface Entry {
  value: string;
  subject: string;
}

/** Remote values blocked by their words, for similarity at or above `threshold`. */
export class SimilarIndex {
  private readonly entries: Entry[] = [];
  private readonly blocks = new Map<string, number[]>();
  /** Equal values always reach any threshold, whatever their words: found by key too. */
  private readonly equal = new ExactIndex();
  private sealed = false;

  constructor(
    readonly threshold: number,
    private readonly valueLength: number,
  ) {}

  add(value: string, subject: string): void {
    const normal = normalizedValue(value).slice(0, this.valueLength);
    if (normal === '') return;
    this.equal.add(normal, subject);
    const index = this.entries.push({ value: normal, subject }) - 1;
    for (const word of words(normal)) {
      const block = this.blocks.get(word);
      if (block === undefined) this.blocks.set(word, [index]);
      else block.push(index);
    }
  }

  /** Drops the blocks of words more than `blockSize` values share; returns how many were dropped. */
  seal(blockSize: number): number {
    let dropped = 0;
    for (const [word, block] of this.blocks) {
      if (block.length > blockSize) {
        this.blocks.delete(word);
        dropped++;
      }
    }
    this.sealed = true;
    return dropped;
  }

  get size(): number {
    return this.entries.length;
  }

  /**
   * The subjects whose value reaches the threshold against `value`: equal values, then the
   * values of its blocks within the length window, each pair looked at counted in `budget`
   * (none once it is spent).
   */
  find(value: string, budget: ComparisonBudget): string[] {
    if (!this.sealed) throw new Error('SimilarIndex.find before seal');
    const normal = normalizedValue(value).slice(0, this.valueLength);
    if (normal === '') return [];
    const found = new Set(this.equal.find(normal));
    const seen = new Set<number>();
    for (const word of words(normal)) {
      for (const index of this.blocks.get(word) ?? []) {
        if (seen.has(index)) continue;
        if (!budget.take()) return [...found];
        seen.add(index);
        const entry = this.entries[index]!;
        if (found.has(entry.subject)) continue;
        const edits = allowedEdits(normal.length, entry.value.length, this.threshold);
        // At least the difference in length is edits: no need to count them past it.
        if (Math.abs(normal.length - entry.value.length) > edits) continue;
        if (distance(normal, entry.value) <= edits) found.add(entry.subject);
      }
    }
    return [...found];
  }
}
