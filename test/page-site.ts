// A small site of numbered HTML pages served by oaibag-repository on 127.0.0.1, for the tests
// that harvest onto PostgreSQL and object storage: every file dated 2000-01-01 unless told.
import { mkdirSync, utimesSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createRepository, type Repository } from '../packages/repository/src/index.ts';

/** 2000-01-01 in seconds: the files' default modification time. */
export const YEAR_2000 = Date.UTC(2000, 0, 1) / 1000;

export interface PageSite {
  root: string;
  repository: Repository;
  /** The OAI-PMH base URL. */
  endpoint: string;
  files: number;
  /** Writes a file of the site (rescan the repository afterwards). */
  write(path: string, content: string, mtime?: number): void;
}

/** `files` pages `pages/page-NNN.html` of about `size` bytes each, under `work/name`, five records a page. */
export async function pageSite(work: string, name: string, files: number, size = 2000): Promise<PageSite> {
  const root = join(work, name);
  const write = (path: string, content: string, mtime = YEAR_2000) => {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), content);
    utimesSync(join(root, path), mtime, mtime);
  };
  for (let i = 0; i < files; i++) write(`pages/page-${String(i).padStart(3, '0')}.html`, `<html>${name} page ${i} ${'x'.repeat(size + i)}</html>`);
  const repository = await createRepository({ root, index: join(work, `${name}.sqlite`), watch: false, rescanSeconds: 0, pageRecords: 5 });
  return { root, repository, endpoint: `${await repository.listen(0, '127.0.0.1')}/oai`, files, write };
}
