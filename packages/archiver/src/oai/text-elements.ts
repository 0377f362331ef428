// Elements found by name in a text that need not be well-formed XML: what identify.ts reads from
// Identify and ListMetadataFormats answers. As lenient as the regular expressions they replace
// (any prefix or none, any attributes, no namespace checked, the end tag's prefix free), but in
// one pass: from each '<' that began no match those expressions searched on to the end of the
// answer (for a '>', a '<' or an end tag), which took minutes on a 1 MiB answer of
// '<granularity ' repeated (issue 24). Here each such search is made once and its answer reused
// by the next '<' that asks the same (the answer is the first place at or after a position).

const LT = 0x3c;
const GT = 0x3e;
const SLASH = 0x2f;
const COLON = 0x3a;

/**
 * The text of each `<name …>text</name>` in `xml` (`text` without `<`; `name` may have a prefix
 * in both tags, and attributes; a start tag holds no `>`), trimmed, the five predefined entities
 * expanded, in document order: `<(?:P:)?name(?:\s[^>]*)?>([^<]*)</(?:P:)?name>` (P a prefix).
 */
export function textElements(xml: string, name: string): string[] {
  const found: string[] = [];
  const nextGt = firstAtOrAfter((from) => xml.indexOf('>', from));
  const nextLt = firstAtOrAfter((from) => xml.indexOf('<', from));
  const endTag = lastAnswer((lt) => endTagEnd(xml, lt, name));
  for (let at = nextStart(xml, name, 0); at !== -1; ) {
    const content = contentStart(xml, at, name, nextGt);
    if (content !== -1) {
      const lt = nextLt(content);
      const end = lt === -1 ? -1 : endTag(lt);
      if (end !== -1) {
        found.push(unescapeXml(xml.slice(content, lt).trim()));
        at = nextStart(xml, name, end);
        continue;
      }
    }
    at = nextStart(xml, name, at + 1);
  }
  return found;
}

/**
 * Each `<name …>…</name>` in `xml`, whole, up to the first end tag of that name (so not nested):
 * `<(?:P:)?name[\s>][\s\S]*?</(?:P:)?name>`.
 */
export function elementBlocks(xml: string, name: string): string[] {
  const found: string[] = [];
  const endTag = lastAnswer((lt) => endTagEnd(xml, lt, name));
  const nextEndTag = firstAtOrAfter((from) => {
    for (let lt = xml.indexOf('</', from); lt !== -1; lt = xml.indexOf('</', lt + 1)) if (endTag(lt) !== -1) return lt;
    return -1;
  });
  for (let at = nextStart(xml, name, 0); at !== -1; ) {
    const after = afterName(xml, at + 1, name);
    if (after !== -1 && (xml.charCodeAt(after) === GT || isSpace(xml.charCodeAt(after)))) {
      const lt = nextEndTag(after + 1);
      if (lt !== -1) {
        const end = endTag(lt);
        found.push(xml.slice(at, end));
        at = nextStart(xml, name, end);
        continue;
      }
    }
    at = nextStart(xml, name, at + 1);
  }
  return found;
}

/**
 * The first '<' at or after `from` that `name` follows, directly or after a prefix: the only
 * places a start tag of `name` can begin. Searching for the name skips every other '<' at the
 * speed of indexOf (an answer of 75,000 other tags took 25 ms a search '<' by '<').
 */
function nextStart(xml: string, name: string, from: number): number {
  for (let k = xml.indexOf(name, from + 1); k !== -1; k = xml.indexOf(name, k + 1)) {
    const before = xml.charCodeAt(k - 1);
    if (before === LT) return k - 1;
    if (before !== COLON) continue;
    // Back over the prefix to its '<' (each character once: a run ends at the ':' before it).
    let start = k - 1;
    while (start - 1 > from && isPrefixCharacter(xml.charCodeAt(start - 1))) start--;
    if (start < k - 1 && xml.charCodeAt(start - 1) === LT && isPrefixStart(xml.charCodeAt(start))) return start - 1;
  }
  return -1;
}

/** Where the content of the start tag `<name …>` at `at` begins, or -1. */
function contentStart(xml: string, at: number, name: string, nextGt: (from: number) => number): number {
  const after = afterName(xml, at + 1, name);
  if (after === -1) return -1;
  if (xml.charCodeAt(after) === GT) return after + 1;
  if (!isSpace(xml.charCodeAt(after))) return -1;
  const gt = nextGt(after + 1);
  return gt === -1 ? -1 : gt + 1;
}

/** Where the end tag `</name>` (prefix allowed) that begins at `lt` ends, or -1. */
function endTagEnd(xml: string, lt: number, name: string): number {
  if (xml.charCodeAt(lt) !== LT || xml.charCodeAt(lt + 1) !== SLASH) return -1;
  const after = afterName(xml, lt + 2, name);
  return after !== -1 && xml.charCodeAt(after) === GT ? after + 1 : -1;
}

/**
 * After `name` at `at`, with a prefix (`[A-Za-z_][\w.-]*:`) or none; -1 when it is not there.
 * A run of name characters followed by ':' can only be a prefix (`name` holds no ':').
 */
function afterName(xml: string, at: number, name: string): number {
  let from = at;
  if (isPrefixStart(xml.charCodeAt(at))) {
    let end = at + 1;
    while (isPrefixCharacter(xml.charCodeAt(end))) end++;
    if (xml.charCodeAt(end) === COLON) from = end + 1;
  }
  return xml.startsWith(name, from) ? from + name.length : -1;
}

/** A character of JavaScript's `\s`, as the expressions had it. */
function isSpace(code: number): boolean {
  if (code <= 0x20) return code === 0x20 || (code >= 0x09 && code <= 0x0d);
  return (
    code === 0xa0 ||
    code === 0x1680 ||
    (code >= 0x2000 && code <= 0x200a) ||
    code === 0x2028 ||
    code === 0x2029 ||
    code === 0x202f ||
    code === 0x205f ||
    code === 0x3000 ||
    code === 0xfeff
  );
}

function isPrefixStart(code: number): boolean {
  return (code >= 0x41 && code <= 0x5a) || (code >= 0x61 && code <= 0x7a) || code === 0x5f;
}

function isPrefixCharacter(code: number): boolean {
  return isPrefixStart(code) || (code >= 0x30 && code <= 0x39) || code === 0x2e || code === 0x2d;
}

/**
 * `search(from)`, the first place at or after `from` where something is (or -1), remembering its
 * last answer: a later question from a place between that one and its answer has the same answer.
 */
function firstAtOrAfter(search: (from: number) => number): (from: number) => number {
  let askedFrom = Number.POSITIVE_INFINITY;
  let answer = -1;
  return (from) => {
    if (from < askedFrom || (answer !== -1 && from > answer)) {
      askedFrom = from;
      answer = search(from);
    }
    return answer;
  };
}

/** `compute(at)`, remembering its last answer. */
function lastAnswer(compute: (at: number) => number): (at: number) => number {
  let asked = -1;
  let answer = -1;
  return (at) => {
    if (at !== asked) {
      asked = at;
      answer = compute(at);
    }
    return answer;
  };
}

function unescapeXml(text: string): string {
  return text
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&amp;/g, '&');
}
