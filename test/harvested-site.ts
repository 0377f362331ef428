// A small site served by the real repository and harvested into an archive: the setup of the
// tests of the archive's graph (test/linked-data.test.ts, test/sparql-store.test.ts). Files are
// written with their mtimes; each harvest waits for the next second, as the repository lists up
// to a second before its responseDate.
import { mkdirSync, mkdtempSync, rmSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { harvest } from '../packages/archiver/src/index.ts';
import { createRepository, type Repository } from '../packages/repository/src/index.ts';

export const YEAR_2000 = Date.UTC(2000, 0, 1) / 1000;
export const nextSecond = () => new Promise((resolve) => setTimeout(resolve, 1100 - (Date.now() % 1000)));
/** The prefixes of the vocabularies of docs/linked-data.md, for queries. */
export const SPARQL_PREFIXES = `PREFIX oai: <http://www.mediaspaces.info/vocab/oai-pmh.rdf#>
PREFIX dcterms: <http://purl.org/dc/terms/>
PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX oaibag: <urn:oaibag:terms:>
`;

export class HarvestedSite {
  private constructor(
    /** The temporary folder holding the site, the repository's index and the archive. */
    readonly work: string,
    readonly site: string,
    readonly archive: string,
    readonly repository: Repository,
  ) {}

  /** `files` (path → content, mtime 2000-01-01) served by a repository on 127.0.0.1 and harvested once. */
  static async start(prefix: string, files: Record<string, string | Uint8Array>): Promise<HarvestedSite> {
    const work = mkdtempSync(join(tmpdir(), prefix));
    const site = join(work, 'site');
    for (const [path, content] of Object.entries(files)) writeFile(site, path, content, YEAR_2000);
    const repository = await createRepository({ root: site, index: join(work, 'index.sqlite'), watch: false, rescanSeconds: 0 });
    await repository.listen(0, '127.0.0.1');
    const harvested = new HarvestedSite(work, site, join(work, 'archive'), repository);
    await nextSecond();
    await harvest({ baseUrl: harvested.endpoint, archiveDir: harvested.archive });
    return harvested;
  }

  /** The repository's OAI-PMH endpoint. */
  get endpoint(): string {
    return `${this.repository.baseUrl}/oai`;
  }

  write(path: string, content: string | Uint8Array, mtime = YEAR_2000): void {
    writeFile(this.site, path, content, mtime);
  }

  remove(path: string): void {
    unlinkSync(join(this.site, path));
  }

  /** The repository rescans the site, then a harvest of it. */
  async harvestAgain(): Promise<Awaited<ReturnType<typeof harvest>>> {
    await this.repository.scan();
    await nextSecond();
    return harvest({ baseUrl: this.endpoint, archiveDir: this.archive });
  }

  async close(): Promise<void> {
    await this.repository.close();
    rmSync(this.work, { recursive: true, force: true });
  }
}

function writeFile(site: string, path: string, content: string | Uint8Array, mtime: number): void {
  mkdirSync(dirname(join(site, path)), { recursive: true });
  writeFileSync(join(site, path), content);
  utimesSync(join(site, path), mtime, mtime);
}
