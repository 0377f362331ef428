#!/usr/bin/env node
// The README's first command ends here: the whole product on an embedded sample site.
//
//   node scripts/demo.mjs [--out DIR] [--files N]
//
// 1. generates a sample web site (a few hundred files, mixed types, awkward names) in a
//    temporary folder and serves it with the repository (mod_oai semantics) on 127.0.0.1;
// 2. harvests it into DIR/archive (`oaibag harvest`), changes the site (touches a quarter of
//    the files, rewrites, adds and deletes a few), harvests again;
// 3. prints the audit of the second harvest and writes the HTML audit;
// 4. restores the site into DIR/restored and checks it equals the site byte for byte and
//    mtime for mtime; runs `oaibag verify` on the archive;
// 5. serves the archive onward as an OAI-PMH repository (`oaibag serve`'s server), shows its
//    Identify answer and harvests it into DIR/second-archive; prints where everything is.
// DIR defaults to ./demo. The server it starts is always closed, and the sample site removed.
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { changeSite, generateSite } from './demo-site.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const oaibag = join(root, 'packages/archiver/bin/oaibag.js');
const { values } = parseArgs({ options: { out: { type: 'string', default: 'demo' }, files: { type: 'string', default: '300' } } });
const out = resolve(values.out);
const archive = join(out, 'archive');
const restored = join(out, 'restored');
const secondArchive = join(out, 'second-archive');
const auditHtml = join(out, 'audit.html');
const warcFolder = join(out, 'warc');
const started = Date.now();

const { createRepository } = await import(join(root, 'packages/repository/dist/index.js'));
const { startArchiveServer } = await import(join(root, 'packages/archiver/dist/index.js'));

const work = mkdtempSync(join(tmpdir(), 'oaibag-demo-'));
const site = join(work, 'site');
let repository;
let served;
let failed = false;
try {
  rmSync(archive, { recursive: true, force: true });
  rmSync(restored, { recursive: true, force: true });
  rmSync(secondArchive, { recursive: true, force: true });
  rmSync(auditHtml, { force: true });
  rmSync(warcFolder, { recursive: true, force: true });

  heading('1. A sample web site, served over OAI-PMH');
  const paths = generateSite(site, Number(values.files));
  console.log(`${paths.length} files in ${site} (HTML, text, CSS, JSON, PNG, PDF, a 2 MB binary; names like "${paths.find((p) => p.includes('résumé'))}")`);
  repository = await createRepository({ root: site, index: join(work, 'index.sqlite'), watch: false, rescanSeconds: 0, byValueMax: 1_000_000 });
  const baseUrl = await repository.listen(0, '127.0.0.1');
  const endpoint = `${baseUrl}/oai`;
  console.log(`repository: ${endpoint} (oai_didl: files up to 1 MB By-Value, larger ones By-Reference)`);

  heading('2. First harvest');
  await oaibagRun(['harvest', endpoint, '--archive', archive]);

  heading('3. The site changes');
  await nextSecond();
  const change = changeSite(site, paths);
  await repository.scan();
  console.log(
    `touched ${change.touched.length} files (new mtime, same bytes), rewrote ${change.modified.length}, added ${change.added.length}, deleted ${change.deleted.length}`,
  );
  await nextSecond();

  heading('4. Incremental harvest: only what changed');
  await oaibagRun(['harvest', endpoint, '--archive', archive]);

  heading('5. Audit of that harvest');
  const audit = await oaibagRun(['audit', '--archive', archive, '--format', 'text'], { quiet: true });
  console.log(auditExcerpt(audit, 12));
  await oaibagRun(['audit', '--archive', archive, '--format', 'html', '--out', auditHtml]);

  heading('6. Restore the site from its AIPs, and compare');
  await oaibagRun(['restore', '--archive', archive, '--to', restored]);
  const differences = compareTrees(site, restored);
  if (differences.length > 0) {
    failed = true;
    console.log(`the restored site differs from the site:\n${limitLines(differences.join('\n'), 20)}`);
  } else {
    console.log(`the restored site equals the site: ${listFiles(site).length} files, byte for byte and mtime for mtime`);
  }

  heading('7. Fixity check of every bag');
  await oaibagRun(['verify', '--archive', archive]);

  heading('8. The archive served onward: oaibag serve answers Identify, and another archive harvests it');
  served = await startArchiveServer({ archiveDir: archive, repositoryName: 'oaibag demo archive' });
  const identify = await (await fetch(`${served.baseUrl}/oai?verb=Identify`)).text();
  console.log(limitLines(identify.slice(identify.indexOf('<Identify>')), 12));
  await nextSecond();
  await oaibagRun(['harvest', `${served.baseUrl}/oai`, '--archive', secondArchive]);

  heading('9. The archive for people: the home page, a search, a replay; and the archive as a WACZ');
  const home = await (await fetch(`${served.baseUrl}/`)).text();
  console.log(`GET / → "${/<title>([^<]*)<\/title>/.exec(home)?.[1]}", ${(home.match(/<tr>/g) ?? []).length} table rows (sources, recent changes)`);
  const search = await (await fetch(`${served.baseUrl}/search?q=.html`)).text();
  const firstHit = /href="[^"]*\/history\/([^"]+)"/.exec(search)?.[1];
  console.log(`GET /search?q=.html → ${(search.match(/\/history\//g) ?? []).length} results on the first page${firstHit ? `, the first ${firstHit}` : ''}`);
  if (firstHit) {
    const replay = await fetch(`${served.baseUrl}/replay/2999/${firstHit}`, { redirect: 'manual' });
    console.log(`GET /replay/2999/${firstHit} → ${replay.status} to ${replay.headers.get('location')}`);
  }
  await oaibagRun(['export', '--archive', archive, '--to', warcFolder, '--warc', '--wacz', '--name', 'demo']);

  heading('Where everything is');
  console.log(`archive (BagIt AIPs + catalog.sqlite): ${relative(process.cwd(), archive) || archive}`);
  console.log(`HTML audit report:                    ${relative(process.cwd(), auditHtml)}`);
  console.log(`restored site:                        ${relative(process.cwd(), restored)}`);
  console.log(`second archive, harvested from it:    ${relative(process.cwd(), secondArchive)}`);
  console.log(`the archive as a WACZ:                ${relative(process.cwd(), join(warcFolder, 'demo.wacz'))}`);
  console.log(
    `serve the archive yourself:           node ${relative(process.cwd(), oaibag)} serve --archive ${relative(process.cwd(), archive)}  (then open its / in a browser)`,
  );
  console.log(`status of the archive:                node ${relative(process.cwd(), oaibag)} status --archive ${relative(process.cwd(), archive)}`);
  console.log(`\ndemo ${failed ? 'FAILED' : 'done'} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
} catch (error) {
  failed = true;
  console.error(`demo: ${error.message}`);
} finally {
  await served?.close();
  await repository?.close();
  rmSync(work, { recursive: true, force: true });
}
process.exitCode = failed ? 1 : 0;

/**
 * Runs an `oaibag` command, echoing it and its output; throws when it fails. Asynchronous:
 * the repository serving the harvest lives in this process and must keep answering.
 */
async function oaibagRun(args, { quiet = false } = {}) {
  console.log(
    `$ oaibag ${args
      .map((arg) => (/[\s'"&#]/.test(arg) ? JSON.stringify(arg) : arg))
      .map(shorten)
      .join(' ')}`,
  );
  const child = spawn(process.execPath, [oaibag, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (text) => (stdout += text));
  child.stderr.setEncoding('utf8').on('data', (text) => (stderr += text));
  const status = await new Promise((done, fail) => child.on('error', fail).on('close', done));
  if (!quiet && stdout) process.stdout.write(stdout.replace(/^(?=.)/gm, '  '));
  if (status !== 0) throw new Error(`oaibag ${args[0]} exited ${status}: ${stderr.trim()}`);
  return stdout;
}

/** Paths relative to the working folder, so the printed commands stay readable. */
function shorten(arg) {
  return arg.startsWith(`${process.cwd()}${sep}`) ? relative(process.cwd(), arg) : arg;
}

/** Every difference between two trees: files missing either side, other bytes, other mtime. */
function compareTrees(a, b) {
  const left = new Set(listFiles(a));
  const right = new Set(listFiles(b));
  const differences = [];
  for (const path of left) {
    if (!right.has(path)) differences.push(`missing from the restore: ${path}`);
    else if (!readFileSync(join(a, path)).equals(readFileSync(join(b, path)))) differences.push(`other bytes: ${path}`);
    else if (Math.floor(statSync(join(a, path)).mtimeMs / 1000) !== Math.floor(statSync(join(b, path)).mtimeMs / 1000))
      differences.push(`other mtime: ${path}`);
  }
  for (const path of right) if (!left.has(path)) differences.push(`only in the restore: ${path}`);
  return differences;
}

function listFiles(dir, prefix = '') {
  const found = [];
  for (const entry of readdirSync(join(dir, prefix), { withFileTypes: true })) {
    const path = prefix ? `${prefix}/${entry.name}` : entry.name;
    if (entry.isDirectory()) found.push(...listFiles(dir, path));
    else if (entry.isFile()) found.push(path);
  }
  return found;
}

/** The audit's heading and first rows, then its totals (the text report ends with them). */
function auditExcerpt(text, rows) {
  const lines = text.trimEnd().split('\n');
  const totals = lines.lastIndexOf('');
  if (totals < 0 || totals <= rows + 3) return lines.join('\n');
  return [...lines.slice(0, rows + 3), `  … ${totals - rows - 3} more rows`, ...lines.slice(totals)].join('\n');
}

function limitLines(text, max) {
  const lines = text.trimEnd().split('\n');
  return lines.length <= max ? lines.join('\n') : `${lines.slice(0, max).join('\n')}\n  … ${lines.length - max} more lines`;
}

function heading(text) {
  console.log(`\n== ${text}`);
}

/** The repository's lists exclude the current second: changes wait for the next one. */
function nextSecond() {
  return new Promise((done) => setTimeout(done, 1100 - (Date.now() % 1000)));
}
