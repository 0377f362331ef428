import { Command } from 'commander';
import { Catalog } from '../catalog/catalog.js';

/** `oaibag status`: sources, last harvest, counts, failures outstanding. */
export function statusCommand(): Command {
  return new Command('status')
    .description('summarise an archive: sources, last harvest, counts, failures outstanding')
    .option('--archive <DIR>', 'the archive folder', './archive')
    .option('--json', 'print JSON')
    .action((options: { archive: string; json?: boolean }) => {
      const catalog = Catalog.open(options.archive, { create: false });
      try {
        const status = catalog.status();
        if (options.json) {
          process.stdout.write(`${JSON.stringify(status, null, 2)}\n`);
          return;
        }
        let text = `archive ${options.archive} (catalog schema ${status.schemaVersion})\n`;
        for (const source of status.sources) {
          const last = source.lastHarvest;
          text +=
            `\n${source.source.baseUrl}\n` +
            `  watermark: ${source.source.watermark ?? 'none (never completed)'}\n` +
            `  last harvest: ${last ? `#${last.id} ${last.status}, ${last.startedAt}${last.arguments.delivery ? ` (import of ${last.arguments.delivery.name})` : ''}` : 'none'}\n` +
            `  resources: ${source.liveResources} live, ${source.deletedResources} deleted; versions: ${source.versions}; payload: ${source.payloadBytes} bytes\n` +
            `  stored: ${source.storedBytes} bytes (each byte stream once) in ${source.bags} bag(s)\n` +
            `  failures outstanding: ${source.openFailures}\n`;
        }
        process.stdout.write(text);
      } finally {
        catalog.close();
      }
    });
}
