/**
 * The XML tokenizer on its own: what it hands over (namespaces, normalised attribute values,
 * expanded references, CDATA, comments), that the way the input is cut into writes changes
 * nothing, and that what is not well-formed is refused with the place it was found.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DEFAULT_MAX_ATTRIBUTES, DEFAULT_MAX_DEPTH, XML_NAMESPACE, type XmlHandlers, XmlTokenizer, type XmlTokenizerOptions } from '../src/xml-tokenizer.ts';

/** Handlers that ignore everything but tags (given) and errors (thrown, unless given). */
function tagsOnly(tags: Pick<XmlHandlers, 'openTag'> & Partial<Pick<XmlHandlers, 'closeTag' | 'error'>>): XmlHandlers {
  return {
    closeTag() {},
    text() {},
    cdata() {},
    comment() {},
    doctype() {},
    processingInstruction() {},
    error(reason) {
      throw new Error(reason);
    },
    ...tags,
  };
}

class Refused extends Error {
  constructor(
    readonly reason: string,
    readonly tooLarge: boolean,
    readonly line: number,
    readonly column: number,
  ) {
    super(reason);
  }
}

/** Every event as a line of text, text pieces joined; `writes` cuts the input. */
function tokenize(writes: readonly string[]): string[] {
  const events: string[] = [];
  let text = '';
  const flush = (): void => {
    if (text) events.push(`text ${JSON.stringify(text)}`);
    text = '';
  };
  const tokenizer: XmlTokenizer = new XmlTokenizer({
    openTag(tag) {
      flush();
      const attributes = Object.values(tag.attributes).map((a) => `${a.name}={${a.uri}}${a.local}=${JSON.stringify(a.value)}`);
      events.push(`open {${tag.uri}}${tag.local} ${tag.name}${tag.isSelfClosing ? ' /' : ''} [${attributes.join(' ')}]`);
    },
    closeTag(name) {
      flush();
      events.push(`close ${name}`);
    },
    text(value) {
      text += value;
    },
    cdata(value) {
      text += value;
    },
    comment(value) {
      flush();
      events.push(`comment ${JSON.stringify(value)}`);
    },
    doctype() {
      throw new Refused('doctype', false, tokenizer.line + 1, tokenizer.column + 1);
    },
    processingInstruction(target, body) {
      flush();
      events.push(`pi ${target} ${JSON.stringify(body)}`);
    },
    error(reason, tooLarge) {
      throw new Refused(reason, tooLarge, tokenizer.line + 1, tokenizer.column + 1);
    },
  });
  for (const piece of writes) tokenizer.write(piece);
  tokenizer.end();
  flush();
  return events;
}

function refusal(writes: readonly string[]): Refused {
  try {
    tokenize(writes);
  } catch (error) {
    if (error instanceof Refused) return error;
    throw error;
  }
  assert.fail(`accepted: ${writes.join('')}`);
}

const DOCUMENT = [
  '<?xml version="1.0" encoding="UTF-8"?>\r\n',
  '<!-- a comment -->\n',
  '<r:root xmlns:r="urn:r" xmlns="urn:default" a="1\t2\r\n3" b=\'&#10;&amp;&lt;&#x1F600;\'>\n',
  '  <child r:x="y" plain="&quot;q&apos;"/>\r',
  '  <r:leaf>caf\u00e9 &gt; <![CDATA[<not markup> & ]]]]></r:leaf>\n',
  '  <inner xmlns="">no namespace<?pi some data?></inner>\n',
  '  <x:y xmlns:x="urn:x" xml:lang="en"/>\n',
  '</r:root>\n',
].join('');

describe('what the tokenizer hands over', () => {
  test('namespaces, normalised attribute values, references, CDATA, comments and PIs', () => {
    assert.deepEqual(tokenize([DOCUMENT]), [
      'pi xml "version=\\"1.0\\" encoding=\\"UTF-8\\""',
      'comment " a comment "',
      'open {urn:r}root r:root [xmlns:r={http://www.w3.org/2000/xmlns/}r="urn:r" xmlns={http://www.w3.org/2000/xmlns/}="urn:default" a={}a="1 2 3" b={}b="\\n&<😀"]',
      'text "\\n  "',
      'open {urn:default}child child / [r:x={urn:r}x="y" plain={}plain="\\"q\'"]',
      'close child',
      'text "\\n  "',
      'open {urn:r}leaf r:leaf []',
      'text "café > <not markup> & ]]"',
      'close r:leaf',
      'text "\\n  "',
      'open {}inner inner [xmlns={http://www.w3.org/2000/xmlns/}=""]',
      'text "no namespace"',
      'pi pi "some data"',
      'close inner',
      'text "\\n  "',
      `open {urn:x}y x:y / [xmlns:x={http://www.w3.org/2000/xmlns/}x="urn:x" xml:lang={${XML_NAMESPACE}}lang="en"]`,
      'close x:y',
      'text "\\n"',
      'close r:root',
    ]);
  });

  test('cut into two writes at every place, or a character at a time, the events are the same', () => {
    const whole = tokenize([DOCUMENT]);
    for (let cut = 1; cut < DOCUMENT.length; cut++) {
      assert.deepEqual(tokenize([DOCUMENT.slice(0, cut), DOCUMENT.slice(cut)]), whole, `cut at ${cut}`);
    }
    assert.deepEqual(tokenize([...DOCUMENT]), whole);
  });

  test('a tag inherits the bindings of its parent and sees its own first', () => {
    const seen: Array<Record<string, string>> = [];
    const tokenizer = new XmlTokenizer(tagsOnly({ openTag: (tag) => seen.push(tag.ns) }));
    tokenizer.write('<a xmlns:p="urn:1"><b xmlns:p="urn:2" xmlns:q="urn:3"/><c/></a>');
    tokenizer.end();
    const [a, b, c] = seen as [Record<string, string>, Record<string, string>, Record<string, string>];
    assert.equal(a.p, 'urn:1');
    assert.equal(b.p, 'urn:2');
    assert.equal(b.q, 'urn:3');
    assert.equal(c, a, 'a tag that declares nothing shares its parent bindings');
    const inherited: string[] = [];
    for (const prefix in b) inherited.push(prefix);
    assert.ok(inherited.includes('xml') && inherited.includes('p') && inherited.includes('q'));
  });

  test('line and column of the end of each construct', () => {
    const places: string[] = [];
    const tokenizer: XmlTokenizer = new XmlTokenizer(
      tagsOnly({
        openTag: (tag) => places.push(`${tag.name}@${tokenizer.line + 1}:${tokenizer.column + 1}`),
        closeTag: (name) => places.push(`/${name}@${tokenizer.line + 1}:${tokenizer.column + 1}`),
      }),
    );
    tokenizer.write('<a>\n  <b\n   x="1">\r\n</b></a>');
    tokenizer.end();
    assert.deepEqual(places, ['a@1:4', 'b@3:10', '/b@4:5', '/a@4:9']);
  });
});

describe('what is not well-formed', () => {
  const cases: Array<[string, string, number]> = [
    ['mismatched end tag', '<a>\n<b></c></a>', 2],
    ['an end tag with nothing open', '<a/>\n</a>', 2],
    ['an unquoted attribute value', '<a\nx=1/>', 2],
    ['an attribute without a value', '<a x/>', 1],
    ['no whitespace between attributes', '<a x="1"y="2"/>', 1],
    ['a duplicate attribute', '<a x="1" x="2"/>', 1],
    ['the same attribute under two prefixes of one namespace', '<a xmlns:p="urn:1" xmlns:q="urn:1" p:x="1" q:x="2"/>', 1],
    ["'<' in an attribute value", '<a x="<"/>', 1],
    ['an unbound element prefix', '<a>\n<p:b/></a>', 2],
    ['an unbound attribute prefix', '<a p:x="1"/>', 1],
    ['the xml prefix bound elsewhere', '<a xmlns:xml="urn:other"/>', 1],
    ['the xmlns prefix declared', '<a xmlns:xmlns="urn:other"/>', 1],
    ['a prefix bound to nothing', '<a xmlns:p=""/>', 1],
    ['a bare ampersand', '<a>\nfish & chips</a>', 2],
    ['an unknown entity', '<a>&nbsp;</a>', 1],
    ['a reference to U+0000', '<a>&#0;</a>', 1],
    ['a reference to a surrogate', '<a x="&#xD800;"/>', 1],
    ["']]>' in text", '<a>]]></a>', 1],
    ["'--' in a comment", '<a><!-- a -- b --></a>', 1],
    ['text before the root', 'text<a/>', 1],
    ['text after the root', '<a/>\n\ntext', 3],
    ['a second root', '<a/><b/>', 1],
    ['CDATA outside the root', '<![CDATA[x]]><a/>', 1],
    ['an unknown declaration', '<!ELEMENT a ANY><a/>', 1],
    ['a tag name that is not a name', '<1a/>', 1],
    ['an XML declaration after the root began', '<a><?xml version="1.0"?></a>', 1],
    ['an unclosed root', '<a><b></b>', 1],
    ['a document that ends inside a tag', '<a><b', 1],
    ['a document that ends inside CDATA', '<a><![CDATA[x', 1],
    ['no root at all', '<!-- nothing -->', 1],
  ];
  for (const [name, input, line] of cases) {
    test(name, () => {
      const whole = refusal([input]);
      assert.equal(whole.tooLarge, false);
      assert.equal(whole.line, line, whole.reason);
      // The same refusal however the input is cut.
      assert.equal(refusal([...input]).reason, whole.reason);
    });
  }

  test('a DOCTYPE is reported once complete, at its end, internal subset and all', () => {
    const input = '<!DOCTYPE a [\n  <!ENTITY e "x">\n]>\n<a>&e;</a>';
    for (const writes of [[input], [...input]]) {
      const refused = refusal(writes);
      assert.equal(refused.reason, 'doctype');
      assert.equal(refused.line, 3);
    }
  });

  test('a construct of more than 64 KiB is tooLarge, whatever the writes (one write included)', () => {
    const input = `<a x="${'v'.repeat(200 * 1024)}"/>`;
    for (const size of [1000, 4096, 65536, input.length]) {
      const writes: string[] = [];
      for (let i = 0; i < input.length; i += size) writes.push(input.slice(i, i + size));
      assert.equal(refusal(writes).tooLarge, true);
    }
  });

  test('a long text or CDATA section is handed over in pieces, never held whole', () => {
    const body = 'x'.repeat(200 * 1024);
    const writes: string[] = ['<a>'];
    for (let i = 0; i < body.length; i += 4096) writes.push(body.slice(i, i + 4096));
    writes.push('<![CDATA[');
    for (let i = 0; i < body.length; i += 4096) writes.push(body.slice(i, i + 4096));
    writes.push(']]></a>');
    assert.deepEqual(tokenize(writes), ['open {}a a []', `text "${body}${body}"`, 'close a']);
  });
});

/** Distinct attribute names: a0, a1, … */
function attributes(count: number, value = ''): string {
  let text = '';
  for (let n = 0; n < count; n++) text += ` a${n}="${value}"`;
  return text;
}

/** The input cut after every `>` (as the DIDL reader and scanXmlSpans write it) or every character. */
function cut(input: string, how: '>' | 'character'): string[] {
  if (how === 'character') return [...input];
  const writes: string[] = [];
  let from = 0;
  for (let gt = input.indexOf('>'); gt !== -1; gt = input.indexOf('>', from)) {
    writes.push(input.slice(from, gt + 1));
    from = gt + 1;
  }
  if (from < input.length) writes.push(input.slice(from));
  return writes;
}

function refusalWith(writes: readonly string[], options: XmlTokenizerOptions): { reason: string; tooLarge: boolean } {
  const tokenizer = new XmlTokenizer(
    tagsOnly({
      openTag() {},
      error(reason, tooLarge) {
        throw new Refused(reason, tooLarge, 0, 0);
      },
    }),
    options,
  );
  try {
    for (const piece of writes) tokenizer.write(piece);
    tokenizer.end();
  } catch (error) {
    if (error instanceof Refused) return error;
    throw error;
  }
  assert.fail('accepted');
}

// Issue 24: each of these took from seconds to hours when a construct cut by writes was read
// again from its start at each write, repeated attributes were searched for in a list, and
// prefixes were looked up through one prototype per declaring ancestor. No timing here (see
// bench/hostile-parse.mjs): a quadratic parse of these would outlast the test runner.
describe('what a source shapes to be slow is read in linear time, or refused', () => {
  test(`a start tag of ${DEFAULT_MAX_ATTRIBUTES} attributes is read, one more is tooLarge, a repeated last one is found`, () => {
    const most = `<a${attributes(DEFAULT_MAX_ATTRIBUTES)}/>`;
    const [open] = tokenize([most]);
    assert.equal(open?.split('="').length, DEFAULT_MAX_ATTRIBUTES + 1);
    const over = refusal([`<a${attributes(DEFAULT_MAX_ATTRIBUTES + 1)}/>`]);
    assert.deepEqual([over.tooLarge, over.reason], [true, `the start tag of a has more than ${DEFAULT_MAX_ATTRIBUTES} attributes`]);
    assert.equal(refusalWith([`<a${attributes(5001)}/>`], { maxAttributes: 5000 }).reason, 'the start tag of a has more than 5000 attributes');
    // Raised, a 64 KiB tag of ~8,000 attributes with a repeated last one: found with a Set.
    const wide = `<a${attributes(7800)} a1="again"/>`;
    assert.equal(refusalWith([wide], { maxAttributes: 10_000 }).reason, 'attribute a1 appears twice on a');
    const repeated = refusal([`<a${attributes(DEFAULT_MAX_ATTRIBUTES - 1)} a7="again"/>`]);
    assert.deepEqual([repeated.tooLarge, repeated.reason], [false, 'attribute a7 appears twice on a']);
  });

  test("a 60 KiB start tag with 50,000 '>' in its values, written up to each '>' or a character at a time, is read once", () => {
    const values = '>'.repeat(50);
    const input = `<r><a${attributes(1000, values)}/></r>`;
    const whole = tokenize([input]);
    assert.equal(whole[0], 'open {}r r []');
    assert.ok(whole[1]?.endsWith(`a999={}a999="${values}"]`));
    assert.deepEqual(tokenize(cut(input, '>')), whole);
    assert.deepEqual(tokenize(cut(input, 'character')), whole);
  });

  test('a 60 KiB comment, processing instruction and end tag written a character at a time are read once', () => {
    const body = '- '.repeat(30 * 1024);
    const input = `<r><!--${body}--><?p ${body.replace(/-/g, '?')}?></r${' '.repeat(60 * 1024)}>`;
    const whole = tokenize([input]);
    assert.deepEqual(whole, ['open {}r r []', `comment ${JSON.stringify(body)}`, `pi p ${JSON.stringify(body.replace(/-/g, '?'))}`, 'close r']);
    assert.deepEqual(tokenize(cut(input, 'character')), whole);
  });

  test('a DOCTYPE whose internal subset holds 10,000 declarations, a character at a time, is reported once whole', () => {
    const input = `<!DOCTYPE a [${'<!ENTITY e "x">'.repeat(4000)}]>\n<a/>`;
    assert.equal(refusal(cut(input, 'character')).reason, 'doctype');
    assert.equal(refusal(cut(input, '>')).reason, 'doctype');
  });

  test('a syntax error inside a construct held back for its end is still the one reported', () => {
    const input = `<a${attributes(100)} b=unquoted${attributes(100, '>')}/>`;
    const whole = refusal([input]);
    assert.match(whole.reason, /attribute b of a is not quoted/);
    for (const how of ['>', 'character'] as const) assert.deepEqual(refusal(cut(input, how)), whole);
  });

  test('one write of 200,000 tags and no line feed until its end: each place counted from the last, not searched to the end', () => {
    const places: string[] = [];
    const tokenizer: XmlTokenizer = new XmlTokenizer(
      tagsOnly({ openTag: (tag) => tag.name !== 'a' && places.push(`${tag.name}@${tokenizer.line + 1}:${tokenizer.column + 1}`) }),
    );
    tokenizer.write(`<r>${'<a/>'.repeat(200_000)}<b/>\n<c/>${'<a/>'.repeat(200_000)}\n\n<d/></r>`);
    tokenizer.end();
    assert.deepEqual(places, ['r@1:4', `b@1:${4 + 800_000 + 4}`, 'c@2:5', 'd@4:5']);
  });

  test(`elements nested deeper than ${DEFAULT_MAX_DEPTH} levels are tooLarge (and maxDepth sets the bound)`, () => {
    const nested = (depth: number): string => `${'<a>'.repeat(depth)}${'</a>'.repeat(depth)}`;
    assert.equal(tokenize([nested(DEFAULT_MAX_DEPTH)]).length, 2 * DEFAULT_MAX_DEPTH);
    const over = refusal([nested(DEFAULT_MAX_DEPTH + 1)]);
    assert.deepEqual([over.tooLarge, over.reason], [true, `elements are nested deeper than ${DEFAULT_MAX_DEPTH} levels`]);
    assert.equal(refusalWith([nested(11)], { maxDepth: 10 }).reason, 'elements are nested deeper than 10 levels');
  });

  test(`${DEFAULT_MAX_DEPTH - 2} nested elements each declaring a prefix, then 100,000 leaves: names resolved through a map`, () => {
    const depth = DEFAULT_MAX_DEPTH - 2;
    const seen = new Set<string>();
    let leaves = 0;
    let inherited: string | undefined;
    const tokenizer = new XmlTokenizer(
      tagsOnly({
        openTag(tag) {
          if (tag.local !== 'leaf') return;
          leaves++;
          seen.add(`{${tag.uri}}${tag.local} ${Object.values(tag.attributes).map((a) => `{${a.uri}}${a.local}`)}`);
          inherited ??= tag.ns.p;
        },
      }),
    );
    tokenizer.write(`<r xmlns="urn:d">${'<a xmlns:p="urn:p">'.repeat(depth)}`);
    for (let n = 0; n < 1000; n++) tokenizer.write('<leaf p:x="1"/><p:leaf/>'.repeat(50));
    tokenizer.write(`${'</a>'.repeat(depth)}<leaf/></r>`);
    tokenizer.end();
    assert.equal(leaves, 100_001);
    assert.deepEqual([...seen], ['{urn:d}leaf {urn:p}x', '{urn:p}leaf ', '{urn:d}leaf ']);
    assert.equal(inherited, 'urn:p', 'the ns object still inherits the bindings');
  });
});
