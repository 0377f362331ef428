// Every entry of a ZIP file with its bytes, read back with yauzl (a reader that is not our
// writer), in the order of the central directory, for the tests of the ZIPs we write.
import type { Readable } from 'node:stream';
import { promisify } from 'node:util';
import yauzl from 'yauzl';

export async function readZipEntries(file: string): Promise<Array<{ entry: yauzl.Entry; bytes: Buffer }>> {
  const zip = await new Promise<yauzl.ZipFile>((resolve, reject) =>
    yauzl.open(file, { lazyEntries: true, autoClose: false, strictFileNames: true }, (error, opened) => (error ? reject(error) : resolve(opened))),
  );
  const listed: yauzl.Entry[] = [];
  await new Promise((resolve, reject) => {
    zip.on('entry', (entry: yauzl.Entry) => {
      listed.push(entry);
      zip.readEntry();
    });
    zip.once('end', resolve).once('error', reject);
    zip.readEntry();
  });
  const openEntry = promisify(zip.openReadStream.bind(zip)) as (entry: yauzl.Entry) => Promise<Readable>;
  const entries: Array<{ entry: yauzl.Entry; bytes: Buffer }> = [];
  for (const entry of listed) entries.push({ entry, bytes: Buffer.concat((await (await openEntry(entry)).toArray()) as Buffer[]) });
  zip.close();
  return entries;
}
