// The demo's sample web site: a few hundred files of mixed types, some awkward names, the
// same every time (seeded), all dated 2000-01-01 like the mod_oai experiment's copy of a
// department web site. Also the change the demo makes between its two harvests.
import { mkdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

const YEAR_2000 = new Date('2000-01-01T00:00:00Z');

/** A small seeded generator (mulberry32): the same site on every machine. */
export function seeded(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const AWKWARD = [
  'papers/annual report 2024.pdf',
  'papers/résumé.txt',
  'papers/日本語のメモ.txt',
  "people/o'brien & co.html",
  'downloads/release #3.txt',
  'downloads/empty.txt',
  'a/deeply/nested/folder/with/a/page.html',
];

/**
 * Writes the site under `root` (removed first) and returns its relative paths. `count` files
 * in all: HTML pages, text, CSS, JSON, small PNG and PDF files, one 2 MB binary (served
 * By-Reference), and the awkward names above.
 */
export function generateSite(root, count = 300, seed = 2005) {
  rmSync(root, { recursive: true, force: true });
  const random = seeded(seed);
  const paths = [];
  const put = (path, bytes) => {
    const file = join(root, path);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, bytes);
    utimesSync(file, YEAR_2000, YEAR_2000);
    paths.push(path);
  };
  for (const path of AWKWARD) put(path, path.endsWith('empty.txt') ? '' : textOf(path, random, 400));
  put('downloads/dataset.bin', bytesOf(2_000_000, random));
  const folders = ['', 'news/', 'courses/', 'research/', 'people/', 'style/', 'images/'];
  for (let i = 0; paths.length < count; i++) {
    const folder = folders[i % folders.length];
    const kind = random();
    if (folder === 'style/') put(`${folder}theme-${i}.css`, `body { margin: ${i}px; }\n`.repeat(1 + Math.floor(random() * 40)));
    else if (folder === 'images/') put(`${folder}figure-${i}.png`, pngOf(random));
    else if (kind < 0.6) put(`${folder}page-${i}.html`, `<!doctype html>\n<title>Page ${i}</title>\n<p>${textOf(`page ${i}`, random, 3000)}</p>\n`);
    else if (kind < 0.8) put(`${folder}notes-${i}.txt`, textOf(`notes ${i}`, random, 6000));
    else if (kind < 0.9) put(`${folder}data-${i}.json`, JSON.stringify({ id: i, values: Array.from({ length: 20 }, () => Math.round(random() * 1000)) }));
    else put(`${folder}paper-${i}.pdf`, pdfOf(i, random));
  }
  return paths.sort();
}

/**
 * The change between the demo's harvests: touch a quarter of the files (new mtime, same
 * bytes), rewrite a few, add a few and delete a few. Returns what was done, by path.
 */
export function changeSite(root, paths, seed = 2006) {
  const random = seeded(seed);
  const pool = paths.filter((path) => !path.endsWith('empty.txt'));
  const pick = (n) => Array.from({ length: n }, () => pool.splice(Math.floor(random() * pool.length), 1)[0]);
  const now = new Date();
  const touched = pick(Math.round(paths.length / 4));
  for (const path of touched) utimesSync(join(root, path), now, now);
  const modified = pick(5);
  for (const path of modified) {
    writeFileSync(join(root, path), `${textOf(`rewritten ${path}`, random, 500)}\n`);
  }
  const deleted = pick(5);
  for (const path of deleted) rmSync(join(root, path));
  const added = Array.from({ length: 5 }, (_, i) => `news/new-item-${i + 1}.html`);
  for (const path of added) writeFileSync(join(root, path), `<!doctype html>\n<title>${path}</title>\n<p>added between the harvests</p>\n`);
  return { touched, modified, deleted, added };
}

const WORDS = 'archive harvest record version bag manifest digest provenance site page file change metadata repository crawler preservation'.split(' ');

function textOf(title, random, maxBytes) {
  const words = [title];
  const target = 40 + Math.floor(random() * maxBytes);
  let length = title.length;
  while (length < target) {
    const word = WORDS[Math.floor(random() * WORDS.length)];
    words.push(word);
    length += word.length + 1;
  }
  return `${words.join(' ')}\n`;
}

function bytesOf(size, random) {
  const bytes = Buffer.alloc(size);
  for (let i = 0; i < size; i += 4) bytes.writeUInt32LE(Math.floor(random() * 4294967296), i);
  return bytes;
}

function pngOf(random) {
  // The PNG signature and an IHDR-shaped start: enough for a file to look like one.
  return Buffer.concat([Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex'), bytesOf(64 + Math.floor(random() * 4000) * 4, random)]);
}

function pdfOf(i, random) {
  return Buffer.from(`%PDF-1.4\n% demo paper ${i}\n${textOf(`paper ${i}`, random, 8000)}%%EOF\n`);
}
