// The harvest benchmark's sites, generated under bench/work/harvest/ (git-ignored) from a fixed
// seed, so every machine gets the same trees:
//   - a web site shaped like the one of the mod_oai experiment (5,268 files, about 292 MB:
//     mostly HTML, text, PDF and images, a few files of tens of MB), or its quick variant;
//   - the changes of the incremental harvest (files touched, some rewritten, added, deleted);
//   - a site of one 1 GiB file, for the single large By-Value record.
// Content is keystream (incompressible, every file different), mtimes 2000-01-01 so that every
// list of the repository includes every file.
import { createCipheriv, createHash } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, unlinkSync, utimesSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { keystream, seededRandom } from './repository-fixture.mjs';

/** Bump when a site's content or layout changes, so cached ones are rebuilt. */
export const FIXTURE_VERSION = 1;

const MiB = 2 ** 20;
/** 2000-01-01T00:00:00Z: far in the past, so every list includes every file. */
export const SITE_MTIME = 946684800;
const KEY = createHash('sha256').update('oaibag bench/harvest content').digest();

/**
 * The two shapes. The full one follows the mod_oai experiment's site (5,268 files, about
 * 292 MB). The quick one keeps the mix at 500 files and one large file just above the
 * repository's default By-Value limit (16 MiB), so the default run also takes the
 * By-Reference path: about 30 MB rather than 20, for that reason.
 */
export const VARIANTS = {
  full: { files: 5268, bytes: 292e6, large: [14 * MiB, 18 * MiB, 24 * MiB, 31 * MiB, 42 * MiB] },
  quick: { files: 500, bytes: 12e6 + 17 * MiB, large: [17 * MiB] },
};

/** Extensions by share of the small files, with the range of their sizes (log-uniform, before scaling). */
const TYPES = [
  { ext: 'html', share: 40, min: 2e3, max: 60e3 },
  { ext: 'txt', share: 12, min: 1e3, max: 40e3 },
  { ext: 'pdf', share: 12, min: 20e3, max: 400e3 },
  { ext: 'jpg', share: 16, min: 5e3, max: 200e3 },
  { ext: 'png', share: 8, min: 2e3, max: 150e3 },
  { ext: 'gif', share: 6, min: 1e3, max: 40e3 },
  { ext: 'css', share: 2, min: 1e3, max: 30e3 },
  { ext: 'js', share: 2, min: 1e3, max: 30e3 },
  { ext: 'doc', share: 2, min: 20e3, max: 200e3 },
];
const TYPE_WEIGHTS = { items: TYPES.map((type) => [type, type.share]), total: TYPES.reduce((sum, type) => sum + type.share, 0) };
const LARGE_EXTENSIONS = ['pdf', 'mp4', 'zip', 'tif', 'pdf'];
const WORDS = ['about', 'archive', 'news', 'people', 'research', 'projects', 'events', 'images', 'docs', 'papers', 'teaching', 'library'];

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

/** Writes `size` bytes: a line naming the file, then keystream (a slice of `pool`, or a cipher for large files). */
function writeContent(path, size, { pool, random, label }) {
  const head = Buffer.from(`<!-- ${label} -->\n`);
  const fd = openSync(path, 'w');
  try {
    writeSync(fd, head.subarray(0, Math.min(head.length, size)));
    let left = size - Math.min(head.length, size);
    if (left <= pool.length / 2) {
      writeSync(fd, pool, random.int(0, pool.length - left), left);
    } else {
      const cipher = createCipheriv('aes-256-ctr', KEY, createHash('sha256').update(label).digest().subarray(0, 16));
      const zeros = Buffer.alloc(8 * MiB);
      while (left > 0) {
        const length = Math.min(zeros.length, left);
        writeSync(fd, cipher.update(zeros.subarray(0, length)));
        left -= length;
      }
    }
  } finally {
    closeSync(fd);
  }
}

/** 12 sections of 8 subsections: 108 folders, as a departmental site would have. */
function folderTree() {
  const folders = [];
  for (let a = 0; a < WORDS.length; a++) {
    folders.push(WORDS[a]);
    for (let b = 0; b < 8; b++) folders.push(`${WORDS[a]}/${WORDS[(a + b + 1) % WORDS.length]}-${1996 + b}`);
  }
  return folders;
}

/**
 * The mod_oai-shaped site of a variant: the large files, then the small ones, whose sizes
 * are drawn per type and scaled so that the site totals the variant's bytes. Reused while
 * its description matches (a site changed by `applyUpdate` no longer matches).
 */
export function ensureSite({ dir, variant, seed, regenerate, log }) {
  const shape = VARIANTS[variant];
  const root = join(dir, 'site');
  const descriptionFile = join(dir, 'site.json');
  const expected = { version: FIXTURE_VERSION, variant, seed, ...shape, changed: false };
  const cached = !regenerate && existsSync(root) ? readDescription(descriptionFile, expected) : undefined;
  if (cached) return { ...cached, root, generated: false };

  rmSync(dir, { recursive: true, force: true });
  mkdirSync(root, { recursive: true });
  const started = performance.now();
  const random = seededRandom(seed);
  const folders = folderTree();
  for (const folder of folders) mkdirSync(join(root, folder), { recursive: true });
  const pool = keystream(`harvest-site-${seed}`, 2 * 1024 * 1024);
  const smallCount = shape.files - shape.large.length;
  const largeBytes = shape.large.reduce((sum, size) => sum + size, 0);
  const drawn = [];
  for (let n = 0; n < smallCount; n++) {
    const type = random.pick(TYPE_WEIGHTS);
    drawn.push({ ext: type.ext, size: type.min * Math.exp(random.next() * Math.log(type.max / type.min)) });
  }
  const scale = (shape.bytes - largeBytes) / drawn.reduce((sum, file) => sum + file.size, 0);
  log(`generating the ${variant} site: ${shape.files} files, about ${Math.round(shape.bytes / 1e6)} MB, under ${root}`);
  const paths = [];
  let bytes = 0;
  const extensions = {};
  const add = (path, size) => {
    writeContent(join(root, path), size, { pool, random, label: path });
    utimesSync(join(root, path), SITE_MTIME, SITE_MTIME);
    paths.push(path);
    bytes += size;
    const ext = path.slice(path.lastIndexOf('.') + 1);
    extensions[ext] = (extensions[ext] ?? 0) + 1;
  };
  shape.large.forEach((size, n) => add(`${folders[(n * 7) % folders.length]}/large-${n}.${LARGE_EXTENSIONS[n % LARGE_EXTENSIONS.length]}`, size));
  drawn.forEach((file, n) => {
    const size = Math.min(Math.max(64, Math.round(file.size * scale)), pool.length / 2);
    add(`${folders[random.int(0, folders.length - 1)]}/${WORDS[random.int(0, WORDS.length - 1)]}-${n}.${file.ext}`, size);
  });
  writeFileSync(join(dir, 'paths.json'), JSON.stringify(paths));
  const description = {
    ...expected,
    folders: folders.length,
    bytes,
    extensions,
    largeFiles: shape.large.length,
    generator: 'mulberry32 + aes-256-ctr keystream',
  };
  writeDescription(descriptionFile, description);
  const generationSeconds = (performance.now() - started) / 1000;
  log(`  done in ${generationSeconds.toFixed(1)} s: ${bytes} bytes`);
  return { ...description, root, generated: true, generationSeconds };
}

/**
 * The changes between the baseline and the incremental harvest: a quarter of the files
 * touched (utimes now), a fifth of those also rewritten (same size, other bytes), `adds`
 * new files and `deletes` files removed (from the untouched ones). Large files are left
 * alone: the figures are about the many. The site's description is marked changed first,
 * so a later run rebuilds it.
 */
export function applyUpdate({ dir, site, seed, touchShare = 0.25, rewriteShare = 0.2, adds = 10, deletes = 10 }) {
  const descriptionFile = join(dir, 'site.json');
  writeDescription(descriptionFile, { ...JSON.parse(readFileSync(descriptionFile, 'utf8')), changed: true });
  const random = seededRandom(seed + 1);
  const paths = JSON.parse(readFileSync(join(dir, 'paths.json'), 'utf8')).filter((path) => !path.includes('/large-'));
  for (let i = paths.length - 1; i > 0; i--) {
    const j = random.int(0, i);
    [paths[i], paths[j]] = [paths[j], paths[i]];
  }
  const touchCount = Math.round(site.files * touchShare);
  const rewriteCount = Math.round(touchCount * rewriteShare);
  const touched = paths.slice(0, touchCount);
  const deleted = paths.slice(touchCount, touchCount + deletes);
  const pool = keystream(`harvest-update-${seed}`, 2 * 1024 * 1024);
  const now = Date.now() / 1000;
  let rewrittenBytes = 0;
  let touchedBytes = 0;
  touched.forEach((path, n) => {
    const file = join(site.root, path);
    if (n < rewriteCount) {
      const size = readFileSync(file).length;
      writeContent(file, size, { pool, random, label: `${path} (rewritten)` });
      rewrittenBytes += size;
    } else touchedBytes += readFileSync(file).length;
    utimesSync(file, now, now);
  });
  for (const path of deleted) unlinkSync(join(site.root, path));
  let addedBytes = 0;
  const added = [];
  for (let n = 0; n < adds; n++) {
    const path = `${paths[n].slice(0, paths[n].lastIndexOf('/'))}/added-${n}.html`;
    const size = random.int(2e3, 60e3);
    writeContent(join(site.root, path), size, { pool, random, label: path });
    added.push(path);
    addedBytes += size;
  }
  return {
    touched: touchCount - rewriteCount,
    rewritten: rewriteCount,
    added: adds,
    deleted: deletes,
    touchedBytes,
    rewrittenBytes,
    addedBytes,
    changedPayloadBytes: touchedBytes + rewrittenBytes + addedBytes,
  };
}

/** A site of one file of `size` bytes (keystream), for the single large By-Value record. */
export function ensureLargeSite({ dir, size, regenerate, log }) {
  const root = join(dir, 'site');
  const descriptionFile = join(dir, 'site.json');
  const expected = { version: FIXTURE_VERSION, size };
  const cached = !regenerate && existsSync(root) ? readDescription(descriptionFile, expected) : undefined;
  if (cached) return { ...cached, root, generated: false };
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(root, { recursive: true });
  log(`generating one file of ${size} bytes under ${root}`);
  const started = performance.now();
  writeContent(join(root, 'large.bin'), size, { pool: Buffer.alloc(0), random: seededRandom(1), label: 'large.bin' });
  utimesSync(join(root, 'large.bin'), SITE_MTIME, SITE_MTIME);
  const description = { ...expected, files: 1, bytes: size };
  writeDescription(descriptionFile, description);
  const generationSeconds = (performance.now() - started) / 1000;
  log(`  done in ${generationSeconds.toFixed(1)} s`);
  return { ...description, root, generated: true, generationSeconds };
}
