import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mimeTypeForPath } from '@oaibag/oai-pmh';
import { isRepositoryError } from '../src/core/errors.ts';
import { isValidSetSpec, mimeTypeForSetSpec, setNameFor, setSpecAncestors, setSpecForMimeType } from '../src/site/set-spec.ts';

/** The setSpecType pattern exactly as the OAI-PMH 2.0 schema writes it, anchored. */
const SCHEMA_PATTERN = /^([A-Za-z0-9\-_.!~*'()])+(:[A-Za-z0-9\-_.!~*'()]+)*$/;

const REAL_TYPES = [
  'text/html',
  'text/plain',
  'application/pdf',
  'image/png',
  'image/svg+xml',
  'application/vnd.ms-excel',
  'text/x-c++src',
  'application/ld+json',
  'application/x-www-form-urlencoded',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  'application/atom+xml',
  'application/octet-stream',
  'video/mp4',
  'audio/mpeg',
  'application/vnd.oasis.opendocument.text',
  "application/x-weird!*'()_.type",
  'application/x-tilde~name',
  'application/x-\u00e9t\u00e9',
];

test('setSpecForMimeType: lower case, parameters dropped, reserved characters as ~XX', () => {
  const table: [string, string][] = [
    ['text/html', 'mime:text:html'],
    ['Text/HTML; charset=utf-8', 'mime:text:html'],
    ['  image/PNG ;q=1', 'mime:image:png'],
    ['image/svg+xml', 'mime:image:svg~2Bxml'],
    ['text/x-c++src', 'mime:text:x-c~2B~2Bsrc'],
    ['application/vnd.ms-excel', 'mime:application:vnd.ms-excel'],
    ['application/x-tilde~name', 'mime:application:x-tilde~7Ename'],
    ['application/x-\u00e9', 'mime:application:x-~C3~A9'],
    ['application/a=b', 'mime:application:a~3Db'],
  ];
  for (const [mimeType, spec] of table) assert.equal(setSpecForMimeType(mimeType), spec, mimeType);
});

test('setSpecForMimeType refuses what is not type/subtype', () => {
  for (const bad of ['', 'text', 'text/', '/html', ' / ', '; charset=utf-8']) {
    assert.throws(
      () => setSpecForMimeType(bad),
      (error: unknown) => isRepositoryError(error) && error.code === 'ERR_REPO_OPTIONS' && error.message.includes(JSON.stringify(bad)),
      bad,
    );
  }
});

test('real MIME types round-trip and every spec they produce matches the schema pattern', () => {
  for (const mimeType of REAL_TYPES) {
    const spec = setSpecForMimeType(mimeType);
    assert.match(spec, SCHEMA_PATTERN, mimeType);
    assert.ok(isValidSetSpec(spec), mimeType);
    assert.equal(mimeTypeForSetSpec(spec), mimeType, mimeType);
    for (const ancestor of setSpecAncestors(spec)) assert.match(ancestor, SCHEMA_PATTERN, ancestor);
  }
});

test('every ASCII character and some beyond survive a round trip inside a subtype', () => {
  for (let code = 0x20; code < 0x7f; code++) {
    const char = String.fromCharCode(code);
    if (char === ';' || char === ' ') continue; // a parameter separator / trimmed whitespace, not part of a type
    const mimeType = `application/x${char}y`.toLowerCase();
    const spec = setSpecForMimeType(mimeType);
    assert.match(spec, SCHEMA_PATTERN, JSON.stringify(char));
    assert.equal(mimeTypeForSetSpec(spec), mimeType, JSON.stringify(char));
  }
  for (const subtype of ['\u65e5\u672c', '\u{1F600}', 'a/b', 'a b']) {
    const spec = setSpecForMimeType(`application/${subtype}`);
    assert.match(spec, SCHEMA_PATTERN, subtype);
    assert.equal(mimeTypeForSetSpec(spec), `application/${subtype}`, subtype);
  }
});

test('mimeTypeForSetSpec: null for other forms and non-canonical or bad escapes', () => {
  const refused: [string, string][] = [
    ['mime', 'the root'],
    ['mime:image', 'a type, not a leaf'],
    ['mime:image:png:x', 'too deep'],
    ['other:image:png', 'other hierarchy'],
    ['MIME:image:png', 'root in upper case'],
    ['mime:Image:png', 'upper-case type'],
    ['mime:image:PNG', 'upper-case subtype'],
    ['mime::png', 'empty type'],
    ['mime:image:', 'empty subtype'],
    ['mime:image:svg~2bxml', 'lower-case hex'],
    ['mime:image:svg~2', 'truncated escape'],
    ['mime:image:svg~', 'bare tilde'],
    ['mime:image:svg~G1', 'non-hex escape'],
    ['mime:image:~70ng', 'escape of a literal character'],
    ['mime:image:svg+xml', 'raw plus'],
    ['mime:image:~C3', 'truncated UTF-8'],
    ['mime:image:~FF', 'not UTF-8'],
    ['mime:image:~C0~AF', 'overlong UTF-8'],
    ['mime:image:png~3Bq~3D1', 'a parameter smuggled in'],
    ['mime:image:~20png', 'leading whitespace'],
    ['mime:image~2Fx:png', 'slash in the type'],
  ];
  for (const [spec, why] of refused) assert.equal(mimeTypeForSetSpec(spec), null, `${why}: ${spec}`);
});

test('setSpecAncestors lists the root, the type and the leaf', () => {
  assert.deepEqual(setSpecAncestors('mime:image:gif'), ['mime', 'mime:image', 'mime:image:gif']);
  assert.deepEqual(setSpecAncestors('mime:image'), ['mime', 'mime:image']);
  assert.deepEqual(setSpecAncestors('mime'), ['mime']);
  assert.deepEqual(setSpecAncestors(setSpecForMimeType('image/svg+xml')), ['mime', 'mime:image', 'mime:image:svg~2Bxml']);
  assert.deepEqual(setSpecAncestors('mime:image:svg+xml'), []);
  assert.deepEqual(setSpecAncestors(''), []);
});

test('setNameFor gives readable names', () => {
  assert.equal(setNameFor('mime'), 'Files by MIME type');
  assert.equal(setNameFor('mime:image'), 'MIME type image/*');
  assert.equal(setNameFor('mime:image:svg~2Bxml'), 'MIME type image/svg+xml');
  assert.equal(setNameFor('mime:text:x-c~2B~2Bsrc'), 'MIME type text/x-c++src');
  assert.equal(setNameFor('mime:x-~C3~A9'), 'MIME type x-\u00e9/*');
  assert.equal(setNameFor('mime:Image'), 'mime:Image');
  assert.equal(setNameFor('other'), 'other');
});

test('isValidSetSpec is the schema pattern, anchored, capped at 255 characters', () => {
  for (const valid of ['mime', 'mime:image:svg~2Bxml', "a-_.!~*'()Z9", 'a:b:c:d', 'x'.repeat(255)]) {
    assert.equal(isValidSetSpec(valid), true, valid);
  }
  for (const invalid of ['', ':', 'mime:', ':mime', 'mime::png', 'image/png', 'svg+xml', 'a b', 'caf\u00e9', 'x'.repeat(256), 'mime\n', ' mime']) {
    assert.equal(isValidSetSpec(invalid), false, JSON.stringify(invalid));
  }
});

test('every type mimeTypeForPath gives has a valid, reversible set spec', () => {
  for (const extension of ['html', 'css', 'js', 'json', 'xml', 'svg', 'docx', 'xlsx', 'odt', 'jsonld', 'epub', 'mp4', 'webp', 'c', 'wasm']) {
    const mimeType = mimeTypeForPath(`file.${extension}`);
    assert.notEqual(mimeType, 'application/octet-stream', extension);
    assert.equal(mimeType, mimeType.toLowerCase(), extension);
    assert.doesNotMatch(mimeType, /;/, extension);
    const spec = setSpecForMimeType(mimeType);
    assert.ok(isValidSetSpec(spec), spec);
    assert.equal(mimeTypeForSetSpec(spec), mimeType, extension);
  }
});
