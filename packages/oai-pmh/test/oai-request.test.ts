import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatDatestamp, MAX_OAI_SECONDS, MIN_OAI_SECONDS, parseOaiDate } from '../src/oai-date.ts';
import { OAI_ERROR_DESCRIPTIONS, type OaiErrorCode, oaiError, quoteInput } from '../src/oai-errors.ts';
import { isOaiRequestFailure, type OaiRequest, type OaiRequestFailure, parseOaiRequest } from '../src/oai-request.ts';

const context = { metadataPrefixes: ['oai_dc', 'http_header', 'oai_didl'] };

/** `'name=value'` strings to decoded pairs; the value is everything after the first `=`. */
function pairs(...items: string[]): Array<[string, string]> {
  return items.map((item) => {
    const at = item.indexOf('=');
    return [item.slice(0, at), item.slice(at + 1)];
  });
}

function parse(...items: string[]): OaiRequest | OaiRequestFailure {
  return parseOaiRequest(pairs(...items), context);
}

function failure(result: OaiRequest | OaiRequestFailure): OaiRequestFailure {
  assert.ok(isOaiRequestFailure(result), `expected errors, got ${JSON.stringify(result)}`);
  return result;
}

/** The specific part of each message, after the specification's description and ': '. */
function details(result: OaiRequestFailure, code: OaiErrorCode): string[] {
  const prefix = `${OAI_ERROR_DESCRIPTIONS[code].replace(/\.$/, '')}: `;
  return result.errors.map((error) => {
    assert.equal(error.code, code, error.message);
    assert.ok(error.message.startsWith(prefix), error.message);
    assert.doesNotMatch(error.message, /[\r\n]/);
    return error.message.slice(prefix.length);
  });
}

const utc = (text: string): number => Date.parse(text) / 1000;

// ---------------------------------------------------------------------------------------
// Error messages

test('every error message starts with the specification’s description of its condition', () => {
  const expected: Record<OaiErrorCode, string> = {
    badArgument:
      'The request includes illegal arguments, is missing required arguments, includes a repeated argument, or values for arguments have an illegal syntax.',
    badResumptionToken: 'The value of the resumptionToken argument is invalid or expired.',
    badVerb: 'Value of the verb argument is not a legal OAI-PMH verb, the verb argument is missing, or the verb argument is repeated.',
    cannotDisseminateFormat:
      'The metadata format identified by the value given for the metadataPrefix argument is not supported by the item or by the repository.',
    idDoesNotExist: 'The value of the identifier argument is unknown or illegal in this repository.',
    noRecordsMatch: 'The combination of the values of the from, until, set and metadataPrefix arguments results in an empty list.',
    noMetadataFormats: 'There are no metadata formats available for the specified item.',
    noSetHierarchy: 'The repository does not support sets.',
  };
  for (const [code, description] of Object.entries(expected) as Array<[OaiErrorCode, string]>) {
    assert.deepEqual(oaiError(code), { code, message: description });
  }
  assert.deepEqual(oaiError('badArgument', "the argument 'from' is repeated"), {
    code: 'badArgument',
    message:
      "The request includes illegal arguments, is missing required arguments, includes a repeated argument, or values for arguments have an illegal syntax: the argument 'from' is repeated",
  });
  assert.equal(
    oaiError('idDoesNotExist', 'no file has the URL x\r\ny').message,
    'The value of the identifier argument is unknown or illegal in this repository: no file has the URL x y',
  );
});

test('quoted input is cut after 100 characters and has its control characters escaped', () => {
  const table: Array<[string, string]> = [
    ['oai_dc', "'oai_dc'"],
    ['', "''"],
    ['a\nb\r\tc\u0000', "'a\\u000Ab\\u000D\\u0009c\\u0000'"],
    ["it's a \\ path", "'it\\'s a \\\\ path'"],
    ['\u007f\u0085\u2028\u2029\u202e\ufffe\uffff', "'\\u007F\\u0085\\u2028\\u2029\\u202E\\uFFFE\\uFFFF'"],
    ['lone \ud800 and \udc00', "'lone \\uD800 and \\uDC00'"],
    ['pair 😀 kept', "'pair 😀 kept'"],
    ['é'.repeat(100), `'${'é'.repeat(100)}'`],
    ['x'.repeat(101), `'${'x'.repeat(100)}…' (101 characters)`],
    ['😀'.repeat(150), `'${'😀'.repeat(100)}…' (150 characters)`],
  ];
  for (const [input, quoted] of table) assert.equal(quoteInput(input), quoted, JSON.stringify(input));
  const huge = quoteInput('\n'.repeat(1_000_000));
  assert.equal(huge, `'${'\\u000A'.repeat(100)}…' (1000000 characters)`);
});

// ---------------------------------------------------------------------------------------
// Dates

test('formatDatestamp writes YYYY-MM-DDThh:mm:ssZ in UTC', () => {
  const table: Array<[number, string]> = [
    [0, '1970-01-01T00:00:00Z'],
    [1_700_000_000, '2023-11-14T22:13:20Z'],
    [1_700_000_000.999, '2023-11-14T22:13:20Z'],
    [utc('2024-02-29T23:59:59Z'), '2024-02-29T23:59:59Z'],
    [MIN_OAI_SECONDS, '0001-01-01T00:00:00Z'],
    [MAX_OAI_SECONDS, '9999-12-31T23:59:59Z'],
    [-1, '1969-12-31T23:59:59Z'],
  ];
  for (const [seconds, text] of table) assert.equal(formatDatestamp(seconds), text, String(seconds));
  for (const bad of [MIN_OAI_SECONDS - 1, MAX_OAI_SECONDS + 1, Number.NaN, Infinity]) {
    assert.throws(() => formatDatestamp(bad), RangeError, String(bad));
  }
});

test('parseOaiDate accepts exactly the two forms and gives inclusive bounds', () => {
  const table: Array<[string, 'from' | 'until', number, 'day' | 'seconds']> = [
    ['2024-05-01', 'from', utc('2024-05-01T00:00:00Z'), 'day'],
    ['2024-05-01', 'until', utc('2024-05-01T23:59:59Z'), 'day'],
    ['2024-05-01T12:34:56Z', 'from', utc('2024-05-01T12:34:56Z'), 'seconds'],
    ['2024-05-01T12:34:56Z', 'until', utc('2024-05-01T12:34:56Z'), 'seconds'],
    ['2024-02-29', 'from', utc('2024-02-29T00:00:00Z'), 'day'],
    ['2000-02-29', 'until', utc('2000-02-29T23:59:59Z'), 'day'],
    ['1970-01-01T00:00:00Z', 'from', 0, 'seconds'],
    ['1969-12-31', 'from', -86_400, 'day'],
    ['0001-01-01', 'from', MIN_OAI_SECONDS, 'day'],
    ['0001-01-01T00:00:00Z', 'from', MIN_OAI_SECONDS, 'seconds'],
    ['9999-12-31', 'until', MAX_OAI_SECONDS, 'day'],
    ['9999-12-31T23:59:59Z', 'until', MAX_OAI_SECONDS, 'seconds'],
    ['2023-12-31T23:59:59Z', 'from', utc('2023-12-31T23:59:59Z'), 'seconds'],
  ];
  for (const [text, bound, seconds, granularity] of table) {
    assert.deepEqual(parseOaiDate(text, bound), { seconds, granularity }, `${bound}=${text}`);
  }
});

test('parseOaiDate refuses impossible dates and every other spelling', () => {
  const bad = [
    '',
    '2026-02-30',
    '2023-02-29',
    '1900-02-29',
    '2024-04-31',
    '2024-13-01',
    '2024-00-10',
    '2024-01-00',
    '2024-01-32',
    '0000-01-01',
    '0000-12-31T23:59:59Z',
    '10000-01-01',
    '-2024-01-01',
    '+2024-01-01',
    '2024-05-01T25:00:00Z',
    '2024-05-01T24:00:00Z',
    '2024-05-01T23:60:00Z',
    '2024-12-31T23:59:60Z',
    '2024-05-01t12:00:00Z',
    '2024-05-01T12:00:00z',
    '2024-05-01T12:00:00',
    '2024-05-01T12:00Z',
    '2024-05-01T12:00:00+00:00',
    '2024-05-01T12:00:00+02:00',
    '2024-05-01T12:00:00.5Z',
    '2024-05-01T12:00:00.000Z',
    '2024-05-01Z',
    '2024-05-01 12:00:00Z',
    ' 2024-05-01',
    '2024-05-01 ',
    '2024-05-01\n',
    '2024-5-1',
    '24-05-01',
    '2024/05/01',
    '20240501',
    '２０２４-05-01',
    '٢٠٢٤-05-01',
    '2024-05-01T',
    'yesterday',
  ];
  for (const text of bad) {
    assert.equal(parseOaiDate(text, 'from'), null, JSON.stringify(text));
    assert.equal(parseOaiDate(text, 'until'), null, JSON.stringify(text));
  }
});

test('parseOaiDate agrees with formatDatestamp on every day from 1600 to 2400 and across the whole range', () => {
  for (let day = -135_140; day <= 157_060; day++) {
    const seconds = day * 86_400;
    const text = formatDatestamp(seconds).slice(0, 10);
    assert.deepEqual(parseOaiDate(text, 'from'), { seconds, granularity: 'day' }, text);
  }
  for (let seconds = MIN_OAI_SECONDS; seconds <= MAX_OAI_SECONDS; seconds += 7_777_777_777) {
    assert.equal(parseOaiDate(formatDatestamp(seconds), 'from')?.seconds, seconds);
  }
});

// ---------------------------------------------------------------------------------------
// Legal requests

test('the legal forms of every verb', () => {
  const day = (text: string, bound: 'from' | 'until') => ({ ...parseOaiDate(text, bound)!, text });
  const table: Array<[string[], OaiRequest]> = [
    [['verb=Identify'], { verb: 'Identify', args: { verb: 'Identify' } }],
    [['verb=ListMetadataFormats'], { verb: 'ListMetadataFormats', args: { verb: 'ListMetadataFormats' } }],
    [
      ['verb=ListMetadataFormats', 'identifier=http://example.org/a.html'],
      {
        verb: 'ListMetadataFormats',
        identifier: 'http://example.org/a.html',
        args: { verb: 'ListMetadataFormats', identifier: 'http://example.org/a.html' },
      },
    ],
    [['verb=ListSets'], { verb: 'ListSets', args: { verb: 'ListSets' } }],
    [['verb=ListSets', 'resumptionToken=abc'], { verb: 'ListSets', resumptionToken: 'abc', args: { verb: 'ListSets', resumptionToken: 'abc' } }],
    [
      ['identifier=http://example.org/a b.html?x=1&y=2', 'verb=GetRecord', 'metadataPrefix=oai_didl'],
      {
        verb: 'GetRecord',
        identifier: 'http://example.org/a b.html?x=1&y=2',
        metadataPrefix: 'oai_didl',
        args: { verb: 'GetRecord', identifier: 'http://example.org/a b.html?x=1&y=2', metadataPrefix: 'oai_didl' },
      },
    ],
    [['verb=ListRecords', 'metadataPrefix=oai_dc'], { verb: 'ListRecords', metadataPrefix: 'oai_dc', args: { verb: 'ListRecords', metadataPrefix: 'oai_dc' } }],
    [
      ['verb=ListIdentifiers', 'metadataPrefix=http_header', 'set=mime:image:svg~2Bxml'],
      {
        verb: 'ListIdentifiers',
        metadataPrefix: 'http_header',
        set: 'mime:image:svg~2Bxml',
        args: { verb: 'ListIdentifiers', metadataPrefix: 'http_header', set: 'mime:image:svg~2Bxml' },
      },
    ],
    [
      ['verb=ListRecords', 'from=2024-01-01', 'until=2024-01-31', 'metadataPrefix=oai_dc'],
      {
        verb: 'ListRecords',
        metadataPrefix: 'oai_dc',
        from: day('2024-01-01', 'from'),
        until: day('2024-01-31', 'until'),
        args: { verb: 'ListRecords', from: '2024-01-01', until: '2024-01-31', metadataPrefix: 'oai_dc' },
      },
    ],
    [
      ['verb=ListRecords', 'metadataPrefix=oai_dc', 'from=2024-01-01', 'until=2024-01-01'],
      {
        verb: 'ListRecords',
        metadataPrefix: 'oai_dc',
        from: { seconds: utc('2024-01-01T00:00:00Z'), granularity: 'day', text: '2024-01-01' },
        until: { seconds: utc('2024-01-01T23:59:59Z'), granularity: 'day', text: '2024-01-01' },
        args: { verb: 'ListRecords', metadataPrefix: 'oai_dc', from: '2024-01-01', until: '2024-01-01' },
      },
    ],
    [
      ['verb=ListIdentifiers', 'metadataPrefix=oai_dc', 'from=2024-01-01T10:00:00Z', 'until=2024-01-01T10:00:00Z'],
      {
        verb: 'ListIdentifiers',
        metadataPrefix: 'oai_dc',
        from: { seconds: utc('2024-01-01T10:00:00Z'), granularity: 'seconds', text: '2024-01-01T10:00:00Z' },
        until: { seconds: utc('2024-01-01T10:00:00Z'), granularity: 'seconds', text: '2024-01-01T10:00:00Z' },
        args: {
          verb: 'ListIdentifiers',
          metadataPrefix: 'oai_dc',
          from: '2024-01-01T10:00:00Z',
          until: '2024-01-01T10:00:00Z',
        },
      },
    ],
    [
      ['verb=ListIdentifiers', 'metadataPrefix=oai_dc', 'until=2024-01-01T10:00:00Z'],
      {
        verb: 'ListIdentifiers',
        metadataPrefix: 'oai_dc',
        until: { seconds: utc('2024-01-01T10:00:00Z'), granularity: 'seconds', text: '2024-01-01T10:00:00Z' },
        args: { verb: 'ListIdentifiers', metadataPrefix: 'oai_dc', until: '2024-01-01T10:00:00Z' },
      },
    ],
    [
      ['verb=ListRecords', 'resumptionToken=AQIDBA'],
      { verb: 'ListRecords', resumptionToken: 'AQIDBA', args: { verb: 'ListRecords', resumptionToken: 'AQIDBA' } },
    ],
    [
      ['resumptionToken=AQIDBA', 'verb=ListIdentifiers'],
      {
        verb: 'ListIdentifiers',
        resumptionToken: 'AQIDBA',
        args: { verb: 'ListIdentifiers', resumptionToken: 'AQIDBA' },
      },
    ],
    [
      ['verb=GetRecord', `identifier=${'😀'.repeat(4096)}`, 'metadataPrefix=oai_dc'],
      {
        verb: 'GetRecord',
        identifier: '😀'.repeat(4096),
        metadataPrefix: 'oai_dc',
        args: { verb: 'GetRecord', identifier: '😀'.repeat(4096), metadataPrefix: 'oai_dc' },
      },
    ],
    [
      ['verb=ListRecords', 'metadataPrefix=oai_dc', `set=${'a'.repeat(4096)}`],
      {
        verb: 'ListRecords',
        metadataPrefix: 'oai_dc',
        set: 'a'.repeat(4096),
        args: { verb: 'ListRecords', metadataPrefix: 'oai_dc', set: 'a'.repeat(4096) },
      },
    ],
  ];
  for (const [items, expected] of table) assert.deepEqual(parse(...items), expected, items.join('&'));
});

test('setSpec syntax of the schema: legal values', () => {
  for (const set of ['mime', 'mime:image', 'mime:image:svg~2Bxml', "a-_.!~*'()", 'A9:b8:c7', 'x:y:z:w']) {
    const result = parse('verb=ListRecords', 'metadataPrefix=oai_dc', `set=${set}`);
    assert.ok(!isOaiRequestFailure(result), set);
    assert.equal('set' in result ? result.set : undefined, set);
  }
});

// ---------------------------------------------------------------------------------------
// badVerb

test('badVerb: missing, repeated or unknown verb, and the arguments are not echoed', () => {
  const table: Array<[string[], string]> = [
    [[], 'the verb argument is missing'],
    [['metadataPrefix=oai_dc'], 'the verb argument is missing'],
    [['Verb=Identify'], 'the verb argument is missing'],
    [['verb=Identify', 'verb=Identify'], 'the verb argument is repeated (2 times)'],
    [['verb=ListSets', 'verb=Identify', 'verb=GetRecord'], 'the verb argument is repeated (3 times)'],
    [['verb=Frobnicate'], "'Frobnicate' is not a legal OAI-PMH verb"],
    [['verb=identify'], "'identify' is not a legal OAI-PMH verb"],
    [['verb=IDENTIFY'], "'IDENTIFY' is not a legal OAI-PMH verb"],
    [['verb='], "'' is not a legal OAI-PMH verb"],
    [['verb=Identify '], "'Identify ' is not a legal OAI-PMH verb"],
    [['verb=__proto__'], "'__proto__' is not a legal OAI-PMH verb"],
    [['verb=toString'], "'toString' is not a legal OAI-PMH verb"],
    [['verb=Get\nRecord'], "'Get\\u000ARecord' is not a legal OAI-PMH verb"],
    [[`verb=${'X'.repeat(5000)}`], `'${'X'.repeat(100)}…' (5000 characters) is not a legal OAI-PMH verb`],
    [['verb=Nope', 'from=junk', 'from=again'], "'Nope' is not a legal OAI-PMH verb"],
  ];
  for (const [items, detail] of table) {
    const result = failure(parse(...items));
    assert.equal(result.echo, false, items.join('&'));
    assert.equal('args' in result, false);
    assert.deepEqual(details(result, 'badVerb'), [detail], items.join('&'));
  }
});

// ---------------------------------------------------------------------------------------
// badArgument

test('badArgument: each rule, with its exact detail, and the arguments are not echoed', () => {
  const long = 'x'.repeat(4097);
  const table: Array<[string[], string[]]> = [
    // Illegal (unknown) arguments, for every verb.
    [['verb=Identify', 'identifier=http://example.org/'], ["the argument 'identifier' is not allowed with the verb Identify"]],
    [['verb=Identify', 'foo=bar'], ["the argument 'foo' is not allowed with the verb Identify"]],
    [['verb=Identify', '=bar'], ["the argument '' is not allowed with the verb Identify"]],
    [['verb=ListMetadataFormats', 'metadataPrefix=oai_dc'], ["the argument 'metadataPrefix' is not allowed with the verb ListMetadataFormats"]],
    [['verb=ListSets', 'set=mime'], ["the argument 'set' is not allowed with the verb ListSets"]],
    [
      ['verb=GetRecord', 'identifier=http://example.org/', 'metadataPrefix=oai_dc', 'from=2024-01-01'],
      ["the argument 'from' is not allowed with the verb GetRecord"],
    ],
    [['verb=ListRecords', 'metadataPrefix=oai_dc', 'identifier=http://example.org/'], ["the argument 'identifier' is not allowed with the verb ListRecords"]],
    [['verb=ListIdentifiers', 'metadataPrefix=oai_dc', 'From=2024-01-01'], ["the argument 'From' is not allowed with the verb ListIdentifiers"]],
    [
      ['verb=ListIdentifiers', 'metadataPrefix=oai_dc', 'bad\nname=1', 'bad\nname=2'],
      ["the argument 'bad\\u000Aname' is not allowed with the verb ListIdentifiers"],
    ],
    // Repeated arguments, also with the same value twice.
    [['verb=ListRecords', 'metadataPrefix=oai_dc', 'from=2024-01-01', 'from=2024-01-02'], ["the argument 'from' is repeated (2 times)"]],
    [['verb=ListRecords', 'metadataPrefix=oai_dc', 'metadataPrefix=oai_dc'], ["the argument 'metadataPrefix' is repeated (2 times)"]],
    [['verb=GetRecord', 'identifier=a:b', 'identifier=a:b', 'identifier=c:d', 'metadataPrefix=oai_dc'], ["the argument 'identifier' is repeated (3 times)"]],
    [['verb=ListSets', 'resumptionToken=a', 'resumptionToken=b'], ["the argument 'resumptionToken' is repeated (2 times)"]],
    // Missing required arguments.
    [['verb=GetRecord'], ["the required argument 'identifier' is missing", "the required argument 'metadataPrefix' is missing"]],
    [['verb=GetRecord', 'identifier=http://example.org/'], ["the required argument 'metadataPrefix' is missing"]],
    [['verb=GetRecord', 'metadataPrefix=oai_dc'], ["the required argument 'identifier' is missing"]],
    [['verb=ListRecords'], ["the required argument 'metadataPrefix' is missing"]],
    [['verb=ListIdentifiers', 'from=2024-01-01', 'set=mime'], ["the required argument 'metadataPrefix' is missing"]],
    // The exclusive resumptionToken combined with others.
    [
      ['verb=ListRecords', 'resumptionToken=abc', 'metadataPrefix=oai_dc'],
      ["the argument 'resumptionToken' is exclusive and cannot be combined with 'metadataPrefix'"],
    ],
    [
      ['verb=ListIdentifiers', 'metadataPrefix=oai_dc', 'from=2024-01-01', 'resumptionToken=abc'],
      ["the argument 'resumptionToken' is exclusive and cannot be combined with 'metadataPrefix', 'from'"],
    ],
    [['verb=ListIdentifiers', 'set=mime', 'resumptionToken=abc'], ["the argument 'resumptionToken' is exclusive and cannot be combined with 'set'"]],
    // Illegal dates.
    [
      ['verb=ListRecords', 'metadataPrefix=oai_dc', 'from=2026-02-30'],
      ["the value of 'from' is not a legal date of the form YYYY-MM-DD or YYYY-MM-DDThh:mm:ssZ: '2026-02-30'"],
    ],
    [
      ['verb=ListRecords', 'metadataPrefix=oai_dc', 'until=2024-01-01T25:00:00Z'],
      ["the value of 'until' is not a legal date of the form YYYY-MM-DD or YYYY-MM-DDThh:mm:ssZ: '2024-01-01T25:00:00Z'"],
    ],
    [
      ['verb=ListIdentifiers', 'metadataPrefix=oai_dc', 'from=2024-01-01T00:00:00+01:00'],
      ["the value of 'from' is not a legal date of the form YYYY-MM-DD or YYYY-MM-DDThh:mm:ssZ: '2024-01-01T00:00:00+01:00'"],
    ],
    [
      ['verb=ListIdentifiers', 'metadataPrefix=oai_dc', 'until=2024-01-01T00:00:00.000Z'],
      ["the value of 'until' is not a legal date of the form YYYY-MM-DD or YYYY-MM-DDThh:mm:ssZ: '2024-01-01T00:00:00.000Z'"],
    ],
    // Different granularities; from later than until.
    [
      ['verb=ListRecords', 'metadataPrefix=oai_dc', 'from=2024-01-01', 'until=2024-02-01T00:00:00Z'],
      ["the arguments 'from' ('2024-01-01') and 'until' ('2024-02-01T00:00:00Z') have different granularities"],
    ],
    [
      ['verb=ListRecords', 'metadataPrefix=oai_dc', 'from=2024-01-01T00:00:00Z', 'until=2024-02-01'],
      ["the arguments 'from' ('2024-01-01T00:00:00Z') and 'until' ('2024-02-01') have different granularities"],
    ],
    [
      ['verb=ListRecords', 'metadataPrefix=oai_dc', 'from=2024-01-02', 'until=2024-01-01'],
      ["the argument 'from' ('2024-01-02') is later than 'until' ('2024-01-01')"],
    ],
    [
      ['verb=ListIdentifiers', 'metadataPrefix=oai_dc', 'from=2024-01-01T10:00:01Z', 'until=2024-01-01T10:00:00Z'],
      ["the argument 'from' ('2024-01-01T10:00:01Z') is later than 'until' ('2024-01-01T10:00:00Z')"],
    ],
    // Empty values.
    [['verb=ListMetadataFormats', 'identifier='], ["the argument 'identifier' has an empty value"]],
    [['verb=ListRecords', 'metadataPrefix='], ["the argument 'metadataPrefix' has an empty value"]],
    [['verb=ListRecords', 'metadataPrefix=oai_dc', 'set='], ["the argument 'set' has an empty value"]],
    [['verb=ListRecords', 'metadataPrefix=oai_dc', 'from='], ["the argument 'from' has an empty value"]],
    [['verb=ListRecords', 'resumptionToken='], ["the argument 'resumptionToken' has an empty value"]],
    [['verb=ListSets', 'resumptionToken='], ["the argument 'resumptionToken' has an empty value"]],
    // Too long; control characters.
    [['verb=GetRecord', `identifier=${long}`, 'metadataPrefix=oai_dc'], ["the value of 'identifier' is 4097 characters long, more than the 4096 allowed"]],
    [
      ['verb=GetRecord', `identifier=${'😀'.repeat(4097)}`, 'metadataPrefix=oai_dc'],
      ["the value of 'identifier' is 4097 characters long, more than the 4096 allowed"],
    ],
    [
      ['verb=GetRecord', 'identifier=http://example.org/\u0000x', 'metadataPrefix=oai_dc'],
      ["the value of 'identifier' contains the character U+0000 at position 19, which is not allowed"],
    ],
    [['verb=ListMetadataFormats', 'identifier=a\nb'], ["the value of 'identifier' contains the character U+000A at position 1, which is not allowed"]],
    [['verb=ListMetadataFormats', 'identifier=\ta'], ["the value of 'identifier' contains the character U+0009 at position 0, which is not allowed"]],
    [['verb=ListMetadataFormats', 'identifier=a\u007f'], ["the value of 'identifier' contains the character U+007F at position 1, which is not allowed"]],
    [['verb=ListMetadataFormats', 'identifier=a\u0085'], ["the value of 'identifier' contains the character U+0085 at position 1, which is not allowed"]],
    [['verb=ListMetadataFormats', 'identifier=a\uffff'], ["the value of 'identifier' contains the character U+FFFF at position 1, which is not allowed"]],
    [['verb=ListMetadataFormats', 'identifier=a\ud800b'], ["the value of 'identifier' contains the character U+D800 at position 1, which is not allowed"]],
    [['verb=ListMetadataFormats', 'identifier=a\udc00'], ["the value of 'identifier' contains the character U+DC00 at position 1, which is not allowed"]],
    [['verb=ListRecords', 'resumptionToken=abc\r\n'], ["the value of 'resumptionToken' contains the character U+000D at position 3, which is not allowed"]],
    // setSpec and metadataPrefix syntax.
    ...['a::b', ':a', 'a:', 'mime/image', 'a b', 'a%20b', 'é', 'a;b'].map((set): [string[], string[]] => [
      ['verb=ListRecords', 'metadataPrefix=oai_dc', `set=${set}`],
      [`the value of 'set' is not a legal setSpec: ${quoteInput(set)}`],
    ]),
    [['verb=ListRecords', 'metadataPrefix=oai dc'], ["the value of 'metadataPrefix' is not a legal metadataPrefix: 'oai dc'"]],
    [['verb=GetRecord', 'identifier=x:y', 'metadataPrefix=oai:dc'], ["the value of 'metadataPrefix' is not a legal metadataPrefix: 'oai:dc'"]],
  ];
  for (const [items, expected] of table) {
    const name = JSON.stringify(items).slice(0, 200);
    const result = failure(parse(...items));
    assert.equal(result.echo, false, name);
    assert.equal('args' in result, false, name);
    assert.deepEqual(details(result, 'badArgument'), expected, name);
  }
});

test('badArgument: every problem is reported, in a stable order, one error each', () => {
  const result = failure(
    parse('verb=ListRecords', 'junk=1', 'from=2024-13-01', 'set=a::b', 'until=2024-01-01', 'until=2024-01-02', 'resumptionToken=abc', 'identifier='),
  );
  assert.equal(result.echo, false);
  assert.deepEqual(details(result, 'badArgument'), [
    "the argument 'junk' is not allowed with the verb ListRecords",
    "the argument 'until' is repeated (2 times)",
    "the argument 'identifier' is not allowed with the verb ListRecords",
    "the argument 'resumptionToken' is exclusive and cannot be combined with 'from', 'set', 'until'",
    "the value of 'from' is not a legal date of the form YYYY-MM-DD or YYYY-MM-DDThh:mm:ssZ: '2024-13-01'",
    "the value of 'set' is not a legal setSpec: 'a::b'",
  ]);
});

test('badArgument wins over an unsupported metadataPrefix', () => {
  const result = failure(parse('verb=ListRecords', 'metadataPrefix=marc21', 'from=2024-02-30'));
  assert.equal(result.echo, false);
  assert.deepEqual(details(result, 'badArgument'), ["the value of 'from' is not a legal date of the form YYYY-MM-DD or YYYY-MM-DDThh:mm:ssZ: '2024-02-30'"]);
});

// ---------------------------------------------------------------------------------------
// cannotDisseminateFormat

test('cannotDisseminateFormat for a metadataPrefix the repository does not have, with the arguments echoed', () => {
  const supported = "('oai_dc', 'http_header', 'oai_didl')";
  const table: Array<[string[], Record<string, string>, string]> = [
    [
      ['verb=GetRecord', 'identifier=http://example.org/a', 'metadataPrefix=marc21'],
      { verb: 'GetRecord', identifier: 'http://example.org/a', metadataPrefix: 'marc21' },
      `the metadataPrefix 'marc21' is not one this repository disseminates ${supported}`,
    ],
    [
      ['verb=ListRecords', 'metadataPrefix=OAI_DC', 'from=2024-01-01', 'set=mime'],
      { verb: 'ListRecords', metadataPrefix: 'OAI_DC', from: '2024-01-01', set: 'mime' },
      `the metadataPrefix 'OAI_DC' is not one this repository disseminates ${supported}`,
    ],
    [
      ['verb=ListIdentifiers', 'metadataPrefix=didl'],
      { verb: 'ListIdentifiers', metadataPrefix: 'didl' },
      `the metadataPrefix 'didl' is not one this repository disseminates ${supported}`,
    ],
  ];
  for (const [items, args, detail] of table) {
    const result = failure(parse(...items));
    assert.equal(result.echo, true, items.join('&'));
    assert.deepEqual(result.echo && result.args, args, items.join('&'));
    assert.deepEqual(details(result, 'cannotDisseminateFormat'), [detail], items.join('&'));
  }
  const none = failure(parseOaiRequest(pairs('verb=ListRecords', 'metadataPrefix=oai_dc'), { metadataPrefixes: [] }));
  assert.deepEqual(details(none, 'cannotDisseminateFormat'), ["the metadataPrefix 'oai_dc' is not one this repository disseminates (none)"]);
});

test('a resumptionToken is not judged here: any non-empty legal value passes to the caller', () => {
  for (const token of ['x', 'not base64 at all!', '%00', '../../etc/passwd']) {
    const result = parse('verb=ListIdentifiers', `resumptionToken=${token}`);
    assert.ok(!isOaiRequestFailure(result));
    assert.equal(result.verb === 'ListIdentifiers' ? result.resumptionToken : undefined, token);
  }
});

test('a resumptionToken of any length is left to the token decoder (badResumptionToken, not badArgument)', () => {
  const result = parseOaiRequest(
    [
      ['verb', 'ListRecords'],
      ['resumptionToken', 'x'.repeat(60_000)],
    ],
    { metadataPrefixes: ['oai_dc'] },
  );
  assert.equal('errors' in result, false);
});
