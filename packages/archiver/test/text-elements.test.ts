/**
 * The lenient element search of Identify and ListMetadataFormats answers: it finds what the
 * regular expressions it replaced found (compared on seeded random texts), and reads the 1 MiB
 * answers that took those expressions minutes (issue 24). No timing here (bench/hostile-parse.mjs
 * has it): a quadratic search of these would outlast the test runner.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { elementBlocks, textElements } from '../src/oai/text-elements.ts';

const MiB = 1024 * 1024;

/** What identify.ts used before: the expressions whose matches the new search must reproduce. */
function oldTextElements(xml: string, name: string): string[] {
  const pattern = new RegExp(`<(?:[A-Za-z_][\\w.-]*:)?${name}(?:\\s[^>]*)?>([^<]*)</(?:[A-Za-z_][\\w.-]*:)?${name}>`, 'g');
  return [...xml.matchAll(pattern)].map((match) => unescapeXml(match[1]!.trim()));
}

function oldBlocks(xml: string, name: string): string[] {
  const pattern = new RegExp(`<(?:[A-Za-z_][\\w.-]*:)?${name}[\\s>][\\s\\S]*?</(?:[A-Za-z_][\\w.-]*:)?${name}>`, 'g');
  return [...xml.matchAll(pattern)].map((match) => match[0]);
}

function unescapeXml(text: string): string {
  return text
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&amp;/g, '&');
}

/** A seeded generator (mulberry32): a failure replays. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const PIECES = [
  '<name>',
  '</name>',
  '<p:name ',
  '</a.b-c:name>',
  '<1:name>',
  '</names>',
  '<name',
  'name>',
  '<',
  '</',
  '>',
  ' a="1"',
  ' ',
  '\n',
  '\u00a0',
  '\u3000',
  '\t',
  'x',
  '&amp;',
  '&lt;',
  ':',
  '<other>',
  '</other>',
];

describe('the same matches as the expressions it replaced', () => {
  test('on 20,000 seeded random texts of names, prefixes and brackets', () => {
    const next = random(24);
    for (let round = 0; round < 20_000; round++) {
      let xml = '';
      const length = 1 + Math.floor(next() * 40);
      for (let k = 0; k < length; k++) xml += PIECES[Math.floor(next() * PIECES.length)];
      assert.deepEqual(textElements(xml, 'name'), oldTextElements(xml, 'name'), JSON.stringify(xml));
      assert.deepEqual(elementBlocks(xml, 'name'), oldBlocks(xml, 'name'), JSON.stringify(xml));
    }
  });

  test('on a ListMetadataFormats answer', () => {
    const formats =
      '<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/"><ListMetadataFormats>' +
      '<metadataFormat><metadataPrefix>oai_dc</metadataPrefix><metadataNamespace>http://www.openarchives.org/OAI/2.0/oai_dc/</metadataNamespace></metadataFormat>' +
      '<oai:metadataFormat xmlns:oai="http://www.openarchives.org/OAI/2.0/"><oai:metadataPrefix> didl </oai:metadataPrefix>' +
      '<metadataNamespace>urn:mpeg:mpeg21:2002:02-DIDL-NS</metadataNamespace></oai:metadataFormat></ListMetadataFormats></OAI-PMH>';
    assert.deepEqual(textElements(formats, 'metadataPrefix'), ['oai_dc', 'didl']);
    assert.equal(elementBlocks(formats, 'metadataFormat').length, 2);
    for (const name of ['metadataPrefix', 'metadataNamespace']) assert.deepEqual(textElements(formats, name), oldTextElements(formats, name));
  });
});

describe('1 MiB answers shaped to be slow are read in one pass', () => {
  test("1 MiB of '<granularity ' with no '>' after them, then an element that does match", () => {
    const xml = `${'<granularity '.repeat(MiB / 13)}<granularity>YYYY-MM-DD</granularity>`;
    assert.deepEqual(textElements(xml, 'granularity'), ['YYYY-MM-DD']);
  });

  test("1 MiB of '<granularity ' before one '>', then text and an end tag of another name", () => {
    const xml = `${'<granularity '.repeat(MiB / 26)}>${'x'.repeat(MiB / 2)}</${'p'.repeat(MiB / 4)}:other>`;
    assert.deepEqual(textElements(xml, 'granularity'), []);
  });

  test("1 MiB of '<metadataFormat>' never closed, then one that is", () => {
    const xml = `${'<metadataFormat>'.repeat(MiB / 16)}</x><metadataFormat> <metadataPrefix>p</metadataPrefix></metadataFormat>`;
    const blocks = elementBlocks(xml, 'metadataFormat');
    assert.equal(blocks.length, 1, 'the first one reaches the only end tag');
    assert.ok(blocks[0]!.endsWith('<metadataPrefix>p</metadataPrefix></metadataFormat>'));
    assert.deepEqual(elementBlocks(`${'<metadataFormat>'.repeat(MiB / 16)}`, 'metadataFormat'), []);
  });

  test("1 MiB of '</' each with a long prefix-like run, behind one start tag", () => {
    const xml = `<metadataPrefix>x${`</${'a'.repeat(1000)}`.repeat(MiB / 1002)}`;
    assert.deepEqual(textElements(xml, 'metadataPrefix'), []);
    assert.deepEqual(elementBlocks(xml, 'metadataPrefix'), []);
  });

  test('one element of 1 MiB of text, and 1 MiB of tiny ones', () => {
    assert.deepEqual(textElements(`<repositoryName>${'r'.repeat(MiB)}</repositoryName>`, 'repositoryName'), ['r'.repeat(MiB)]);
    assert.equal(textElements('<compression>gzip</compression>'.repeat(MiB / 32), 'compression').length, MiB / 32);
  });
});
