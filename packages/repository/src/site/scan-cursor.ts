import type { FileIndex, ScanRow } from './file-index.js';

/** Rows read at once: one seek of the path index per page. */
const PAGE_ROWS = 1000;

/**
 * The index's live rows below a folder in path order, read a page at a time (keyset on the
 * path), so a scan holds one page of the index, never all of it. A page is a snapshot: the
 * scan looks at a file again (with a fresh row) whenever the page's row does not match.
 */
export class ScanCursor {
  private page: ScanRow[] = [];
  private position = 0;
  private done = false;

  constructor(
    private readonly index: FileIndex,
    private readonly folder: string,
  ) {}

  /** The row at the cursor, or undefined past the last. */
  current(): ScanRow | undefined {
    if (this.position === this.page.length && !this.done) {
      const after = this.page.at(-1)?.path ?? '';
      this.page = this.index.scanPage(after, this.folder, PAGE_ROWS);
      this.position = 0;
      this.done = this.page.length < PAGE_ROWS;
    }
    return this.page[this.position];
  }

  advance(): void {
    this.position++;
  }
}
