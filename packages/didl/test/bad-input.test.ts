/**
 * Bad input to the reader: every refusal is a DidlError with a stable code, a one-line
 * message and a position; nothing crashes, nothing hangs (each read is guarded by a 10 s
 * timer), and a datastream consumer never mistakes a bad datastream for a good one.
 * Then the writer: values XML cannot carry, header names that are not tokens, refs that
 * are not http; values that are legal but need escaping must come back exactly through
 * writeDidl -> readDidl. Last, a seeded fuzz loop over the reader.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { describe, test } from 'node:test';
import { DidlError, type DidlErrorCode, type DidlWriteInput, writeDidl } from '../src/index.ts';
import {
  assertDidlError,
  assertStreamsFailedWith,
  base64Lines,
  DIDL_NAMESPACES,
  didlDoc,
  expectRefused,
  guard,
  ID,
  lineOf,
  oaiPage,
  PAYLOAD,
  prng,
  read,
  sha256,
} from './bad-input-helpers.ts';

const GOOD = didlDoc();

test('the fixture itself reads cleanly (so every refusal below is caused by the change made to it)', async () => {
  const outcome = await read(GOOD);
  assert.equal(outcome.error, undefined);
  assert.equal(outcome.records.length, 1);
  assert.equal(outcome.records[0]!.error, undefined);
  assert.equal(outcome.records[0]!.didl!.identifier, ID);
  assert.ok(outcome.streams[0]!.clean && outcome.streams[0]!.bytes.equals(PAYLOAD));
});

describe('not well-formed XML is ERR_DIDL_NOT_WELL_FORMED', () => {
  const cases: Array<[string, string | Buffer, string]> = [
    ['mismatched end tag', GOOD.replace('</didl:Component>', '</didl:Components>'), '</didl:Components>'],
    ['an end tag that closes the wrong element', GOOD.replace('</didl:Descriptor>', '</didl:Item>'), '</didl:Item>'],
    ['an unquoted attribute value', GOOD.replace('mimeType="text/plain" ref=', 'mimeType=text/plain ref='), 'mimeType=text/plain'],
    ['an attribute without a value', GOOD.replace('<didl:Item>', '<didl:Item hidden>'), '<didl:Item hidden>'],
    ['an unbound element prefix', GOOD.replace('<didl:Component>', '<didl:Component><foo:bar/>'), '<foo:bar/>'],
    ['an unbound attribute prefix', GOOD.replace('<didl:Component>', '<didl:Component foo:x="1">'), 'foo:x'],
    ['text after the root element', `${GOOD}trailing text\n`, 'trailing text'],
    ['a second root element', `${GOOD}<didl:DIDL ${DIDL_NAMESPACES}><didl:Item/></didl:DIDL>\n`, `<didl:DIDL ${DIDL_NAMESPACES}><didl:Item/>`],
    ['a bare ampersand in text', GOOD.replace('Caf\u00e9 \u2615 notes', 'notes & more'), '& more'],
    ['a character reference to U+0000', GOOD.replace(`${ID}</dii`, `${ID}&#0;</dii`), '&#0;'],
    ['garbage bytes before the root', Buffer.concat([Buffer.from([0x00, 0x9c, 0x13, 0x37, 0x42]), Buffer.from(GOOD)]), ''],
    ['a binary file instead of XML', Buffer.from('PK\x03\x04\x14\x00\x06\x00\x08\x00\x00\x00!\x00'), ''],
  ];
  for (const [name, input, marker] of cases) {
    test(name, async () => {
      const text = input.toString();
      const where = marker ? { line: lineOf(text, marker) } : { line: 1 };
      // Bytes that are not UTF-8 at all are named as such.
      const code = name.startsWith('garbage bytes') ? 'ERR_DIDL_ENCODING' : 'ERR_DIDL_NOT_WELL_FORMED';
      const { records } = await expectRefused(input, code, {}, where);
      if (!name.includes('after the root') && !name.includes('second root')) assert.equal(records.length, 0);
    });
  }

  // XML 1.0 forbids C0 controls other than tab/LF/CR even as raw characters, and a byte
  // sequence that is not UTF-8 in a UTF-8 document is a fatal error: neither may reach a record.
  test('garbage C0 control bytes inside an element', async () => {
    const input = GOOD.replace(`${ID}</dii`, `${ID}\u0001\u0002\u001b</dii`);
    await expectRefused(input, 'ERR_DIDL_NOT_WELL_FORMED', {}, { line: lineOf(input, '\u0001') });
  });

  test('bytes that are not UTF-8 inside an element (not silently replaced by U+FFFD)', async () => {
    const at = GOOD.indexOf(`${ID}</dii`) + ID.length;
    const input = Buffer.concat([Buffer.from(GOOD.slice(0, at)), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from(GOOD.slice(at))]);
    const outcome = await expectRefused(input, ['ERR_DIDL_NOT_WELL_FORMED', 'ERR_DIDL_ENCODING'], {}, { line: lineOf(GOOD, ID) });
    assert.equal(outcome.records.length, 0);
  });
});

describe('DTDs and entities', () => {
  const laughs =
    '<!DOCTYPE didl:DIDL [\n  <!ENTITY lol "lol">\n' +
    Array.from({ length: 9 }, (_, i) => `  <!ENTITY lol${i + 1} "${`&lol${i === 0 ? '' : i};`.repeat(10)}">`).join('\n') +
    '\n]>\n';

  test('a DOCTYPE without an internal subset is ERR_DIDL_DOCTYPE', async () => {
    const input = GOOD.replace('<didl:DIDL', '<!DOCTYPE didl:DIDL>\n<didl:DIDL');
    const { records, streams } = await expectRefused(input, 'ERR_DIDL_DOCTYPE', {}, { line: 2 });
    assert.equal(records.length + streams.length, 0);
  });

  test('billion laughs: ERR_DIDL_DOCTYPE before any entity is expanded, in throw and in report mode', async () => {
    const input = GOOD.replace('<didl:DIDL', `${laughs}<didl:DIDL`).replace(`${ID}</dii`, `${ID}&lol9;</dii`);
    for (const recordErrors of ['throw', 'report'] as const) {
      const started = Date.now();
      const { error, records } = await expectRefused(input, 'ERR_DIDL_DOCTYPE', { recordErrors }, { line: lineOf(input, ']>') });
      assert.equal(records.length, 0, 'no record (and so no expanded identifier) was handed over');
      assert.ok(!error.message.includes('lollol'));
      assert.ok(Date.now() - started < 2000, 'took long enough to have expanded something');
    }
  });

  test('external entities: ERR_DIDL_DOCTYPE, nothing read from the file system, nothing fetched', async () => {
    let requests = 0;
    const server = createServer((_, response) => {
      requests++;
      response.end('<!ENTITY evil "fetched">');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const doctype =
        `<!DOCTYPE didl:DIDL SYSTEM "${base}/didl.dtd" [\n  <!ENTITY xxe SYSTEM "file:///etc/passwd">\n` +
        `  <!ENTITY % remote SYSTEM "${base}/remote.dtd">\n  %remote;\n]>\n`;
      const input = GOOD.replace('<didl:DIDL', `${doctype}<didl:DIDL`).replace(`${ID}</dii`, `${ID}&xxe;&evil;</dii`);
      const { error, records } = await expectRefused(input, 'ERR_DIDL_DOCTYPE');
      assert.equal(records.length, 0);
      assert.ok(!/root:|fetched/.test(error.message));
      await new Promise((resolve) => setTimeout(resolve, 100));
      assert.equal(requests, 0, 'the reader fetched a DTD or an entity');
    } finally {
      server.close();
    }
  });

  test('&nbsp; (only the five XML entities exist) is ERR_DIDL_NOT_WELL_FORMED in text, in an attribute and in base64', async () => {
    const inputs = [
      GOOD.replace(`${ID}</dii`, `${ID}&nbsp;</dii`),
      GOOD.replace('mimeType="text/plain" ref=', 'mimeType="text&nbsp;plain" ref='),
      GOOD.replace(/encoding="base64">\n(.{20})/, 'encoding="base64">\n$1&nbsp;'),
    ];
    for (const input of inputs) await expectRefused(input, 'ERR_DIDL_NOT_WELL_FORMED', {}, { line: lineOf(input, '&nbsp;') });
  });
});

test('a document cut at every 13th byte (and in base64, in a tag, in a UTF-8 character, empty) never reads as good', async () => {
  const full = Buffer.from(GOOD, 'utf8');
  const byteIndex = (marker: string) => full.indexOf(marker);
  const rootClosed = byteIndex('</didl:DIDL>') + '</didl:DIDL>'.length;
  const contentStart = byteIndex('encoding="base64">') + 'encoding="base64">'.length;
  const resourceClosed = byteIndex('</didl:Resource>') + '</didl:Resource>'.length;
  const cuts = new Set<number>([
    0,
    Math.floor((contentStart + resourceClosed) / 2),
    byteIndex('<didl:Component>') + 7,
    byteIndex('\u2615') + 1,
    contentStart,
    rootClosed - 1,
  ]);
  for (let cut = 0; cut < rootClosed; cut += 13) cuts.add(cut);
  let consumersCut = 0;
  for (const cut of [...cuts].sort((a, b) => a - b)) {
    for (const chunk of [64, 1 << 20]) {
      const label = `cut at byte ${cut} of ${full.length}, chunks of ${chunk}`;
      const outcome = await read(full.subarray(0, cut), { chunk });
      assert.equal(outcome.summary, undefined, `${label}: read succeeded`);
      assertDidlError(outcome.error, cut === 0 ? 'ERR_DIDL_TRUNCATED' : ['ERR_DIDL_TRUNCATED', 'ERR_DIDL_NOT_WELL_FORMED'], { position: cut > 0 });
      assert.equal(outcome.records.length, 0, label);
      if (cut >= contentStart && cut < resourceClosed) {
        // The consumer was reading the datastream when the input ended: it must see the error.
        assert.equal(outcome.streams.length, 1, label);
        assertStreamsFailedWith(outcome, outcome.error);
        consumersCut++;
      } else if (cut >= resourceClosed) {
        assert.ok(outcome.streams[0]!.clean && outcome.streams[0]!.bytes.equals(PAYLOAD), label);
      } else {
        assert.equal(outcome.streams.length, 0, label);
      }
    }
  }
  assert.ok(consumersCut >= 20, `only ${consumersCut} cuts fell inside the base64 content`);
});

describe('invalid base64 is ERR_DIDL_BAD_BASE64 and the consumer sees that error', () => {
  // [name, content, where the error is found: on the content's second line, or at the end tag]
  const cases: Array<[string, string, 'second line' | 'end tag']> = [
    ['"!" outside the alphabet', 'QUJD\nREVG!dGhl', 'second line'],
    ['"*" outside the alphabet', 'QUJD\nREVG*dGhl', 'second line'],
    ['a non-ASCII character', 'QUJD\nREVG\u00e9dGhl', 'second line'],
    ['data after padding', 'QUJD\nQQ==QQ==', 'second line'],
    ['a lone "=" ("Q===")', 'QUJD\nQ===', 'second line'],
    ['an element inside the content', 'QUJD\nREVG<b>dGhl</b>', 'second line'],
    ['an incomplete final group ("QUJ")', 'QUJD\nQUJ', 'end tag'],
    ['"QQ=" without its second "="', 'QUJD\nQQ=', 'end tag'],
  ];
  for (const [name, content, found] of cases) {
    test(name, async () => {
      const input = didlDoc({ base64: content, contentLength: null, digest: null });
      const line = found === 'end tag' ? lineOf(input, '</didl:Resource>') : lineOf(input, 'QUJD') + 1;
      for (const chunk of [1, 7, 1 << 20]) {
        const outcome = await expectRefused(input, 'ERR_DIDL_BAD_BASE64', { chunk }, { line });
        assert.equal(outcome.records.length, 0);
        assertStreamsFailedWith(outcome, outcome.error);
        assert.ok(outcome.streams[0]!.bytes.length <= 6, 'bytes after the bad character were delivered');
      }
    });
  }

  test('a bad character on line 23 of the document is reported at line 23, column 31, whatever the chunking', async () => {
    const lines = base64Lines(PAYLOAD).split('\n');
    lines[3] = `${lines[3]!.slice(0, 30)}!${lines[3]!.slice(31)}`;
    const input = didlDoc({ base64: lines.join('\n') });
    assert.equal(lineOf(input, '!'), 23, 'fixture layout');
    for (const chunk of [1, 7, 64, 1 << 20]) {
      const { error } = await expectRefused(input, 'ERR_DIDL_BAD_BASE64', { chunk }, { line: 23 });
      assert.equal(error.position!.column, 31, `column, chunks of ${chunk}`);
    }
  });

  test('after a character reference (sax path) a bad character is still reported on its own line', async () => {
    const lines = base64Lines(PAYLOAD).split('\n');
    lines[1] = `${lines[1]!.slice(0, 4)}&#x${lines[1]!.charCodeAt(4).toString(16)};${lines[1]!.slice(5)}`;
    lines[3] = `${lines[3]!.slice(0, 30)}!${lines[3]!.slice(31)}`;
    const input = didlDoc({ base64: lines.join('\n') });
    await expectRefused(input, 'ERR_DIDL_BAD_BASE64', {}, { line: lineOf(input, '!') });
  });

  test('a BAD_BASE64 error names its record, like every record-level error (fast path, element, final group)', async () => {
    for (const content of ['QUJD\nREVG!dGhl', 'QUJD\nREVG<b/>', 'QUJD\nQUJ']) {
      const { error } = await expectRefused(didlDoc({ base64: content, contentLength: null, digest: null }), 'ERR_DIDL_BAD_BASE64');
      assert.equal(error.identifier, ID, `no record named for ${JSON.stringify(content)}: ${error.message}`);
      assert.ok(error.message.includes(`(record ${ID})`));
    }
  });

  test("in 'report' mode the record carries the error, the consumer sees it, and reading goes on", async () => {
    const input = didlDoc({ base64: 'QUJD\nREVG!dGhl', contentLength: null, digest: null });
    const outcome = await read(input, { recordErrors: 'report' });
    assert.equal(outcome.error, undefined);
    assert.equal(outcome.records.length, 1);
    assertDidlError(outcome.records[0]!.error, 'ERR_DIDL_BAD_BASE64');
    assertStreamsFailedWith(outcome, outcome.records[0]!.error);
  });
});

describe('record checks', () => {
  test('By-Value content shorter than Content-Length is ERR_DIDL_LENGTH_MISMATCH with expected and found, once the record is read', async () => {
    const declared = PAYLOAD.length + 1;
    const input = didlDoc({ contentLength: String(declared) });
    const { error } = await expectRefused(input, 'ERR_DIDL_LENGTH_MISMATCH', {}, { line: lineOf(input, '</didl:DIDL>') });
    assert.equal(error.expected, declared);
    assert.equal(error.found, PAYLOAD.length);
    assert.equal(error.identifier, ID);
    assert.ok(error.message.includes(ID));
  });

  test('By-Value content longer than Content-Length is ERR_DIDL_LENGTH_MISMATCH at the first byte past the promise (issue 24)', async () => {
    // The bytes stop at the promise: a datastream that never ends costs its consumer no more.
    const declared = PAYLOAD.length - 1;
    const input = didlDoc({ contentLength: String(declared) });
    // Read in 64-byte chunks: the refusal comes inside the base64, not at the end of the record.
    const { error } = await expectRefused(input, 'ERR_DIDL_LENGTH_MISMATCH', { chunk: 64 });
    const line = error.position?.line ?? 0;
    assert.ok(line > lineOf(input, 'encoding="base64"') && line < lineOf(input, '</didl:DIDL>'), `refused at line ${line}`);
    assert.equal(error.expected, declared);
    assert.ok(Number(error.found) > declared && Number(error.found) <= PAYLOAD.length, `found ${error.found}`);
    assert.match(error.message, new RegExp(`more than the ${declared} bytes its Content-Length says`));
    assert.equal(error.identifier, ID);
  });

  test('a Content-Length that is not a number is ERR_DIDL_BAD_HEADER', async () => {
    for (const value of ['six hundred', '600 bytes', '-600', '0x258', '']) await expectRefused(didlDoc({ contentLength: value }), 'ERR_DIDL_BAD_HEADER');
  });

  test('a wrong sha-256 PREMIS digest is ERR_DIDL_DIGEST_MISMATCH with expected and found', async () => {
    const wrong = sha256(Buffer.from('something else'));
    const { error } = await expectRefused(didlDoc({ digest: wrong.toUpperCase() }), 'ERR_DIDL_DIGEST_MISMATCH');
    assert.equal(error.expected, wrong);
    assert.equal(error.found, sha256(PAYLOAD));
  });

  test('no dii:Identifier is ERR_DIDL_NO_IDENTIFIER; no Item at all too', async () => {
    await expectRefused(didlDoc({ identifiers: [] }), 'ERR_DIDL_NO_IDENTIFIER', {}, { line: lineOf(didlDoc({ identifiers: [] }), '</didl:Item>') });
    await expectRefused(`<didl:DIDL ${DIDL_NAMESPACES}></didl:DIDL>`, 'ERR_DIDL_NO_IDENTIFIER');
  });

  test('two dii:Identifier Descriptors on the top Item is ERR_DIDL_REPEATED_IDENTIFIER', async () => {
    const { error } = await expectRefused(didlDoc({ identifiers: [ID, 'http://example.org/other'] }), 'ERR_DIDL_REPEATED_IDENTIFIER');
    assert.ok(error.message.includes('http://example.org/other'));
  });

  // Values from the document are quoted in messages; a CR or LF inside them must not break the line.
  const crlf: Array<[string, string, DidlErrorCode]> = [
    ['a CR inside a Content-Length', didlDoc({ contentLength: '6&#13;00' }), 'ERR_DIDL_BAD_HEADER'],
    ['a CR inside a digest', didlDoc({ digest: `${sha256(PAYLOAD).slice(0, 32)}&#13;${sha256(PAYLOAD).slice(32)}` }), 'ERR_DIDL_DIGEST_MISMATCH'],
    ['an LF inside the identifier the message names', didlDoc({ identifiers: [`${ID}&#10;x`], ref: 'ftp://example.org/x' }), 'ERR_DIDL_BAD_REF'],
  ];
  for (const [name, input, code] of crlf) {
    test(`the message stays on one line with ${name}`, async () => {
      await expectRefused(input, code);
    });
  }

  for (const ref of ['file:///etc/passwd', 'ftp://example.org/notes.txt', 'javascript:alert(1)', 'papers/notes.txt', '//example.org/notes.txt']) {
    test(`Resource ref ${JSON.stringify(ref)} is ERR_DIDL_BAD_REF`, async () => {
      const input = didlDoc({ ref });
      const { error } = await expectRefused(input, 'ERR_DIDL_BAD_REF', {}, { line: lineOf(input, `ref="${ref}"`) });
      assert.ok(error.message.includes(ref));
    });
  }
});

describe('refused documents', () => {
  test('Resource encoding="hex" is ERR_DIDL_UNSUPPORTED_ENCODING', async () => {
    const input = didlDoc({ encoding: 'hex', base64: PAYLOAD.subarray(0, 30).toString('hex') });
    await expectRefused(input, 'ERR_DIDL_UNSUPPORTED_ENCODING', {}, { line: lineOf(input, 'encoding="hex"') });
  });

  test('a root element that is neither DIDL nor OAI-PMH is ERR_DIDL_NOT_DIDL', async () => {
    for (const [input, line] of [
      ['<?xml version="1.0"?>\n<html><body>not DIDL</body></html>', 2],
      ['<DIDL xmlns="urn:example:not-the-didl-namespace"><Item/></DIDL>', 1],
      ['<OAI-PMH><ListRecords/></OAI-PMH>', 1],
    ] as const) {
      await expectRefused(input, 'ERR_DIDL_NOT_DIDL', {}, { line });
    }
  });

  test('UTF-16 (either byte order mark) and a non-UTF-8 encoding declaration are ERR_DIDL_ENCODING', async () => {
    const utf16le = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(GOOD.replace('UTF-8', 'UTF-16'), 'utf16le')]);
    const utf16be = Buffer.from(utf16le).swap16();
    for (const input of [utf16le, utf16be]) await expectRefused(input, 'ERR_DIDL_ENCODING', {}, { line: 1 });
    await expectRefused(GOOD.replace('encoding="UTF-8"', 'encoding="ISO-8859-1"'), 'ERR_DIDL_ENCODING', {}, { line: 1 });
    await expectRefused(GOOD.replace('encoding="UTF-8"', "encoding='windows-1252'"), 'ERR_DIDL_ENCODING', {}, { line: 1 });
  });

  test('nesting deeper than maxDepth is ERR_DIDL_TOO_LARGE (default 100, and an option)', async () => {
    const deep = GOOD.replace('<didl:Item>', `<didl:Item>\n${'<x>'.repeat(10_000)}${'</x>'.repeat(10_000)}`);
    await expectRefused(deep, 'ERR_DIDL_TOO_LARGE', {}, { line: lineOf(deep, '<x>') });
    const shallow = GOOD.replace('<didl:Item>', `<didl:Item>\n${'<x>'.repeat(10)}${'</x>'.repeat(10)}`);
    assert.equal((await read(shallow)).error, undefined);
    await expectRefused(shallow, 'ERR_DIDL_TOO_LARGE', { maxDepth: 8 });
  });

  test('an attribute value over 64 KiB is refused, whatever the chunking', async () => {
    const input = GOOD.replace('<didl:Item>', `<didl:Item title="${'a'.repeat(100 * 1024)}">`);
    for (const chunk of [4096, 1 << 20]) {
      await expectRefused(input, ['ERR_DIDL_TOO_LARGE', 'ERR_DIDL_NOT_WELL_FORMED'], { chunk }, { line: lineOf(input, 'title=') });
    }
  });

  test('text or a kept Descriptor over maxMetadataChars is ERR_DIDL_TOO_LARGE, with its position', async () => {
    const page = oaiPage([didlDoc({ declaration: false })]).replace('2026-11-22T00:00:00Z</responseDate>', `${'9'.repeat(500)}</responseDate>`);
    await expectRefused(page, 'ERR_DIDL_TOO_LARGE', { maxMetadataChars: 300 }, { line: 2 });
    const big = GOOD.replace(`${ID}</dii`, `${ID}?${'q'.repeat(500)}</dii`);
    await expectRefused(big, 'ERR_DIDL_TOO_LARGE', { maxMetadataChars: 300 }, { line: lineOf(big, 'qqq') });
  });
});

test("recordErrors 'report': of three records the bad middle one carries the error, the others are good", async () => {
  const payloads = [PAYLOAD, Buffer.from('second datastream'), Buffer.from('third')];
  const didls = payloads.map((payload, i) =>
    didlDoc({
      declaration: false,
      identifiers: [`http://example.org/${i + 1}`],
      ref: `http://example.org/${i + 1}`,
      base64: base64Lines(payload),
      digest: sha256(payload),
      contentLength: String(i === 1 ? payload.length + 10 : payload.length),
    }),
  );
  const page = oaiPage(didls);
  const outcome = await read(page, { recordErrors: 'report', chunk: 100 });
  assert.equal(outcome.error, undefined, 'readDidl rejected');
  assert.equal(outcome.summary!.kind, 'oai-pmh');
  assert.equal(outcome.summary!.records, 3);
  assert.equal(outcome.records.length, 3);
  const [first, middle, last] = outcome.records;
  assert.equal(first!.error, undefined);
  assert.equal(last!.error, undefined);
  assertDidlError(middle!.error, 'ERR_DIDL_LENGTH_MISMATCH', { line: lineOf(page, '</record>', page.indexOf('http://example.org/2')) });
  assert.equal(middle!.error.expected, payloads[1]!.length + 10);
  assert.equal(middle!.error.found, payloads[1]!.length);
  assert.deepEqual(
    outcome.records.map((record) => [record.header!.identifier, record.didl!.identifier]),
    [1, 2, 3].map((n) => [`oai:example.org:${n}`, `http://example.org/${n}`]),
  );
  assert.deepEqual(
    outcome.streams.map((seen) => seen.bytes),
    payloads,
  );
  assert.equal(outcome.summary!.page.resumptionToken?.completeListSize, 3);
});

describe("the caller's handlers", () => {
  test('an onDatastream handler that throws rejects the read with that very error', async () => {
    const boom = new Error('consumer failed');
    const before = await read(GOOD, {
      onDatastream: () => {
        throw boom;
      },
    });
    assert.equal(before.error, boom);
    const during = await read(GOOD, {
      onDatastream: async ({ bytes }) => {
        for await (const _ of bytes) throw boom;
      },
    });
    assert.equal(during.error, boom);
    const onRecord = await read(GOOD, { onRecord: async () => Promise.reject(boom) });
    assert.equal(onRecord.error, boom);
  });

  // IncomingDatastream documents `bytes.resume()` as the way to discard a datastream.
  for (const [name, input] of [
    ['bad base64', didlDoc({ base64: `${base64Lines(PAYLOAD)}\n!` })],
    ['truncation', GOOD.slice(0, GOOD.indexOf('</didl:Resource>') - 40)],
  ] as const) {
    test(`a consumer that discards its stream with resume() gets no uncaught error on ${name}`, async () => {
      const uncaught: unknown[] = [];
      const listener = (error: unknown) => void uncaught.push(error);
      process.on('uncaughtException', listener);
      try {
        const code: DidlErrorCode = name === 'truncation' ? 'ERR_DIDL_TRUNCATED' : 'ERR_DIDL_BAD_BASE64';
        await expectRefused(input, code, { onDatastream: ({ bytes }) => void bytes.resume() });
        await new Promise((resolve) => setTimeout(resolve, 50));
        assert.deepEqual(uncaught.map(String), [], "the stream was destroyed with an 'error' event nobody listens to (a crash outside a test)");
      } finally {
        process.off('uncaughtException', listener);
      }
    });
  }
});

function writerInput(overrides: Partial<DidlWriteInput> = {}, component: Partial<DidlWriteInput['components'][number]> = {}): DidlWriteInput {
  return {
    identifier: ID,
    headers: [{ name: 'Content-Type', value: 'text/plain' }],
    components: [{ mimeType: 'text/plain', ref: ID, ...component }],
    ...overrides,
  };
}

/** The writer refuses `value` before writing anything: no half document ever leaves it. */
async function expectWriterRefuses(value: DidlWriteInput, code: DidlErrorCode): Promise<void> {
  const parts: string[] = [];
  let error: unknown;
  try {
    await guard(
      (async () => {
        for await (const part of writeDidl(value)) parts.push(part);
      })(),
      'writeDidl',
    );
  } catch (caught) {
    error = caught;
  }
  assertDidlError(error, code, { position: false });
  assert.deepEqual(parts, [], 'the writer yielded output before refusing');
}

async function written(value: DidlWriteInput): Promise<string> {
  let xml = '';
  for await (const part of writeDidl(value)) xml += part;
  return xml;
}

describe('writeDidl refuses what XML or the profile cannot carry', () => {
  const forbidden: Array<[string, string]> = [
    ['U+0000', '\u0000'],
    ['U+0001', '\u0001'],
    ['U+FFFE', '\uFFFE'],
    ['a lone high surrogate', '\uD800'],
    ['a lone low surrogate', '\uDC00'],
    ['surrogates in the wrong order', '\uDC00\uD800'],
  ];
  for (const [name, char] of forbidden) {
    test(`${name} in the identifier or a header value is ERR_DIDL_XML_CHAR`, async () => {
      await expectWriterRefuses(writerInput({ identifier: `${ID}?q=${char}x` }), 'ERR_DIDL_XML_CHAR');
      await expectWriterRefuses(writerInput({ headers: [{ name: 'X-Note', value: `a${char}b` }] }), 'ERR_DIDL_XML_CHAR');
      await expectWriterRefuses(writerInput({}, { headers: [{ name: 'Content-Length', value: `1${char}` }] }), 'ERR_DIDL_XML_CHAR');
    });
  }

  test('a header name with a space or a colon (or empty) is ERR_DIDL_BAD_HEADER', async () => {
    for (const name of ['X Bad', 'X:Bad', 'Content-Type:', '', 'X-\u00e9']) {
      await expectWriterRefuses(writerInput({ headers: [{ name, value: 'v' }] }), 'ERR_DIDL_BAD_HEADER');
    }
  });

  test('a ref with scheme file: (or any other than http/https) is ERR_DIDL_BAD_REF', async () => {
    for (const ref of ['file:///etc/passwd', 'ftp://example.org/x', 'javascript:alert(1)', 'notes.txt']) {
      await expectWriterRefuses(writerInput({}, { ref }), 'ERR_DIDL_BAD_REF');
    }
  });
});

test('legal values that need escaping come back exactly through writeDidl -> readDidl', async () => {
  // &, <, >, quotes, CR, tab, LF, "]]>", emoji, right-to-left text (with bidi controls), the last code point.
  const tricky =
    'a&b<c>d"e\'f ]]> g\th\ri\r\nj \u{1F600}\u{1F468}\u200D\u{1F469} \u05E9\u05DC\u05D5\u05DD \u0627\u0644\u0639\u0631\u0628\u064A\u0629 \u202Eevil\u202C \u{10FFFF}.';
  const payload = Buffer.from(tricky, 'utf8');
  const value: DidlWriteInput = {
    identifier: `http://example.org/${tricky}`,
    documentId: `doc ${tricky}\n`,
    headers: [
      { name: 'Content-Type', value: `text/plain; title="${tricky}"` },
      { name: 'Content-Length', value: String(payload.length) },
      { name: "X-Odd!#$%&'*+^`|~", value: tricky },
    ],
    components: [
      {
        mimeType: 'text/plain; charset="utf-8";\ta=<b>&c\r\n',
        ref: 'http://example.org/q?a=1&b="2"&c=<3>',
        digest: { algorithm: 'SHA-256', value: sha256(payload) },
        headers: [{ name: 'X-Component', value: tricky }],
        byValue: Readable.from([payload]),
      },
    ],
  };
  const xml = await written(value);
  assert.ok(!xml.includes(']]>'), 'a literal "]]>" was written');
  const outcome = await read(xml, { chunk: 5 });
  assert.equal(outcome.error, undefined, String(outcome.error));
  const didl = outcome.records[0]!.didl!;
  assert.equal(didl.identifier, value.identifier);
  assert.equal(didl.documentId, value.documentId);
  assert.deepEqual(didl.item.headers, value.headers);
  const component = didl.item.components[0]!;
  assert.deepEqual(component.headers, [{ name: 'X-Component', value: tricky }]);
  assert.equal(component.resources[0]!.mimeType, value.components[0]!.mimeType);
  assert.equal(component.resources[0]!.ref, value.components[0]!.ref);
  assert.equal(component.resources[1]!.mimeType, value.components[0]!.mimeType);
  assert.ok(outcome.streams[0]!.bytes.equals(payload));
  assert.equal(component.resources[1]!.byValue!.sha256, sha256(payload));
});

test('fuzz: 300 seeded mutations of a By-Value document each read as good or refused with a DidlError, never hang', async (t) => {
  const original = Buffer.from(
    didlDoc({
      base64: PAYLOAD.subarray(0, 120)
        .toString('base64')
        .replace(/(.{40})/g, '$1\n'),
      contentLength: '120',
      digest: sha256(PAYLOAD.subarray(0, 120)),
    }),
  );
  const random = prng(0x0a1bad);
  const pick = (n: number) => Math.floor(random() * n);
  const outcomes = new Map<string, number>();
  const started = Date.now();
  for (let round = 0; round < 300; round++) {
    let bytes = Buffer.from(original);
    const steps: string[] = [];
    for (let edits = 1 + pick(3); edits > 0; edits--) {
      const at = pick(bytes.length + 1);
      switch (pick(4)) {
        case 0:
          if (at < bytes.length) bytes[at] = bytes[at]! ^ (1 + pick(255));
          steps.push(`flip@${at}`);
          break;
        case 1:
          bytes = Buffer.concat([bytes.subarray(0, at), bytes.subarray(at + 1)]);
          steps.push(`delete@${at}`);
          break;
        case 2: {
          const inserted = '<&='[pick(3)]!;
          bytes = Buffer.concat([bytes.subarray(0, at), Buffer.from(inserted), bytes.subarray(at)]);
          steps.push(`insert ${inserted}@${at}`);
          break;
        }
        default:
          if (random() < 0.5) {
            bytes = bytes.subarray(0, at);
            steps.push(`truncate@${at}`);
          }
      }
    }
    const label = `round ${round} (${steps.join(', ')})`;
    const chunk = [1, 3, 64, 1 << 20][pick(4)]!;
    const outcome = await read(bytes, { chunk, recordErrors: random() < 0.5 ? 'throw' : 'report' });
    // The contract checked here is the brief one (a DidlError or success, no hang); one-line
    // messages are checked by the deterministic tests above (this seed hits a CR in a digest).
    if (outcome.error !== undefined) {
      assert.ok(outcome.error instanceof DidlError, `${label}: rejected with ${String(outcome.error)}`);
      assert.ok(typeof outcome.error.code === 'string' && outcome.error.code.startsWith('ERR_DIDL_'), label);
      assert.ok(outcome.error.position || bytes.length === 0, `${label}: ${outcome.error.code} without a position`);
    }
    for (const record of outcome.records) if (record.error) assert.ok(record.error instanceof DidlError && record.error.position, label);
    for (const seen of outcome.streams) {
      if (!seen.clean) assert.ok(seen.error instanceof DidlError, `${label}: a consumer saw ${String(seen.error)}`);
    }
    const key = outcome.error instanceof DidlError ? outcome.error.code : outcome.records.some((r) => r.error) ? 'reported' : 'read';
    outcomes.set(key, (outcomes.get(key) ?? 0) + 1);
  }
  const elapsed = Date.now() - started;
  t.diagnostic(`outcomes: ${JSON.stringify(Object.fromEntries(outcomes))} in ${elapsed} ms`);
  assert.ok(elapsed < 30_000, `300 reads took ${elapsed} ms`);
  assert.ok(outcomes.size >= 3, 'the mutations hardly varied the outcome');
});

test('megabytes of whitespace in a value cost linear time, not quadratic (no regular-expression blow-up)', () => {
  // A quadratic pattern blocks the event loop, where no timer can fire: run the read in a
  // child process that a timeout can kill.
  const script = `
    import { readDidl } from ${JSON.stringify(new URL('../dist/index.js', import.meta.url).href)};
    const ws = ' '.repeat(2_000_000) + 'x';
    const doc = '<didl:DIDL xmlns:didl="urn:mpeg:mpeg21:2002:02-DIDL-NS" xmlns:dii="urn:mpeg:mpeg21:2002:01-DII-NS" xmlns:http="http://www.openarchives.org/OAI/2.0/http_header/">' +
      '<didl:Item><didl:Descriptor><didl:Statement mimeType="a"><dii:Identifier>http://x/' + ws + '</dii:Identifier></didl:Statement></didl:Descriptor>' +
      '<didl:Descriptor><didl:Statement mimeType="a"><http:header><http:Content-Length>' + ws + '</http:Content-Length></http:header></didl:Statement></didl:Descriptor>' +
      '<didl:Component><didl:Resource mimeType="a" encoding="base64">QQ==</didl:Resource></didl:Component></didl:Item></didl:DIDL>';
    try { await readDidl([Buffer.from(doc)]); console.log('read'); } catch (error) { console.log(error.code, error.message.length); }
  `;
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000 });
  assert.equal(run.signal, null, 'the read was killed after 60 s: superlinear time');
  assert.equal(run.status, 0, run.stderr);
  const [code, length] = run.stdout.trim().split(' ');
  assert.equal(code, 'ERR_DIDL_BAD_HEADER');
  assert.ok(Number(length) <= 1010, `message of ${length} characters`);
});
