// `--rights URI|FILE` (OAI-rights): a rightsManifest in Identify's description and a
// rightsReference in the `about` of every live record; a file's rights are given inline in the
// manifest and served at oai/rights, which the records point to. Deleted records carry none.
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { isRepositoryError, loadRights, RIGHTS_PATH } from '../src/index.ts';
import { httpRequest, oai, startRepository, tempDir, validate, writeTree } from './repository-helpers.ts';

const LICENCE = 'https://creativecommons.org/licenses/by/4.0/';

test('a URI: the manifest and every record refer to it, and the responses validate', async () => {
  const dir = tempDir();
  try {
    writeTree(join(dir.path, 'site'), { 'a.txt': 'a', 'b.html': '<p>b</p>', 'gone.txt': 'soon deleted' });
    const running = await startRepository(join(dir.path, 'site'), dir.path, { rights: await loadRights(LICENCE) });
    try {
      const identify = (await oai(running.endpoint, { verb: 'Identify' })).text;
      assert.ok(validate(identify, 'OAI-PMH-with-payloads.xsd').ok, validate(identify, 'OAI-PMH-with-payloads.xsd').output);
      assert.match(
        identify,
        /<description><rightsManifest xmlns="http:\/\/www.openarchives.org\/OAI\/2.0\/rights\/"[^>]* appliesTo="http:\/\/www.openarchives.org\/OAI\/2.0\/entity#metadata"><rights><rightsReference ref="https:\/\/creativecommons.org\/licenses\/by\/4.0\/"\/><\/rights><\/rightsManifest><\/description>/,
      );
      rmSync(join(dir.path, 'site', 'gone.txt'));
      await running.repository.scan();
      // Lists end a second before their responseDate: the deletion must be older.
      await new Promise((resolve) => setTimeout(resolve, 1100 - (Date.now() % 1000)));
      const records = (await oai(running.endpoint, { verb: 'ListRecords', metadataPrefix: 'oai_dc' })).text;
      const check = validate(records, 'OAI-PMH-with-payloads.xsd');
      assert.ok(check.ok, check.output);
      assert.equal(
        [...records.matchAll(/<rightsReference ref="https:\/\/creativecommons.org\/licenses\/by\/4.0\/"\/><\/rights><\/about><\/record>/g)].length,
        2,
      );
      assert.match(
        records,
        /<header status="deleted">[^<]*<identifier>[^<]*<\/identifier>(?:<[^/][^>]*>[^<]*<\/[^>]+>)*<\/header>\s*<\/record>/,
        'a deleted record carries no about',
      );
    } finally {
      await running.stop();
    }
  } finally {
    dir.cleanup();
  }
});

test('a file: its XML inline in the manifest and served at oai/rights, which the records point to', async () => {
  const dir = tempDir();
  try {
    writeTree(join(dir.path, 'site'), { 'a.txt': 'a' });
    const file = join(dir.path, 'rights.xml');
    const definition = '<licence xmlns="urn:example:licence"><text>Free to harvest &amp; keep.</text></licence>';
    writeFileSync(file, `<?xml version="1.0" encoding="UTF-8"?>\n${definition}\n`);
    const running = await startRepository(join(dir.path, 'site'), dir.path, { rights: await loadRights(file) });
    try {
      const identify = (await oai(running.endpoint, { verb: 'Identify' })).text;
      assert.ok(identify.includes(`<rights><rightsDefinition>${definition}</rightsDefinition></rights>`));
      const record = (await oai(running.endpoint, { verb: 'GetRecord', metadataPrefix: 'oai_dc', identifier: `${running.baseUrl}/a.txt` })).text;
      assert.ok(record.includes(`<rightsReference ref="${running.baseUrl}/${RIGHTS_PATH}"/>`));
      const served = await httpRequest(`${running.baseUrl}/${RIGHTS_PATH}`);
      assert.equal(served.status, 200);
      assert.equal(served.text, definition);
    } finally {
      await running.stop();
    }
  } finally {
    dir.cleanup();
  }
});

test('a value that is neither a file nor an absolute URI, or a file that is not XML, is refused with ERR_REPO_OPTIONS', async () => {
  const dir = tempDir();
  try {
    const notXml = join(dir.path, 'rights.txt');
    writeFileSync(notXml, 'free to use, <b>mostly');
    for (const value of ['no such thing', notXml]) {
      await assert.rejects(
        loadRights(value),
        (error: unknown) => isRepositoryError(error) && error.code === 'ERR_REPO_OPTIONS' && error.message.startsWith('--rights'),
      );
    }
  } finally {
    dir.cleanup();
  }
});
