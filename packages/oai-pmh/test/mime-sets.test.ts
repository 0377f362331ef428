// The MIME sets as data: the spelling itself is tested through oaibag-repository's
// set-spec.test.ts, which uses these functions.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mimeSetSelection, mimeSetSpec } from '../src/index.ts';

test('mimeSetSpec: null for what is not type/subtype', () => {
  assert.equal(mimeSetSpec('Text/HTML; charset=utf-8'), 'mime:text:html');
  assert.equal(mimeSetSpec('nonsense'), null);
  assert.equal(mimeSetSpec('/x'), null);
});

test('mimeSetSelection: the root, a major type, one type; nothing for other spellings', () => {
  assert.deepEqual(mimeSetSelection('mime'), {});
  assert.deepEqual(mimeSetSelection('mime:image'), { type: 'image' });
  assert.deepEqual(mimeSetSelection('mime:image:svg~2Bxml'), { type: 'image', subtype: 'svg+xml' });
  assert.deepEqual(mimeSetSelection(mimeSetSpec('application/ld+json')!), { type: 'application', subtype: 'ld+json' });
  for (const other of ['source:1', 'mime:Image', 'mime:image:svg~2bxml', 'mime:image:jpeg:x', 'mimes', 'mime:']) {
    assert.equal(mimeSetSelection(other), null, other);
  }
});
