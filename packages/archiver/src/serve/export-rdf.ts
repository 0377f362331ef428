// `oaibag export-rdf`: the whole archive's graph as N-Quads (docs/linked-data.md, "Limits"),
// streamed piece by piece, for loading into a server-grade triple store when the archive is
// larger than `serve`'s in-memory store holds. The graph is the one `/sparql` queries, with
// the URIs `serve` would give under the same base URL.
import { once } from 'node:events';
import type { Writable } from 'node:stream';
import { Catalog } from '../catalog/catalog.js';
import { ArchiveUris } from './archive-graph.js';
import { GraphProgress, graphChunks } from './graph-chunks.js';

export interface ExportRdfOptions {
  archiveDir: string;
  /** The base URL the URIs are minted under (as `serve --base-url`). */
  baseUrl: string;
  out: Writable;
}

/** Writes the graph to `out` (N-Triples lines, which are N-Quads in the default graph); returns the lines written. */
export async function exportRdf(options: ExportRdfOptions): Promise<number> {
  const catalog = Catalog.openForReading(options.archiveDir);
  let lines = 0;
  try {
    const uris = new ArchiveUris(options.baseUrl.replace(/\/+$/, ''));
    for (const chunk of graphChunks(catalog, uris, new GraphProgress())) {
      if (chunk.ntriples === '') continue;
      lines += chunk.ntriples.split('\n').length - 1;
      if (!options.out.write(chunk.ntriples)) await once(options.out, 'drain');
    }
  } finally {
    catalog.close();
  }
  return lines;
}
