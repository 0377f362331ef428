// What a bag is once its files are written: its payload files, sealed in tmp/ (complete, not
// yet durable nor in place), then finished (in place). Shared by the writer, which seals bags,
// and the placement (aip/bag-placement.ts), which makes them durable and renames them into place.

/** One payload file of a bag, with the path as written in the manifests (`data/…`, NFC). */
export interface PayloadFile {
  path: string;
  size: number;
  sha256: string;
  sha512: string;
}

/** A bag whose files are all written (tag files and manifests included) but not yet placed. */
export interface SealedBag {
  /** Absolute path of the temporary directory holding the bag. */
  tempDir: string;
  /** The bag directory relative to the archive, `/`-separated. */
  destination: string;
  /** Absolute path of the destination (checked to be inside the archive). */
  bagPath: string;
  payloadOxum: string;
  files: PayloadFile[];
}

/** A sealed bag once placed (or found already in place). */
export interface FinishedBag {
  /** Absolute path of the bag directory. */
  bagPath: string;
  /** `<bytes>.<files>`, as in bag-info.txt. */
  payloadOxum: string;
  files: PayloadFile[];
  /**
   * True when the destination already held the same bag (a duplicate delivery): nothing was
   * written and the existing bag stands.
   */
  existing: boolean;
}
