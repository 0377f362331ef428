// The testbed of the mod_oai experiment (experiment.mjs): the seeded mod_oai-shaped site of
// bench/harvest-fixture.mjs, generated once under bench/work/experiment/<variant>/pristine/ and
// copied for each run (the update changes the copy, never the cached site, and never
// bench:harvest's own sites), plus what the paper's setting adds: a handful of awkward names
// and the page listing every file that wget starts from (the paper seeded wget from an
// `ls -1R` listing). Also the ground truth: snapshots of a tree (size, mtime, sha-256 of every
// file) and the difference between two of them, and a byte-for-byte comparison of two trees.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ensureSite, SITE_MTIME } from './harvest-fixture.mjs';

/** The page listing every file, at the site's root: a site file like any other. */
export const LISTING = 'listing.html';

/**
 * Names a real site has and a naive mirror trips over: spaces, non-ASCII (NFC), `#`, `&`, `%`,
 * `+`, `=`, quotes and brackets. Existing files are renamed to them (keeping their folder and
 * extension), so the site keeps the paper's 5,268 files.
 */
export const AWKWARD_NAMES = ['read me', 'café-menu', 'notes #1', 'q&a', '50% done', 'a+b=c', 'naïve résumé', 'Ünïcödé 日本', "it's (draft) [v2]"];

/**
 * A fresh copy of the variant's site for one run, under `<workDir>/<variant>/run-<run>`: the cached
 * pristine site copied (cp -a), awkward names given, the listing written with the site's date.
 * Returns the run's folder (for applyUpdate), its root, the site's description with `files`
 * the count applyUpdate draws from, and the renamed paths.
 */
export function prepareTestbed({ workDir, variant, run, seed, regenerate, log }) {
  const pristineDir = join(workDir, variant, 'pristine');
  const site = ensureSite({ dir: pristineDir, variant, seed, regenerate, log });
  const dir = join(workDir, variant, `run-${run}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const copied = spawnSync('cp', ['-a', join(pristineDir, 'site'), join(pristineDir, 'site.json'), join(pristineDir, 'paths.json'), dir], { encoding: 'utf8' });
  if (copied.status !== 0) throw new Error(`cp -a of the pristine site failed: ${copied.stderr}`);
  const root = join(dir, 'site');
  const paths = JSON.parse(readFileSync(join(dir, 'paths.json'), 'utf8'));
  const renamed = [];
  // Small files spread over the list, so they land in different folders and types.
  AWKWARD_NAMES.forEach((name, n) => {
    const index = paths.length - 1 - n * 37;
    const from = paths[index];
    const to = `${from.slice(0, from.lastIndexOf('/'))}/${name}${from.slice(from.lastIndexOf('.'))}`;
    renameSync(join(root, from), join(root, to));
    paths[index] = to;
    renamed.push({ from, to });
  });
  writeFileSync(join(dir, 'paths.json'), JSON.stringify(paths));
  writeListing(root, SITE_MTIME);
  return { dir, root, site: { ...site, root }, renamed };
}

/**
 * Writes listing.html at the root: one `<a href>` per file (URL-encoded, relative), sorted, the
 * listing itself left out, with `mtime` (seconds) as its date. Rewritten after the update, so
 * it lists the added files and no longer the deleted ones.
 */
export function writeListing(root, mtime) {
  const files = listFiles(root).filter((path) => path !== LISTING);
  const escapeHtml = (text) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
  const items = files.map((path) => `<li><a href="${escapeHtml(path.split('/').map(encodeURIComponent).join('/'))}">${escapeHtml(path)}</a></li>`);
  const html = `<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>ls -1R</title></head><body>\n<ul>\n${items.join('\n')}\n</ul>\n</body></html>\n`;
  const file = join(root, LISTING);
  writeFileSync(`${file}.tmp`, html);
  renameSync(`${file}.tmp`, file);
  utimesSync(file, mtime, mtime);
  return files.length;
}

/** The relative paths of the regular files under `root`, sorted. */
export function listFiles(root) {
  const out = [];
  const walk = (dir, prefix) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = prefix ? `${prefix}/${entry.name}` : entry.name;
      if (entry.isDirectory()) walk(join(dir, entry.name), path);
      else if (entry.isFile()) out.push(path);
    }
  };
  if (existsSync(root)) walk(root, '');
  return out.sort();
}

/** path -> { size, mtimeMs, sha256? } of every file under `root` (hashes only when asked). */
export function snapshot(root, { hash = true } = {}) {
  const map = new Map();
  for (const path of listFiles(root)) {
    const stats = lstatSync(join(root, path));
    const entry = { size: stats.size, mtimeMs: Math.floor(stats.mtimeMs) };
    if (hash)
      entry.sha256 = createHash('sha256')
        .update(readFileSync(join(root, path)))
        .digest('hex');
    map.set(path, entry);
  }
  return map;
}

/**
 * What changed between two snapshots of the site: paths touched only (same bytes, new mtime),
 * rewritten (other bytes), added and deleted. The listing is left out: it is regenerated by
 * the experiment, not by the update, and counted apart.
 */
export function groundTruth(before, after) {
  const truth = { touched: [], rewritten: [], added: [], deleted: [] };
  for (const [path, entry] of after) {
    if (path === LISTING) continue;
    const old = before.get(path);
    if (!old) truth.added.push(path);
    else if (old.sha256 !== entry.sha256) truth.rewritten.push(path);
    else if (old.mtimeMs !== entry.mtimeMs) truth.touched.push(path);
  }
  for (const path of before.keys()) if (path !== LISTING && !after.has(path)) truth.deleted.push(path);
  return truth;
}

/**
 * Compares `copy` with `reference` byte for byte (sha-256 of each file): files of the reference
 * missing from the copy, files whose bytes differ, and files only in the copy.
 */
export function compareTrees(reference, copy) {
  const result = { referenceFiles: reference.size, matching: 0, missing: [], different: [], extra: [] };
  for (const [path, entry] of reference) {
    const other = copy.get(path);
    if (!other) result.missing.push(path);
    else if (other.sha256 !== entry.sha256) result.different.push(path);
    else result.matching++;
  }
  for (const path of copy.keys()) if (!reference.has(path)) result.extra.push(path);
  result.identical = result.missing.length === 0 && result.different.length === 0 && result.extra.length === 0;
  return result;
}

/** Of the ground truth's paths, which `found` (a Set of paths) holds, per kind of change. */
export function scoreFound(truth, found) {
  const score = {};
  for (const kind of ['touched', 'rewritten', 'added', 'deleted']) {
    const hits = truth[kind].filter((path) => found[kind === 'deleted' ? 'deleted' : 'changed'].has(path));
    score[kind] = { expected: truth[kind].length, found: hits.length, missed: truth[kind].filter((path) => !hits.includes(path)).slice(0, 10) };
  }
  const expected = Object.values(score).reduce((sum, s) => sum + s.expected, 0);
  const hits = Object.values(score).reduce((sum, s) => sum + s.found, 0);
  return { ...score, expected, found: hits, all: expected === hits };
}
