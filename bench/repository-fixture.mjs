// The repository benchmark's inputs, generated under bench/work/repository/ (git-ignored) from a
// fixed seed, so every machine gets the same trees:
//   - a web site of N small files (1–20 KiB) in about 1,000 folders (scan and ListIdentifiers);
//   - a 1,000,000-row index over a tree of hard links (first-page latency);
//   - large files of pseudo-random bytes (By-Value throughput and memory).
// Each fixture is described by a JSON file written last; a later run reuses the fixture while
// that description matches (with --keep, since the benchmark deletes the large ones at the end).
import { createCipheriv, createHash } from 'node:crypto';
import {
  closeSync,
  existsSync,
  fsyncSync,
  linkSync,
  lstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  utimesSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';

/** Bump when a fixture's content or layout changes, so cached ones are rebuilt. */
export const FIXTURE_VERSION = 2;

const KEY = createHash('sha256').update('oaibag bench/repository content').digest();
/** 2012-01-01T00:00:00Z .. 2025-01-01T00:00:00Z: the modification times of the site's files. */
const TIME_FROM = 1325376000;
const TIME_SPAN = 1735689600 - TIME_FROM;

/** mulberry32: a small, fast, seeded generator (quality is ample for picking names and sizes). */
export function seededRandom(seed) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (min, max) => min + Math.floor(next() * (max - min + 1)),
    pick: (weighted) => {
      let roll = next() * weighted.total;
      for (const [value, weight] of weighted.items) if ((roll -= weight) < 0) return value;
      return weighted.items[weighted.items.length - 1][0];
    },
  };
}

function weights(pairs) {
  return { items: pairs, total: pairs.reduce((sum, [, weight]) => sum + weight, 0) };
}

/** Extensions of a typical static site, by share of files (13 MIME types, so 13 leaf sets). */
const EXTENSIONS = weights([
  ['html', 35],
  ['jpg', 18],
  ['png', 10],
  ['gif', 5],
  ['pdf', 8],
  ['css', 3],
  ['js', 4],
  ['txt', 5],
  ['xml', 3],
  ['svg', 3],
  ['json', 2],
  ['mp3', 2],
  ['zip', 2],
]);
const WORDS = [
  'about',
  'archive',
  'news',
  'people',
  'research',
  'projects',
  'events',
  'images',
  'docs',
  'papers',
  'teaching',
  'library',
  'media',
  'reports',
  'data',
  'press',
  'staff',
  'history',
  'contact',
  'services',
];

/** Deterministic pseudo-random bytes: the AES-256-CTR keystream for `label`. */
export function keystream(label, bytes) {
  const iv = createHash('sha256').update(label).digest().subarray(0, 16);
  return createCipheriv('aes-256-ctr', KEY, iv).update(Buffer.alloc(bytes));
}

function readDescription(file, expected) {
  try {
    const description = JSON.parse(readFileSync(file, 'utf8'));
    for (const [key, value] of Object.entries(expected)) if (JSON.stringify(description[key]) !== JSON.stringify(value)) return undefined;
    return description;
  } catch {
    return undefined;
  }
}

function writeDescription(file, description) {
  writeFileSync(`${file}.tmp`, `${JSON.stringify(description, null, 2)}\n`);
  renameSync(`${file}.tmp`, file);
}

/**
 * About 1,000 folders in three levels (10 sections, 10 subsections each, 9 below each of
 * those: 1,010), named from a word list, as a site grown over the years would have.
 */
function folderTree(random) {
  const folders = [];
  for (let a = 0; a < 10; a++) {
    const top = `${WORDS[a * 2]}`;
    folders.push(top);
    for (let b = 0; b < 10; b++) {
      const middle = `${top}/${WORDS[random.int(0, WORDS.length - 1)]}-${b}`;
      folders.push(middle);
      for (let c = 0; c < 9; c++) folders.push(`${middle}/${2012 + ((a + b + c) % 13)}-${c}`);
    }
  }
  return folders;
}

/**
 * The site of `files` small files: each in a random folder of the tree, 1–20 KiB (uniform),
 * content a comment naming the file and then keystream bytes (so every file differs),
 * modification time spread over 2012–2024.
 */
export function ensureSmallSite({ dir, files, seed, regenerate, log }) {
  const root = join(dir, 'site');
  const descriptionFile = join(dir, 'site.json');
  const expected = { version: FIXTURE_VERSION, files, seed };
  const cached = !regenerate && existsSync(root) ? readDescription(descriptionFile, expected) : undefined;
  if (cached) return { ...cached, root, generated: false };

  rmSync(dir, { recursive: true, force: true });
  mkdirSync(root, { recursive: true });
  log(`generating ${files} files of 1–20 KiB in about 1,000 folders under ${root}`);
  const started = performance.now();
  const random = seededRandom(seed);
  const folders = folderTree(random);
  for (const folder of folders) mkdirSync(join(root, folder), { recursive: true });
  const pool = keystream(`small-site-${seed}`, 4 << 20);
  let bytes = 0;
  const extensionCounts = {};
  for (let n = 0; n < files; n++) {
    const folder = folders[random.int(0, folders.length - 1)];
    const extension = random.pick(EXTENSIONS);
    extensionCounts[extension] = (extensionCounts[extension] ?? 0) + 1;
    const path = `${folder}/${WORDS[random.int(0, WORDS.length - 1)]}-${n}.${extension}`;
    const size = random.int(1024, 20 * 1024);
    const head = Buffer.from(`<!-- ${path} -->\n`);
    const offset = random.int(0, pool.length - size);
    const fd = openSync(join(root, path), 'w');
    writeSync(fd, head);
    writeSync(fd, pool, offset, size - head.length);
    closeSync(fd);
    const mtime = TIME_FROM + Math.floor(random.next() * TIME_SPAN);
    utimesSync(join(root, path), mtime, mtime);
    bytes += size;
    if ((n + 1) % 20000 === 0) log(`  ${n + 1} files`);
  }
  const description = { ...expected, folders: folders.length, bytes, extensions: extensionCounts, generator: 'mulberry32 + aes-256-ctr keystream' };
  writeDescription(descriptionFile, description);
  const generationSeconds = (performance.now() - started) / 1000;
  log(`  done in ${generationSeconds.toFixed(1)} s: ${bytes} bytes`);
  return { ...description, root, generated: true, generationSeconds };
}

/**
 * Large files of keystream bytes (`count` files of `size` bytes each, named by `prefix`),
 * written in 8 MiB pieces so memory stays flat; one folder per fixture.
 */
export function ensureLargeFiles({ dir, groups, regenerate, log }) {
  const root = join(dir, 'site');
  const descriptionFile = join(dir, 'site.json');
  const expected = { version: FIXTURE_VERSION, groups };
  const cached = !regenerate && existsSync(root) ? readDescription(descriptionFile, expected) : undefined;
  if (cached) return { ...cached, root, generated: false };

  rmSync(dir, { recursive: true, force: true });
  mkdirSync(root, { recursive: true });
  const started = performance.now();
  const piece = 8 << 20;
  let bytes = 0;
  let count = 0;
  for (const { prefix, files, size } of groups) {
    log(`generating ${files} files of ${size} bytes under ${root}`);
    for (let n = 0; n < files; n++) {
      const fd = openSync(join(root, `${prefix}-${String(n).padStart(3, '0')}.bin`), 'w');
      const cipher = createCipheriv('aes-256-ctr', KEY, createHash('sha256').update(`${prefix}-${n}`).digest().subarray(0, 16));
      const zeros = Buffer.alloc(Math.min(piece, size));
      for (let done = 0; done < size; ) {
        const length = Math.min(piece, size - done);
        writeSync(fd, cipher.update(zeros.subarray(0, length)));
        done += length;
      }
      fsyncSync(fd);
      closeSync(fd);
      bytes += size;
      count++;
    }
  }
  const description = { ...expected, files: count, bytes };
  writeDescription(descriptionFile, description);
  const generationSeconds = (performance.now() - started) / 1000;
  log(`  done in ${generationSeconds.toFixed(1)} s`);
  return { ...description, root, generated: true, generationSeconds };
}

/**
 * The million-item fixture: an index of `rows` rows written directly with better-sqlite3, over
 * a tree where those files really exist, so the repository's start-up scan finds every row
 * unchanged (the lstat fast path) instead of marking the whole index deleted.
 *
 * Making a million real files is slow, so the tree is made of hard links: in each of 1,000
 * folders one real file (1–20 KiB, keystream content) and hard links to it under the other
 * names (ext4 allows 65,000 links per inode). Each row holds its inode's true size, times,
 * dev:ino and sha-256, so the rows are exactly what a scan would have written. 1% of the
 * rows are deleted items whose files are gone (deletedRecord persistent keeps them listed).
 *
 * The schema is created by the repository's own FileIndex (dist/file-index.js), so this stays
 * in step with file-index.ts; its secondary indexes are dropped while the rows go in and
 * recreated by opening the index again (createSchema uses CREATE INDEX IF NOT EXISTS), and
 * FileIndex marks the first scan done, so the repository serves the index at once and
 * rescans it in the background, as after any restart.
 */
export function ensureMillionIndex({ dir, rows, seed, regenerate, log, Database, FileIndex, mimeTypeForPath, setSpecForMimeType }) {
  const root = join(dir, 'site');
  const indexFile = join(dir, 'index.sqlite');
  const descriptionFile = join(dir, 'index.json');
  const expected = { version: FIXTURE_VERSION, rows, seed };
  const cached = !regenerate && existsSync(root) && existsSync(indexFile) ? readDescription(descriptionFile, expected) : undefined;
  if (cached) return { ...cached, root, indexFile, generated: false };

  rmSync(dir, { recursive: true, force: true });
  mkdirSync(root, { recursive: true });
  const started = performance.now();
  const random = seededRandom(seed);
  const folderCount = 1000;
  const perFolder = Math.ceil(rows / folderCount);
  const pool = keystream(`million-${seed}`, 1 << 20);
  log(`generating ${rows} paths (${folderCount} folders of hard links) under ${root}`);

  // Pass 1: the tree. Times of the real files are set before linking, and read back after,
  // because every link() changes the inode's ctime.
  const folders = [];
  let created = 0;
  for (let f = 0; f < folderCount && created < rows; f++) {
    const folder = `${WORDS[f % WORDS.length]}/${WORDS[Math.floor(f / WORDS.length) % WORDS.length]}-${Math.floor(f / 400)}/${f}`;
    mkdirSync(join(root, folder), { recursive: true });
    const size = random.int(1024, 20 * 1024);
    const content = Buffer.concat([Buffer.from(`<!-- ${folder} -->\n`), pool.subarray(0, size)]).subarray(0, size);
    const names = [];
    for (let i = 0; i < perFolder && created < rows; i++, created++) {
      // 1% deleted: the row stays, the file does not exist.
      const deleted = random.next() < 0.01;
      names.push({ name: `${deleted ? 'gone' : 'item'}-${created}.${random.pick(EXTENSIONS)}`, deleted });
    }
    if (names.every((entry) => entry.deleted)) names[0].deleted = false;
    const live = names.filter((entry) => !entry.deleted);
    const first = join(root, folder, live[0].name);
    writeFileSync(first, content);
    const mtime = TIME_FROM + Math.floor(random.next() * TIME_SPAN);
    utimesSync(first, mtime, mtime);
    for (const entry of live.slice(1)) linkSync(first, join(root, folder, entry.name));
    folders.push({ folder, names, first, sha256: createHash('sha256').update(content).digest('hex') });
    if ((f + 1) % 200 === 0) log(`  ${created} paths`);
  }

  // Pass 2: the rows, in path order (as a first scan would have assigned ids, roughly),
  // datestamps spread over 2012–2024 as a first scan's mtimes would be.
  rmSync(indexFile, { force: true });
  FileIndex.open(indexFile).close();
  const db = new Database(indexFile);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = OFF');
  const secondary = db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'records' AND sql IS NOT NULL").all();
  for (const { name } of secondary) db.exec(`DROP INDEX ${name}`);
  const insert = db.prepare(`INSERT INTO records (path, datestamp, deleted, mime_type, set_spec, size, mtime_ns, ctime_ns, file_key, sha256, scan_gen)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1)`);
  const setSpecs = new Map();
  let maxDatestamp = 0;
  let deletedRows = 0;
  const all = [];
  for (const entry of folders) {
    const stats = lstatSync(entry.first, { bigint: true });
    for (const { name, deleted } of entry.names) all.push({ path: `${entry.folder}/${name}`, deleted, stats, sha256: entry.sha256 });
  }
  all.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  db.transaction(() => {
    for (const row of all) {
      const mimeType = mimeTypeForPath(row.path);
      let setSpec = setSpecs.get(mimeType);
      if (setSpec === undefined) setSpecs.set(mimeType, (setSpec = setSpecForMimeType(mimeType)));
      const datestamp = TIME_FROM + Math.floor(random.next() * TIME_SPAN);
      maxDatestamp = Math.max(maxDatestamp, datestamp);
      if (row.deleted) deletedRows++;
      const { stats } = row;
      insert.run(
        row.path,
        datestamp,
        row.deleted ? 1 : 0,
        mimeType,
        setSpec,
        Number(stats.size),
        String(stats.mtimeNs),
        String(stats.ctimeNs),
        `${stats.dev}:${stats.ino}`,
        row.sha256,
      );
    }
    const setMeta = db.prepare('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value');
    setMeta.run('scan_generation', '1');
    setMeta.run('clock_high_water', String(maxDatestamp));
  })();
  db.close();
  // Reopening recreates the secondary indexes; the index is then marked as past its first
  // scan (through FileIndex itself), as an index a server has already run over would be.
  const index = FileIndex.open(indexFile);
  if (typeof index.markFirstScanCompleted === 'function') index.markFirstScanCompleted();
  index.close();
  const description = { ...expected, folders: folders.length, deletedRows, liveRows: rows - deletedRows, sets: setSpecs.size };
  writeDescription(descriptionFile, description);
  const generationSeconds = (performance.now() - started) / 1000;
  log(`  done in ${generationSeconds.toFixed(1)} s`);
  return { ...description, root, indexFile, generated: true, generationSeconds };
}
