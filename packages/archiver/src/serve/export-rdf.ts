// `oaibag export-rdf`: the whole archive's graph as N-Quads (docs/linked-data.md, "Large archives"),
// streamed piece by piece, for loading into a server-grade triple store when the archive is
// larger than `serve`'s in-memory store holds. The graph is the one `/sparql` queries, with
// the URIs `serve` would give under the same base URL.
import { once } from 'node:events';
import type { Writable } from 'node:stream';
import { streamFileDurably } from '../archive/durable-file.js';
import { Catalog } from '../catalog/catalog.js';
import { ArchiveUris } from './archive-graph.js';
import { type GraphPaging, GraphProgress, graphChunks } from './graph-chunks.js';

export interface ExportRdfOptions {
  archiveDir: string;
  /** The base URL the URIs are minted under (as `serve --base-url`). */
  baseUrl: string;
  out: Writable;
  /** How the catalog is read (rows a query, characters a piece); the defaults suit every size, tests set them low. */
  paging?: Partial<GraphPaging>;
}

export interface ExportRdfFileOptions {
  archiveDir: string;
  /** The base URL the URIs are minted under (as `serve --base-url`). */
  baseUrl: string;
  /** The file written (durably and whole: see archive/durable-file.ts); an earlier one stays until the new one is complete. */
  file: string;
  /** As {@link ExportRdfOptions.paging}. */
  paging?: Partial<GraphPaging>;
}

/** Writes the graph to `out` (N-Triples lines, which are N-Quads in the default graph); returns the lines written. */
export async function exportRdf(options: ExportRdfOptions): Promise<number> {
  const { out } = options;
  return withCatalog(options.archiveDir, (catalog) =>
    writeGraph(catalog, options, async (text) => {
      if (!out.write(text)) await once(out, 'drain');
    }),
  );
}

/**
 * Writes the graph to `options.file` as {@link exportRdf} writes it to a stream, streamed to a
 * temporary name, fsynced and renamed: the file is the whole graph or what it was before. The
 * archive is opened first, so an archive that cannot be read leaves no trace beside the file.
 */
export async function exportRdfToFile(options: ExportRdfFileOptions): Promise<number> {
  return withCatalog(options.archiveDir, (catalog) => streamFileDurably(options.file, (file) => writeGraph(catalog, options, (text) => file.write(text))));
}

async function withCatalog<T>(archiveDir: string, use: (catalog: Catalog) => Promise<T>): Promise<T> {
  const catalog = Catalog.openForReading(archiveDir);
  try {
    return await use(catalog);
  } finally {
    catalog.close();
  }
}

/** Hands the graph's pieces to `write` one at a time (memory stays bounded); returns the lines written. */
async function writeGraph(
  catalog: Catalog,
  options: { baseUrl: string; paging?: Partial<GraphPaging> | undefined },
  write: (text: string) => Promise<void>,
): Promise<number> {
  const uris = new ArchiveUris(options.baseUrl.replace(/\/+$/, ''));
  let lines = 0;
  for (const chunk of graphChunks(catalog, uris, new GraphProgress(options.paging))) {
    if (chunk.ntriples === '') continue;
    lines += chunk.triples;
    await write(chunk.ntriples);
  }
  return lines;
}
