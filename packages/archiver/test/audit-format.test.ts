import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { storeVersion } from '../../../test/catalog-fixture.ts';
import { AUDIT_CSV_HEADER, auditCsv, auditJson, auditText, csvField, formatAudit, writeAuditOutput } from '../src/audit/audit-format.ts';
import { escapeHtml, scriptJson } from '../src/audit/audit-html.ts';
import { type AuditReport, audit, auditRunOf, openAudit } from '../src/audit/audit-query.ts';
import { Catalog } from '../src/catalog/catalog.ts';
import { isArchiverError } from '../src/core/errors.ts';

const BASE = 'https://example.org/oai';
/** Identifiers are whatever the repository sends: quotes, commas, line breaks, markup, escapes. */
const HOSTILE = {
  quotes: 'https://example.org/say "hi", then, bye',
  lines: 'https://example.org/two\r\nlines',
  markup: `https://example.org/<script>alert('x')</script>&amp;<img src=x onerror=alert(1)>`,
  terminal: 'https://example.org/\x1b[31mred\x1b[0m\x07',
};

async function folder(t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'oaibag-audit-format-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * A catalog with two harvests: the first adds three hostile identifiers and a plain one; the
 * second modifies `quotes`, deletes `lines`, touches `markup` with a new MIME type and adds
 * `terminal`. The default audit (harvest 2) has those four rows.
 */
async function hostileCatalog(t: TestContext): Promise<Catalog> {
  const catalog = Catalog.open(await folder(t));
  t.after(() => catalog.close());
  const source = catalog.upsertSource(BASE, {});
  let n = 0;
  const put = (harvestId: number, identifier: string, datestamp: string, sha: string, mimeType = 'text/plain') =>
    storeVersion(catalog, { sourceId: source.id, identifier, datestamp, size: 10 + n++, sha256: sha.repeat(64), mimeType, harvestId });
  const one = catalog.startRun(source.id, 'harvest', { prefix: 'oai_didl' });
  put(one, HOSTILE.quotes, '2024-01-01T00:00:00Z', 'a');
  put(one, HOSTILE.lines, '2024-01-01T00:00:00Z', 'b');
  put(one, HOSTILE.markup, '2024-01-01T00:00:00Z', 'c');
  put(one, 'https://example.org/plain', '2024-01-01T00:00:00Z', 'd');
  catalog.finishRun(one, 'complete');
  const two = catalog.startRun(source.id, 'harvest', { prefix: 'oai_didl' });
  put(two, HOSTILE.quotes, '2024-02-01T00:00:00Z', 'e'); // modified
  catalog.recordDeletion(source.id, HOSTILE.lines, '2024-02-01T00:00:00Z', two); // deleted
  put(two, HOSTILE.markup, '2024-02-01T00:00:00Z', 'c', 'text/html'); // touched, MIME changed
  put(two, HOSTILE.terminal, '2024-02-01T00:00:00Z', 'f'); // added
  catalog.finishRun(two, 'complete');
  return catalog;
}

async function collect(chunks: Iterable<string>): Promise<string> {
  let text = '';
  for (const chunk of chunks) text += chunk;
  return text;
}

/** An RFC 4180 reader, to check the writer against: records of fields. */
function parseCsv(text: string): string[][] {
  const records: string[][] = [];
  let field = '';
  let record: string[] = [];
  let i = 0;
  while (i < text.length) {
    if (text[i] === '"') {
      i++;
      for (;;) {
        if (text[i] === '"' && text[i + 1] === '"') {
          field += '"';
          i += 2;
        } else if (text[i] === '"') {
          i++;
          break;
        } else field += text[i++];
      }
    } else if (text.startsWith('\r\n', i)) {
      record.push(field);
      records.push(record);
      record = [];
      field = '';
      i += 2;
    } else if (text[i] === ',') {
      record.push(field);
      field = '';
      i++;
    } else field += text[i++];
  }
  assert.equal(field, '', 'the last record ends with CRLF');
  return records;
}

test('CSV: one header line, a record per row, RFC 4180 quoting of hostile identifiers, values verbatim', async (t) => {
  const catalog = await hostileCatalog(t);
  const report = audit(catalog);
  assert.equal(report.rows.length, 4);
  const text = await collect(auditCsv(auditRunOf(report)));
  const records = parseCsv(text);
  assert.equal(text.split('\r\n')[0], AUDIT_CSV_HEADER);
  assert.equal(records.length, 1 + report.rows.length);
  for (const record of records) assert.equal(record.length, 12);
  const byId = new Map(records.slice(1).map((record) => [record[0], record]));
  assert.deepEqual(byId.get(HOSTILE.quotes)!.slice(1), [
    'modified',
    'false',
    '2024-01-01T00:00:00Z',
    '10',
    'a'.repeat(64),
    'text/plain',
    '2024-02-01T00:00:00Z',
    '14',
    'e'.repeat(64),
    'text/plain',
    '2',
  ]);
  assert.deepEqual(byId.get(HOSTILE.lines)!.slice(1), [
    'deleted',
    'false',
    '2024-01-01T00:00:00Z',
    '11',
    'b'.repeat(64),
    'text/plain',
    '2024-02-01T00:00:00Z',
    '',
    '',
    '',
    '2',
  ]);
  assert.deepEqual(byId.get(HOSTILE.markup)!.slice(1, 3), ['touched', 'true']);
  assert.deepEqual(byId.get(HOSTILE.terminal)!.slice(1, 7), ['added', 'false', '', '', '', '']);
  assert.equal(csvField('plain'), 'plain');
  assert.equal(csvField('a "b", c'), '"a ""b"", c"');
});

test('JSON: one object with period, sources, rows and totals, the same as the library audit', async (t) => {
  const catalog = await hostileCatalog(t);
  const expected = audit(catalog);
  const parsed = JSON.parse(await collect(auditJson(openAudit(catalog)))) as AuditReport;
  assert.deepEqual(Object.keys(parsed), ['period', 'sources', 'rows', 'totals']);
  assert.deepEqual(parsed, JSON.parse(JSON.stringify(expected)));
  assert.deepEqual(parsed.totals.byChange, { added: 1, modified: 1, touched: 1, deleted: 1, restored: 0, mimeChanged: 1 });
  assert.deepEqual(parsed.sources, [{ id: 1, baseUrl: BASE, repositoryName: null }]);
  // No rows is still one valid object.
  const empty = JSON.parse(await collect(auditJson(auditRunOf({ ...expected, rows: [], totals: { ...expected.totals, rows: 0 } })))) as AuditReport;
  assert.deepEqual(empty.rows, []);
});

test('text: a table line per row, the totals, and no raw control character from the catalog', async (t) => {
  const catalog = await hostileCatalog(t);
  const text = await collect(auditText(openAudit(catalog)));
  assert.doesNotMatch(text.replace(/\n/g, ''), /[\x00-\x1f\x7f]/);
  assert.match(text, /^added .* https:\/\/example\.org\/\\u001b\[31mred\\u001b\[0m\\u0007$/m);
  assert.match(text, /^deleted .* https:\/\/example\.org\/two\\u000d\\u000alines$/m);
  assert.match(text, /^touched .* text\/plain -> text\/html +https:\/\/example\.org\/<script>/m);
  assert.match(text, /^4 resources changed: 1 added, 1 modified, 1 touched, 1 deleted, 0 restored; 1 MIME type change$/m);
  assert.match(text, /^ {2}#2 \S+ complete https:\/\/example\.org\/oai: 1 added, 1 modified, 1 touched, 1 deleted, 0 restored$/m);
});

test('HTML: every catalog value is escaped or inert, nothing outside the file is referenced', async (t) => {
  const catalog = await hostileCatalog(t);
  const report = audit(catalog);
  const html = await collect(formatAudit(openAudit(catalog), 'html'));
  // The rows are a JSON data block in which no value can close the element or make markup.
  const block = /<script type="application\/json" id="audit-rows">([\s\S]*?)<\/script>/.exec(html)?.[1];
  assert.ok(block);
  assert.doesNotMatch(block, /[<>&]/);
  const rows = JSON.parse(block) as unknown[][];
  assert.deepEqual(
    rows.map((row) => [row[0], row[1], row[2]]),
    report.rows.map((row) => [row.identifier, row.change, row.mimeChanged ? 1 : 0]),
  );
  assert.deepEqual(
    rows.find((row) => row[0] === HOSTILE.lines),
    [HOSTILE.lines, 'deleted', 0, 2, [0, '2024-01-01T00:00:00Z', 11, 'b'.repeat(64), 'text/plain'], [1, '2024-02-01T00:00:00Z', null, null, null]],
  );
  assert.ok(!html.includes('<script>alert') && !html.includes('<img'), 'no identifier is markup');
  assert.equal(html.match(/<script/g)?.length, 2, 'the data block and the page script');
  assert.doesNotMatch(html, /<[^>]*\s(src|href)=|url\(|@import|<link|<iframe|<object/i);
  assert.doesNotMatch(html, /[\x00-\x09\x0b-\x1f\x7f]/, 'control characters are escaped');
  assert.match(html, /<meta http-equiv="Content-Security-Policy" content="default-src 'none';/);
  assert.equal(html.match(/<g class="bar" data-harvest="2">/g)?.length, 1);
  assert.equal(escapeHtml(`<a href="x" title='y'>&</a>`), '&#60;a href=&#34;x&#34; title=&#39;y&#39;&#62;&#38;&#60;/a&#62;');
  assert.equal(scriptJson(['</script><!--', '\u2028']), '["\\u003c/script\\u003e\\u003c!--","\\u2028"]');
});

test('the formats stream: a large audit comes in many chunks', async (t) => {
  const catalog = Catalog.open(await folder(t));
  t.after(() => catalog.close());
  const source = catalog.upsertSource(BASE, {});
  const harvestId = catalog.startRun(source.id, 'harvest', { prefix: 'oai_didl' });
  catalog.transaction(() => {
    for (let n = 0; n < 3000; n++) {
      storeVersion(catalog, {
        sourceId: source.id,
        identifier: `https://example.org/${n}`,
        datestamp: '2024-01-01T00:00:00Z',
        size: n,
        sha256: n.toString(16).padStart(64, '0'),
        harvestId,
      });
    }
  });
  for (const format of ['text', 'json', 'csv', 'html'] as const) {
    const chunks = [...formatAudit(openAudit(catalog), format)];
    assert.ok(chunks.length > 2, `${format}: ${chunks.length} chunks`);
    assert.ok(Math.max(...chunks.map((chunk) => chunk.length)) < 256 * 1024, format);
  }
});

test('--out is written whole or not at all: a failure mid-way leaves the old file and no temporary file', async (t) => {
  const dir = await folder(t);
  const out = join(dir, 'audit.csv');
  await writeFile(out, 'the previous audit\n');
  function* failing(): Generator<string> {
    yield 'a,b\r\n'.repeat(50_000);
    throw new Error('the catalog went away');
  }
  await assert.rejects(writeAuditOutput(failing(), out), (error: unknown) => isArchiverError(error) && error.code === 'ERR_ARCHIVE_IO' && error.path === out);
  assert.equal(await readFile(out, 'utf8'), 'the previous audit\n');
  assert.deepEqual(await readdir(dir), ['audit.csv']);
  await writeAuditOutput(['one,', 'two\r\n'], out);
  assert.equal(await readFile(out, 'utf8'), 'one,two\r\n');
  assert.deepEqual(await readdir(dir), ['audit.csv']);
  await assert.rejects(writeAuditOutput(['x'], join(dir, 'missing/audit.csv')), (error: unknown) => isArchiverError(error) && error.code === 'ERR_ARCHIVE_IO');
});
