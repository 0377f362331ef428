// `oaibag verify --bag FILE.zip`: a serialized bag checked in place, read with yauzl, never
// unpacked (docs/import-export.md): the bag verifier (bag/bag-verifier.ts) over the ZIP
// (bag/zip-bag-source.ts), after what the ZIP's directory says of it as a container (one
// top-level folder, nothing beside it, no encrypted entry). Every payload file is read once,
// hashed with every algorithm its manifests use. Every bad entry is named (zip-bag-lines.ts).
import { type BagProblem, type BagProblemDetail, type BagTally, verifyBagSource } from '../bag/bag-verifier.js';
import { openZipBag } from '../bag/zip-bag-source.js';
import { zipBagLines } from './zip-bag-lines.js';

export interface ZipBagReport {
  file: string;
  /** The folder the ZIP unpacks to. */
  folder: string | null;
  entries: number;
  payloadFiles: number;
  payloadBytes: number;
  /** One line each, naming the entry. */
  problems: string[];
  ok: boolean;
}

export async function verifyZipBag(file: string): Promise<ZipBagReport> {
  const zip = await openZipBag(file);
  try {
    const details = new Map<BagProblem, BagProblemDetail>();
    const tally: BagTally = { payloadBytes: 0, payloadFiles: 0, hashedBytes: 0 };
    const report = await verifyBagSource(zip.source, { details, tally });
    const prefix = zip.folder === null ? '' : `${zip.folder}/`;
    const problems = zipBagLines(report.problems, details, { file, prefix, container: zip.problems, indexOf: zip.indexOf });
    const { payloadFiles, payloadBytes } = tally;
    return { file, folder: zip.folder, entries: zip.files, payloadFiles, payloadBytes, problems, ok: problems.length === 0 };
  } finally {
    zip.close();
  }
}
