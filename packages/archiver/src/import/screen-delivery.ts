// The first step of `oaibag import`, under the archive's lock and before its catalog is opened:
// the delivery screened whole (delivery.ts), its kind recognised (delivery-kind.ts), and the
// source its records join decided. A refused delivery, or one this import cannot take, leaves
// nothing behind (the caller removes an archive folder it made).
import type { DeliveryFacts } from '../aip/aip-metadata.js';
import { ArchiverError } from '../core/errors.js';
import { discardIncoming, type IncomingFile, type MemoryBudget, receiveIncoming } from '../ingest/incoming-file.js';
import { adoptionFolder } from './adopt-bags.js';
import { BagZipUnpacking } from './bag-zip-unpacking.js';
import { type Delivery, openDelivery } from './delivery.js';
import type { DeliveryCutOff } from './delivery-cut-off.js';
import { recogniseDelivery } from './delivery-kind.js';
import { quoteName } from './delivery-model.js';
import type { ImportOptions } from './import-options.js';
import { notAResource, repositoryOaiUrl } from './site-record.js';

/** A delivery screened and recognised, ready to be taken in. */
export interface ScreenedDelivery {
  delivery: Delivery;
  /** Its name, size, sha-256 and kind, as its bags and its run's arguments name it. */
  facts: DeliveryFacts;
  /** The OAI-PMH base URL of the source its records join (for serialized bags: their own). */
  source: string | undefined;
  /** A site's files kept in tmp/ as the screening read them, by name (taken as they are stored). */
  kept: Map<string, IncomingFile>;
  /** A delivery that may be one bag ZIP: unpacked as it is screened, so it is read once (adopt-bags.ts). */
  bagZip: BagZipUnpacking | undefined;
  /** Lets go of the files still kept and closes the delivery. */
  close(): Promise<void>;
}

/**
 * Screens and recognises the delivery of `options`. A site's files (said so, or a base URL
 * given) are kept in the archive's tmp/ as the screening reads them, so the delivery is read
 * once; what turns out to be another kind is let go.
 */
export async function screenDelivery(
  options: ImportOptions,
  siteBase: string | undefined,
  cutOff: DeliveryCutOff | undefined,
  budget: MemoryBudget,
): Promise<ScreenedDelivery> {
  const keeping = siteBase !== undefined && (options.kind === undefined || options.kind === 'site');
  const kept = new Map<string, IncomingFile>();
  const letGo = async () => {
    for (const file of kept.values()) await discardIncoming(file);
    kept.clear();
  };
  const bagZip = options.kind === undefined || options.kind === 'bags' ? new BagZipUnpacking(adoptionFolder(options.archiveDir)) : undefined;
  let delivery: Delivery | undefined;
  try {
    delivery = await openDelivery(options.delivery, {
      ...(options.limits ? { limits: options.limits } : {}),
      ...(options.progress ? { progress: (done: number, total: number) => options.progress?.({ stage: 'screening', done, total }) } : {}),
      ...(bagZip ? { listed: bagZip.listed } : {}),
      keep: (name: string) =>
        bagZip?.keep(name) ??
        (!keeping || notAResource(name) !== null
          ? undefined
          : async (bytes: AsyncIterable<Uint8Array>) => {
              kept.set(name, await receiveIncoming(options.archiveDir, bytes, budget, { sha256: false }));
            }),
    });
    const { kind, requestUrl } = await recogniseDelivery(delivery, options.kind);
    if (kind !== 'site') await letGo();
    if (kind === 'site' && siteBase === undefined) {
      throw new ArchiverError('ERR_IMPORT_KIND', `${delivery.name} holds a web site's files: give --base-url, the URL its paths are relative to`, {
        path: delivery.path,
      });
    }
    if (kind === 'bags') refuseForBags(delivery, cutOff);
    // A site's files join the source oaibag-repository serves for their base URL, whose
    // records have the same identifiers: harvesting it continues the import.
    const source = options.source ?? (kind === 'site' ? repositoryOaiUrl(siteBase!) : requestUrl);
    if (source === undefined && kind === 'didl') {
      throw new ArchiverError('ERR_ARCHIVE_USAGE', `${delivery.name} does not say which repository its records came from: give --source, its OAI-PMH base URL`);
    }
    const opened = delivery;
    const facts: DeliveryFacts = { name: opened.name, size: opened.size, sha256: opened.sha256, kind };
    const close = async () => {
      await letGo();
      await bagZip?.discard();
      await opened.close();
    };
    return { delivery: opened, facts, source, kept, bagZip, close };
  } catch (error) {
    await letGo();
    await bagZip?.discard();
    await delivery?.close();
    throw error;
  }
}

/**
 * Serialized bags carry their sources' watermarks (their lists' ends) and are taken whole: a
 * cut-off is not theirs to give, and a file of theirs nobody may read is a bag not whole.
 */
function refuseForBags(delivery: Delivery, cutOff: DeliveryCutOff | undefined): void {
  if (cutOff) {
    throw new ArchiverError(
      'ERR_ARCHIVE_USAGE',
      `--until is for a site's files or DIDL records: the serialized bags of ${delivery.name} carry their sources' watermarks`,
    );
  }
  const private_ = delivery.withheld[0];
  if (private_) {
    throw new ArchiverError(
      'ERR_IMPORT_DAMAGED',
      `${delivery.name}: entry ${quoteName(private_.name)} gives nobody read permission (mode 000): serialized bags are taken whole`,
      {
        path: delivery.path,
      },
    );
  }
}
