// The sites of the scale benchmark (scale.mjs): N small files generated from a seed, each file
// a function of (seed, its number) alone, so that any file can be written again exactly and a
// changed site put back as it was (revertSite) instead of generated anew. Folders hold at most
// 1,000 entries (s<top>/d<leaf>/p<n>.<ext>, 1,000 files a leaf, 100 leaves a top folder); sizes
// and types in a small mix averaging about 4 KB, so 1M files take about 4 GB. Every file has the
// mtime 2000-01-01, as a generated site or a copy made without -p has one shared time.
// The changes the benchmark makes: a touch (mtime now) of every tenth file, and a change
// (1 % rewritten, 0.1 % deleted, 0.1 % added); each is undone by revertSite.
import { createCipheriv, createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { open, rm, utimes } from 'node:fs/promises';
import { join } from 'node:path';

/** Bump when the content or layout changes, so kept sites are generated again. */
export const SITE_VERSION = 1;
/** 2000-01-01T00:00:00Z, the mtime of every file of a pristine site. */
export const SITE_MTIME = 946684800;
/** Files written at once (each an open, a write, a futimes and a close on libuv's pool). */
const WRITES_IN_FLIGHT = 32;

const FILES_PER_LEAF = 1000;
const LEAVES_PER_TOP = 100;
/** Types by weight, sizes uniform in [min, max] bytes: a mean of about 3.8 KB. */
const TYPES = [
  { ext: 'html', weight: 50, min: 1500, max: 6000 },
  { ext: 'txt', weight: 15, min: 300, max: 4000 },
  { ext: 'css', weight: 5, min: 1000, max: 3000 },
  { ext: 'js', weight: 5, min: 1000, max: 4000 },
  { ext: 'png', weight: 15, min: 2000, max: 8000 },
  { ext: 'jpg', weight: 10, min: 3000, max: 10000 },
];
const TOTAL_WEIGHT = TYPES.reduce((sum, type) => sum + type.weight, 0);
const POOL_BYTES = 4 * 2 ** 20;

/** Which files the touch and the change take (by number; the three sets do not meet). */
export const isTouched = (n) => n % 10 === 3;
export const isRewritten = (n) => n % 100 === 7;
export const isDeleted = (n) => n % 1000 === 51;
/** An added file sits beside each deleted one, under another name. */
const addedPath = (n) => `${folderOf(n)}/new-${n}.html`;

function folderOf(n) {
  const leaf = Math.floor(n / FILES_PER_LEAF);
  return `s${String(Math.floor(leaf / LEAVES_PER_TOP)).padStart(3, '0')}/d${String(leaf).padStart(5, '0')}`;
}

/** A 32-bit mix of the seed and a number (the file's own random stream starts from it). */
function mix(seed, n) {
  let h = (Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(n + 1, 0xc2b2ae35)) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x7feb352d) >>> 0;
  h = Math.imul(h ^ (h >>> 15), 0x846ca68b) >>> 0;
  return (h ^ (h >>> 16)) >>> 0;
}

/** File `n` of the site: its path and size, drawn from (seed, n) alone. */
export function fileOf(seed, n) {
  const draw = mix(seed, n);
  let roll = draw % TOTAL_WEIGHT;
  let type = TYPES[0];
  for (const candidate of TYPES) {
    if (roll < candidate.weight) {
      type = candidate;
      break;
    }
    roll -= candidate.weight;
  }
  const size = type.min + (mix(seed ^ 0x5bd1e995, n) % (type.max - type.min + 1));
  return { path: `${folderOf(n)}/p${String(n).padStart(7, '0')}.${type.ext}`, size };
}

/** Keystream to slice content from: incompressible, the same for a seed on every machine. */
function contentPool(seed) {
  const key = createHash('sha256').update(`oaibag bench/scale ${seed}`).digest();
  return createCipheriv('aes-256-ctr', key, Buffer.alloc(16)).update(Buffer.alloc(POOL_BYTES));
}

/** FNV-1a of a string's code units. */
function textHash(text) {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return hash;
}

/** A file's bytes: a line naming it (so no two files are equal), then keystream from a drawn offset. */
function contentOf(pool, seed, path, size, variant) {
  const head = Buffer.from(`<!-- ${path} ${variant} -->\n`);
  const body = Math.max(0, size - head.length);
  const at = mix(seed ^ 0x27d4eb2f, textHash(`${path} ${variant}`)) % (pool.length - body);
  return Buffer.concat([head.subarray(0, size), pool.subarray(at, at + body)]);
}

async function writeFileAt(file, bytes, mtime) {
  const handle = await open(file, 'w');
  try {
    await handle.write(bytes);
    await handle.utimes(mtime, mtime);
  } finally {
    await handle.close();
  }
}

/** Runs `work(n)` for each n of `numbers` (an iterable), WRITES_IN_FLIGHT at a time. */
async function pool(numbers, work) {
  const iterator = numbers[Symbol.iterator]();
  const worker = async () => {
    for (let next = iterator.next(); !next.done; next = iterator.next()) await work(next.value);
  };
  await Promise.all(Array.from({ length: WRITES_IN_FLIGHT }, worker));
}

function* range(count, keep = () => true) {
  for (let n = 0; n < count; n++) if (keep(n)) yield n;
}

function readState(file) {
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return undefined;
  }
}

function writeState(file, state) {
  writeFileSync(`${file}.tmp`, `${JSON.stringify(state, null, 2)}\n`);
  renameSync(`${file}.tmp`, file);
}

/**
 * The site of `files` files under `dir`/site: kept when its description matches (a changed one
 * is put back first: revertSite), else generated. Returns { root, files, bytes, generated,
 * generationSeconds? , generationCpuSeconds? }.
 */
export async function ensureSite({ dir, files, seed, log }) {
  const root = join(dir, 'site');
  const stateFile = join(dir, 'site.json');
  const state = readState(stateFile);
  if (state && existsSync(root) && state.version === SITE_VERSION && state.files === files && state.seed === seed) {
    if (state.changes.length > 0) await revertSite({ dir, log });
    return { root, files, bytes: state.bytes, generated: false };
  }
  await rm(dir, { recursive: true, force: true });
  mkdirSync(root, { recursive: true });
  log(`generating ${files} files under ${root}`);
  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  for (let leaf = 0; leaf * FILES_PER_LEAF < files; leaf++) mkdirSync(join(root, folderOf(leaf * FILES_PER_LEAF)), { recursive: true });
  const bytesPool = contentPool(seed);
  let bytes = 0;
  await pool(range(files), async (n) => {
    const { path, size } = fileOf(seed, n);
    bytes += size;
    await writeFileAt(join(root, path), contentOf(bytesPool, seed, path, size, 'v1'), SITE_MTIME);
  });
  const cpu = process.cpuUsage(cpuBefore);
  const generationSeconds = (performance.now() - started) / 1000;
  writeState(stateFile, { version: SITE_VERSION, files, seed, bytes, changes: [] });
  log(`  ${bytes} bytes in ${generationSeconds.toFixed(1)} s`);
  return { root, files, bytes, generated: true, generationSeconds, generationCpuSeconds: (cpu.user + cpu.system) / 1e6 };
}

/** Marks the site changed before changing it, so that a run stopped half-way still gets it put back. */
function noteChange(dir, change) {
  const stateFile = join(dir, 'site.json');
  const state = readState(stateFile);
  if (!state.changes.includes(change)) writeState(stateFile, { ...state, changes: [...state.changes, change] });
  return state;
}

/** Every tenth file gets the mtime now (same bytes). Returns how many. */
export async function touchSite({ dir, root }) {
  const { files, seed } = noteChange(dir, 'touch');
  const now = Date.now() / 1000;
  let touched = 0;
  await pool(range(files, isTouched), async (n) => {
    await utimes(join(root, fileOf(seed, n).path), now, now);
    touched++;
  });
  return { touched };
}

/** 1 % of the files rewritten (other bytes, same size), 0.1 % deleted, as many added. */
export async function changeSite({ dir, root }) {
  const { files, seed } = noteChange(dir, 'change');
  const bytesPool = contentPool(seed);
  const now = Date.now() / 1000;
  const counts = { rewritten: 0, deleted: 0, added: 0 };
  await pool(range(files, isRewritten), async (n) => {
    const { path, size } = fileOf(seed, n);
    await writeFileAt(join(root, path), contentOf(bytesPool, seed, path, size, 'v2'), now);
    counts.rewritten++;
  });
  await pool(range(files, isDeleted), async (n) => {
    await rm(join(root, fileOf(seed, n).path));
    counts.deleted++;
    const path = addedPath(n);
    await writeFileAt(join(root, path), contentOf(bytesPool, seed, path, 3000, 'v1'), now);
    counts.added++;
  });
  return counts;
}

/** Puts a touched or changed site back as generated: the same bytes and the same mtimes. */
export async function revertSite({ dir, log }) {
  const stateFile = join(dir, 'site.json');
  const state = readState(stateFile);
  if (!state || state.changes.length === 0) return;
  const root = join(dir, 'site');
  const { files, seed } = state;
  const bytesPool = contentPool(seed);
  log(`putting the site back (${state.changes.join(', ')})`);
  const rewrite = async (n) => {
    const { path, size } = fileOf(seed, n);
    await writeFileAt(join(root, path), contentOf(bytesPool, seed, path, size, 'v1'), SITE_MTIME);
  };
  if (state.changes.includes('touch')) await pool(range(files, isTouched), (n) => utimes(join(root, fileOf(seed, n).path), SITE_MTIME, SITE_MTIME));
  if (state.changes.includes('change')) {
    await pool(range(files, isRewritten), rewrite);
    await pool(range(files, isDeleted), async (n) => {
      await rm(join(root, addedPath(n)), { force: true });
      await rewrite(n);
    });
  }
  writeState(stateFile, { ...state, changes: [] });
}
