// How far `serve --sparql-store` has written the archive's graph into a remote store: the
// graph walk's marks (graph-chunks.ts), kept so that a restarted serve resumes where it stopped
// rather than writing everything again. Kept in the catalog (catalog/store-cursors.ts) when the
// archive can be written, else in the store itself, in a graph of its own beside the archive's
// (docs/linked-data.md, "A server-grade store"). Writes to the store add triples to a set, so a
// chunk written again after a crash before its cursor was saved changes nothing.
import type { Catalog } from '../catalog/catalog.js';
import { type GraphMarks, NO_MARKS, versionsAfter } from '../catalog/graph-rows.js';
import { readStoreCursor, writeStoreCursor } from '../catalog/store-cursors.js';
import { type GraphPaging, GraphProgress } from './graph-chunks.js';

export interface StoreCursor {
  /** The base URL serve minted the graph's URIs with. */
  base: string;
  marks: GraphMarks;
  /** GraphProgress.openHarvest: the first harvest still running at the last walk. */
  openHarvest: number;
  /**
   * The last version written, by its stable name (`bag path#record`): a catalog rebuilt since
   * (reindex) numbers its rows otherwise, and then the store is written again from the start.
   */
  lastVersion: string | null;
}

/** Where a cursor is kept. */
export interface CursorPlace {
  /** For messages: `the catalog`, or the graph it is kept in. */
  readonly where: string;
  read(): Promise<string | undefined>;
  write(text: string): Promise<void>;
}

/** The cursor row of `store` and `graph` in a catalog this process may write. */
export function catalogCursorPlace(catalog: Catalog, store: string, graph: string): CursorPlace {
  return {
    where: 'the catalog',
    read: async () => readStoreCursor(catalog, store, graph),
    write: async (text) => writeStoreCursor(catalog, store, graph, text, new Date().toISOString()),
  };
}

/** The cursor as `progress` stands. */
export function cursorOf(catalog: Catalog, base: string, progress: GraphProgress): StoreCursor {
  return { base, marks: { ...progress.marks }, openHarvest: progress.openHarvest, lastVersion: versionName(catalog, progress.marks.version) };
}

/**
 * The walk's progress saved in `text`, when it was written from this catalog with this base
 * URL; undefined otherwise (nothing saved, another base, a rebuilt catalog, a text not ours).
 */
export function resumedProgress(catalog: Catalog, base: string, text: string | undefined, paging: Partial<GraphPaging> = {}): GraphProgress | undefined {
  const cursor = parseCursor(text);
  if (!cursor || cursor.base !== base || versionName(catalog, cursor.marks.version) !== cursor.lastVersion) return undefined;
  const progress = new GraphProgress(paging);
  progress.marks = cursor.marks;
  progress.openHarvest = cursor.openHarvest;
  return progress;
}

function parseCursor(text: string | undefined): StoreCursor | undefined {
  if (text === undefined) return undefined;
  try {
    const cursor = JSON.parse(text) as StoreCursor;
    const marks = cursor.marks;
    const whole = (value: unknown) => Number.isSafeInteger(value) && (value as number) >= 0;
    if (typeof cursor.base !== 'string' || typeof marks !== 'object' || marks === null) return undefined;
    if (!Object.keys(NO_MARKS).every((key) => whole(marks[key as keyof GraphMarks])) || !whole(cursor.openHarvest)) return undefined;
    if (cursor.lastVersion !== null && typeof cursor.lastVersion !== 'string') return undefined;
    return { base: cursor.base, marks: { ...NO_MARKS, ...marks }, openHarvest: cursor.openHarvest, lastVersion: cursor.lastVersion };
  } catch {
    return undefined;
  }
}

/** The stable name of the version with row id `id` (null for 0 or a row that is not there). */
function versionName(catalog: Catalog, id: number): string | null {
  if (id === 0) return null;
  const version = versionsAfter(catalog, id - 1, 1)[0];
  return version?.id === id ? `${version.bagPath}#${version.record}` : null;
}
