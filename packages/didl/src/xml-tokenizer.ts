/**
 * A strict, streaming XML 1.0 tokenizer with namespaces, for the markup of DIDL documents and
 * OAI-PMH responses. It replaced sax, which walked every character through a state machine
 * and built names and values a character at a time: on the mod_oai benchmark's update that was
 * the largest single cost of the harvester's main thread. Here each construct is found with
 * `indexOf` and sticky regular expressions and handed over whole.
 *
 * What it checks (anything else is `error`): names (XML 1.0 fifth edition), quoted attribute
 * values without `<`, whitespace between attributes, no duplicate attribute, end tags that
 * match, references (the five predefined entities and character references to XML
 * characters; nothing else), comments without `--`, one root element with nothing but
 * whitespace, comments and processing instructions around it, bound prefixes (elements and
 * attributes), and the reserved `xml` and `xmlns` prefixes. A DOCTYPE is reported to `doctype`
 * once it is complete and never interpreted. Characters XML forbids are the caller's check.
 *
 * Normalisation, as an XML processor does it (section 2.11 and 3.3.3): CR LF and a lone CR
 * become LF everywhere; in attribute values a literal tab or line feed becomes a space, while
 * a character reference keeps its character.
 *
 * Text is handed over as it comes (a reference cut by the end of a write is held back), CDATA
 * likewise; a construct cut by the end of a write is completed by a later one.
 *
 * Linear in its input, whatever a source sends (issue 24): a construct cut by writes is read
 * once, when its end has come (until then each write is only searched for that end: a `>`
 * outside quoted values, `-->`, `?>`), repeated attributes are found with a Set, and prefixes
 * are resolved through one map of the bindings in scope, not up the chain of `ns` objects.
 * Bounds (each an error with `tooLarge`): a markup construct (a tag, comment, processing
 * instruction or DOCTYPE) of more than 64 KiB, however the writes cut it, as sax refused it;
 * which also bounds a name; more than `maxAttributes` attributes on a tag (default 1,024); and
 * elements nested deeper than `maxDepth` (default 1,000).
 */

export const XML_NAMESPACE = 'http://www.w3.org/XML/1998/namespace';
export const XMLNS_NAMESPACE = 'http://www.w3.org/2000/xmlns/';

export interface XmlAttribute {
  name: string;
  value: string;
  prefix: string;
  local: string;
  uri: string;
}

/** A start tag, with the same fields as sax's QualifiedTag. */
export interface XmlTag {
  name: string;
  prefix: string;
  local: string;
  uri: string;
  /** By qualified name, in document order. */
  attributes: Record<string, XmlAttribute>;
  /** The bindings in scope: own properties for those this tag declares, the rest inherited. */
  ns: Record<string, string>;
  isSelfClosing: boolean;
}

export interface XmlHandlers {
  openTag(tag: XmlTag): void;
  /** After every element, self-closing ones included. */
  closeTag(name: string): void;
  /** Character data inside the root element (references expanded), possibly in pieces. */
  text(text: string): void;
  cdata(text: string): void;
  comment(text: string): void;
  /** A complete DOCTYPE declaration was read (its contents are not). */
  doctype(): void;
  processingInstruction(target: string, body: string): void;
  /** Must throw: the document is not well-formed (`tooLarge`: over a bound: 64 KiB, attributes, depth). */
  error(reason: string, tooLarge: boolean): never;
}

export interface XmlTokenizerOptions {
  /** Deepest element nesting accepted (default {@link DEFAULT_MAX_DEPTH}). */
  maxDepth?: number | undefined;
  /** Most attributes (namespace declarations included) accepted on one tag (default {@link DEFAULT_MAX_ATTRIBUTES}). */
  maxAttributes?: number | undefined;
}

/** Longest markup construct (sax's default buffer limit). */
const MAX_PENDING = 64 * 1024;
export const DEFAULT_MAX_DEPTH = 1000;
/**
 * Far more than any real tag has; a page of 64 KiB tags of ~9,000 attributes each was read at
 * 1.6 MB/s, a quarter of the rate of one with 1,024 (bench/README.md, hostile parse).
 */
export const DEFAULT_MAX_ATTRIBUTES = 1024;
/** Below this many characters an incomplete construct is simply read again on the next write. */
const SHORT_PENDING = 16;
/** Attributes compared by a linear search; a tag with more gets a Set. */
const FEW_ATTRIBUTES = 8;
/** Longest reference held back at the end of a write (`&#x0000000001F600;` and the like). */
const MAX_REFERENCE = 32;

const NAME_START =
  ':A-Z_a-z\\u00C0-\\u00D6\\u00D8-\\u00F6\\u00F8-\\u02FF\\u0370-\\u037D\\u037F-\\u1FFF\\u200C-\\u200D\\u2070-\\u218F' +
  '\\u2C00-\\u2FEF\\u3001-\\uD7FF\\uF900-\\uFDCF\\uFDF0-\\uFFFD\\u{10000}-\\u{EFFFF}';
const NAME_CHAR = `${NAME_START}\\-.0-9\\u00B7\\u0300-\\u036F\\u203F-\\u2040`;
/** A Name, matched where lastIndex points. */
const NAME = new RegExp(`[${NAME_START}][${NAME_CHAR}]*`, 'uy');
/**
 * Classes of ASCII characters in names (1: may start a name, 2: may only continue one); a
 * character at or above 0x80 leaves the decision to NAME. Most names are ASCII, and a loop over
 * this table costs a tag less than the Unicode regular expression.
 */
const ASCII_NAME = buildAsciiNameTable();
const REFERENCE = /&(#x[0-9A-Fa-f]+|#[0-9]+|[A-Za-z_][\w.-]*);/y;
const PREDEFINED: Readonly<Record<string, string>> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };
const ROOT_NS: Readonly<Record<string, string>> = Object.freeze({ xml: XML_NAMESPACE, xmlns: XMLNS_NAMESPACE });

const LT = 0x3c;
const GT = 0x3e;
const SLASH = 0x2f;
const QUESTION = 0x3f;
const BANG = 0x21;
const EQUALS = 0x3d;
const QUOTE = 0x22;
const APOSTROPHE = 0x27;

/** Where an incomplete construct makes `parse` stop and wait for more input. */
const INCOMPLETE = -1;
const UNKNOWN = -2;

/** What the incomplete construct at the start of `pending` needs before it can end. */
type Awaited =
  /** An end tag: a `>`. */
  | { kind: 'gt' }
  /** A start tag: a `>` outside a quoted value (`quote`: the quote of the value the input is in, or 0). */
  | { kind: 'tag'; quote: number }
  /** A comment (`-->`) or processing instruction (`?>`); `tail`: the last characters seen, which may begin it. */
  | { kind: 'sequence'; end: string; tail: string }
  /** A DOCTYPE: a `>`, or once a `[` came first, `]` and spaces and `>` (`closing`: after the `]`). */
  | { kind: 'doctype'; bracket: boolean; closing: boolean };

const TAG_STOP = /["'>]/g;

export class XmlTokenizer {
  /** Line (0-based), column (0-based) and offset of the first character not yet consumed. */
  line = 0;
  column = 0;
  position = 0;
  /** Input not consumed yet: an incomplete construct, or a reference cut by a write. */
  private pending = '';
  /** Writes held back (not joined to `pending`) while the construct there waits for its end. */
  private held: string[] = [];
  private heldLength = 0;
  private awaited: Awaited | undefined;
  /** How far into `pending` line, column and position have been counted. */
  private counted = 0;
  /**
   * The first line feed in `pending` at or after `counted` (-1: none; UNKNOWN: look). Searched
   * for again at each construct, it was a search to the end of a long write without line feeds
   * for every tag in it.
   */
  private nextBreak = UNKNOWN;
  private heldCarriageReturn = false;
  private inCdata = false;
  private readonly open: string[] = [];
  private readonly scopes: Array<Record<string, string>> = [ROOT_NS as Record<string, string>];
  /** The bindings in scope, flat: looking a prefix up in `ns` walks one prototype per declaring ancestor. */
  private readonly bindings = new Map<string, string>(Object.entries(ROOT_NS));
  /** What each declaration replaced, to restore when its element closes; `undoFrom[d]`: where depth d's begin. */
  private readonly replaced: Array<[string, string | undefined]> = [];
  private readonly undoFrom: number[] = [];
  private sawRoot = false;
  private closedRoot = false;
  private readonly maxDepth: number;
  private readonly maxAttributes: number;

  constructor(
    private readonly on: XmlHandlers,
    options: XmlTokenizerOptions = {},
  ) {
    this.maxDepth = options.maxDepth ?? DEFAULT_MAX_DEPTH;
    this.maxAttributes = options.maxAttributes ?? DEFAULT_MAX_ATTRIBUTES;
  }

  /** Between constructs, in character data (a reference cut in two counts): text comes next. */
  get inCharacterData(): boolean {
    return !this.inCdata && this.pending.charCodeAt(0) !== LT;
  }

  /** Nothing is held back: every character written so far is consumed. */
  get idle(): boolean {
    return !this.inCdata && this.pending.length === 0;
  }

  write(input: string): void {
    let text = input;
    if (this.heldCarriageReturn) {
      text = `\r${text}`;
      this.heldCarriageReturn = false;
    }
    if (text.endsWith('\r')) {
      // A CR LF may straddle two writes: decide when the next one comes.
      text = text.slice(0, -1);
      this.heldCarriageReturn = true;
    }
    if (text.includes('\r')) text = text.replace(/\r\n?/g, '\n');
    if (text.length === 0) return;
    if (this.awaited !== undefined) {
      this.held.push(text);
      this.heldLength += text.length;
      // Read again only once it may be complete, or too long (its syntax errors come first).
      if (!mayEnd(this.awaited, text, 0) && this.pending.length + this.heldLength <= MAX_PENDING) return;
      this.joinHeld();
    } else {
      this.pending = this.pending.length === 0 ? text : this.pending + text;
      this.nextBreak = UNKNOWN;
    }
    this.parse();
  }

  /** The end of the input: whatever is still open or held back is an error. */
  end(): void {
    let more = this.joinHeld();
    if (this.heldCarriageReturn) {
      this.heldCarriageReturn = false;
      this.pending += '\n';
      this.nextBreak = UNKNOWN;
      more = true;
    }
    if (more) this.parse();
    if (this.inCdata) this.fail(this.pending.length, 'the document ends inside a CDATA section');
    if (this.pending.length > 0) this.fail(this.pending.length, 'the document ends inside a construct');
    if (!this.closedRoot) this.fail(0, this.sawRoot ? 'unclosed root element' : 'no root element');
  }

  /** Line and column (0-based) after everything written so far. */
  endPosition(): { line: number; column: number } {
    const rest = this.pending.slice(this.counted) + this.held.join('');
    const breaks = rest.split('\n').length - 1;
    if (breaks === 0) return { line: this.line, column: this.column + rest.length };
    return { line: this.line + breaks, column: rest.length - rest.lastIndexOf('\n') - 1 };
  }

  private parse(): void {
    const input = this.pending;
    let at = 0;
    while (at < input.length) {
      let next: number;
      if (this.inCdata) next = this.cdataContent(input, at);
      else if (input.charCodeAt(at) !== LT) next = this.characterData(input, at);
      else next = this.markup(input, at);
      if (next === INCOMPLETE || next === at) break;
      at = next;
    }
    this.advance(at);
    this.pending = at === 0 ? input : input.slice(at);
    this.counted = 0;
    this.nextBreak = UNKNOWN;
    if (this.pending.length > MAX_PENDING) {
      this.on.error('a name, attribute value, comment or declaration is longer than 64 KiB', true);
    }
    this.awaited = this.pending.length < SHORT_PENDING || this.inCdata ? undefined : awaitedEnd(this.pending);
  }

  /** Joins the writes held back to `pending`; false when there were none. */
  private joinHeld(): boolean {
    this.awaited = undefined;
    if (this.held.length === 0) return false;
    this.pending += this.held.join('');
    this.nextBreak = UNKNOWN;
    this.held = [];
    this.heldLength = 0;
    return true;
  }

  /** A construct that is complete but longer than 64 KiB (`at`: where it begins). */
  private refuseLong(at: number, what: string): never {
    this.advance(Math.max(at, this.counted));
    return this.on.error(`${what} is longer than 64 KiB`, true);
  }

  /** Moves line, column and position on to `to` in `pending`. */
  private advance(to: number): void {
    const input = this.pending;
    if (this.nextBreak === UNKNOWN || (this.nextBreak !== -1 && this.nextBreak < this.counted)) this.nextBreak = input.indexOf('\n', this.counted);
    let lineBreak = this.nextBreak;
    if (lineBreak === -1 || lineBreak >= to) {
      this.column += to - this.counted;
    } else {
      let last = lineBreak;
      let breaks = 0;
      while (lineBreak !== -1 && lineBreak < to) {
        breaks++;
        last = lineBreak;
        lineBreak = input.indexOf('\n', lineBreak + 1);
      }
      this.line += breaks;
      this.column = to - last - 1;
      this.nextBreak = lineBreak;
    }
    this.position += to - this.counted;
    this.counted = to;
  }

  private fail(at: number, reason: string): never {
    this.advance(Math.max(at, this.counted));
    return this.on.error(reason, false);
  }

  /** Text up to the next `<`; returns where it stopped. */
  private characterData(input: string, from: number): number {
    const lt = input.indexOf('<', from);
    let to = lt === -1 ? input.length : lt;
    if (lt === -1) {
      // A reference cut by the end of this write waits for the rest of it, and so does a
      // `]` or `]]` that may begin a `]]>`.
      const amp = input.lastIndexOf('&', to - 1);
      if (amp >= from && input.indexOf(';', amp) === -1 && to - amp < MAX_REFERENCE) to = amp;
      while (to > from && to > input.length - 2 && input.charCodeAt(to - 1) === 0x5d) to--;
    }
    if (to === from) return from;
    const raw = input.slice(from, to);
    if (raw.includes(']]>')) this.fail(from + raw.indexOf(']]>'), "']]>' in text");
    if (this.open.length === 0) {
      const stray = firstNonSpace(raw);
      if (stray !== -1) this.fail(from + stray, 'text outside the root element');
      this.advance(to);
      return to;
    }
    const text = raw.includes('&') ? this.expand(raw, from) : raw;
    this.advance(to);
    this.on.text(text);
    return to;
  }

  /** Expands the references in `raw` (found at `offset` of pending); anything else with `&` is an error. */
  private expand(raw: string, offset: number): string {
    let out = '';
    let done = 0;
    for (let amp = raw.indexOf('&'); amp !== -1; amp = raw.indexOf('&', done)) {
      REFERENCE.lastIndex = amp;
      const match = REFERENCE.exec(raw);
      if (!match) this.fail(offset + amp, "'&' that does not begin a reference (write &amp;)");
      const name = match[1]!;
      let character: string | undefined;
      if (name.charCodeAt(0) === 0x23) {
        const code = name.charCodeAt(1) === 0x78 ? Number.parseInt(name.slice(2), 16) : Number.parseInt(name.slice(1), 10);
        if (isXmlCharacter(code)) character = String.fromCodePoint(code);
        else this.fail(offset + amp, `&${name}; is not a character XML allows`);
      } else {
        character = PREDEFINED[name];
        if (character === undefined) this.fail(offset + amp, `&${name}; is not one of the five entities XML defines`);
      }
      out += raw.slice(done, amp) + character;
      done = REFERENCE.lastIndex;
    }
    return out + raw.slice(done);
  }

  private markup(input: string, at: number): number {
    if (at + 1 >= input.length) return INCOMPLETE;
    const next = input.charCodeAt(at + 1);
    if (next === SLASH) return this.endTag(input, at);
    if (next === QUESTION) return this.processingInstruction(input, at);
    if (next === BANG) return this.declaration(input, at);
    return this.startTag(input, at);
  }

  private startTag(input: string, at: number): number {
    let i = nameEnd(input, at + 1);
    if (i === at + 1) return this.fail(at + 1, 'a tag whose name is not an XML name');
    const name = input.slice(at + 1, i);
    const names: string[] = [];
    const values: string[] = [];
    // Searching `names` for each attribute is quadratic: a 64 KiB tag holds thousands.
    let seen: Set<string> | undefined;
    let selfClosing = false;
    for (;;) {
      if (i >= input.length) return INCOMPLETE;
      const spaced = isSpace(input.charCodeAt(i));
      while (i < input.length && isSpace(input.charCodeAt(i))) i++;
      if (i >= input.length) return INCOMPLETE;
      const c = input.charCodeAt(i);
      if (c === GT) {
        i++;
        break;
      }
      if (c === SLASH) {
        if (i + 1 >= input.length) return INCOMPLETE;
        if (input.charCodeAt(i + 1) !== GT) this.fail(i + 1, `'/' not followed by '>' in the start tag of ${name}`);
        selfClosing = true;
        i += 2;
        break;
      }
      if (!spaced) this.fail(i, `no whitespace before an attribute (or a bad character in the name) of ${name}`);
      if (names.length >= this.maxAttributes) {
        this.advance(at);
        this.on.error(`the start tag of ${name} has more than ${this.maxAttributes} attributes`, true);
      }
      const attributeEnd = nameEnd(input, i);
      if (attributeEnd === i) this.fail(i, `an attribute of ${name} whose name is not an XML name`);
      const attribute = input.slice(i, attributeEnd);
      i = attributeEnd;
      while (i < input.length && isSpace(input.charCodeAt(i))) i++;
      if (i >= input.length) return INCOMPLETE;
      if (input.charCodeAt(i) !== EQUALS) this.fail(i, `attribute ${attribute} of ${name} without a value`);
      i++;
      while (i < input.length && isSpace(input.charCodeAt(i))) i++;
      if (i >= input.length) return INCOMPLETE;
      const quote = input.charCodeAt(i);
      if (quote !== QUOTE && quote !== APOSTROPHE) this.fail(i, `the value of attribute ${attribute} of ${name} is not quoted`);
      const close = input.indexOf(quote === QUOTE ? '"' : "'", i + 1);
      if (close === -1) return INCOMPLETE;
      let value = input.slice(i + 1, close);
      const lt = value.indexOf('<');
      if (lt !== -1) this.fail(i + 1 + lt, `'<' in the value of attribute ${attribute} of ${name}`);
      // Literal whitespace becomes a space before references are expanded: &#10; stays a line feed.
      if (value.includes('\n') || value.includes('\t')) value = value.replace(/[\t\n]/g, ' ');
      if (value.includes('&')) value = this.expand(value, i + 1);
      if (seen ? seen.has(attribute) : names.includes(attribute)) this.fail(i, `attribute ${attribute} appears twice on ${name}`);
      names.push(attribute);
      values.push(value);
      if (seen) seen.add(attribute);
      else if (names.length > FEW_ATTRIBUTES) seen = new Set(names);
      i = close + 1;
    }
    if (i - at > MAX_PENDING) this.refuseLong(at, `the start tag of ${name}`);
    if (this.closedRoot) this.fail(at, `a second root element ${name}`);
    if (this.open.length >= this.maxDepth) {
      this.advance(at);
      this.on.error(`elements are nested deeper than ${this.maxDepth} levels`, true);
    }
    this.advance(i);
    const tag = this.qualify(name, names, values, at);
    tag.isSelfClosing = selfClosing;
    this.sawRoot = true;
    this.open.push(name);
    this.scopes.push(tag.ns);
    this.on.openTag(tag);
    if (selfClosing) this.close(name);
    return i;
  }

  /** The tag with its namespaces resolved (declarations first, then every prefix used). */
  private qualify(name: string, names: readonly string[], values: readonly string[], at: number): XmlTag {
    const parent = this.scopes[this.scopes.length - 1]!;
    let ns = parent;
    this.undoFrom.push(this.replaced.length);
    for (let k = 0; k < names.length; k++) {
      const attribute = names[k]!;
      if (attribute !== 'xmlns' && !attribute.startsWith('xmlns:')) continue;
      const prefix = attribute === 'xmlns' ? '' : attribute.slice(6);
      const uri = values[k]!;
      if (prefix === 'xmlns') this.fail(at, 'the xmlns prefix cannot be declared');
      if ((prefix === 'xml') !== (uri === XML_NAMESPACE)) this.fail(at, `the xml prefix and only it is bound to ${XML_NAMESPACE}`);
      if (uri === XMLNS_NAMESPACE) this.fail(at, `no prefix may be bound to ${XMLNS_NAMESPACE}`);
      if (prefix !== '' && uri === '') this.fail(at, `prefix ${prefix} bound to an empty namespace name`);
      if (ns === parent) ns = Object.create(parent) as Record<string, string>;
      ns[prefix] = uri;
      this.replaced.push([prefix, this.bindings.get(prefix)]);
      this.bindings.set(prefix, uri);
    }
    const attributes: Record<string, XmlAttribute> = {};
    // Few attributes are compared pairwise: a Set for every tag with two was a cost per tag.
    const expanded = names.length > FEW_ATTRIBUTES ? new Set<string>() : undefined;
    for (let k = 0; k < names.length; k++) {
      const attribute = names[k]!;
      const colon = attribute.indexOf(':');
      let prefix = colon === -1 ? '' : attribute.slice(0, colon);
      let local = colon === -1 ? attribute : attribute.slice(colon + 1);
      let uri = '';
      if (attribute === 'xmlns') {
        prefix = 'xmlns';
        local = '';
        uri = XMLNS_NAMESPACE;
      } else if (prefix !== '') {
        const bound = this.bindings.get(prefix);
        if (bound === undefined) this.fail(at, `unbound namespace prefix ${prefix} (attribute ${attribute} of ${name})`);
        uri = bound;
      }
      if (expanded) {
        const key = `{${uri}}${local}`;
        if (expanded.has(key)) this.fail(at, `attribute ${attribute} of ${name} repeats another in the same namespace`);
        expanded.add(key);
      } else if (uri !== '' && repeatsExpandedName(attributes, uri, local)) {
        this.fail(at, `attribute ${attribute} of ${name} repeats another in the same namespace`);
      }
      attributes[attribute] = { name: attribute, value: values[k]!, prefix, local, uri };
    }
    const colon = name.indexOf(':');
    const prefix = colon === -1 ? '' : name.slice(0, colon);
    const local = colon === -1 ? name : name.slice(colon + 1);
    const uri = this.bindings.get(prefix);
    if (uri === undefined && prefix !== '') this.fail(at, `unbound namespace prefix ${prefix} (element ${name})`);
    return { name, prefix, local, uri: uri ?? '', attributes, ns, isSelfClosing: false };
  }

  private endTag(input: string, at: number): number {
    const gt = input.indexOf('>', at + 2);
    if (gt === -1) return INCOMPLETE;
    let i = nameEnd(input, at + 2);
    if (i === at + 2) this.fail(at + 2, 'an end tag whose name is not an XML name');
    const name = input.slice(at + 2, i);
    while (i < gt && isSpace(input.charCodeAt(i))) i++;
    if (i !== gt) this.fail(i, `unexpected characters in the end tag of ${name}`);
    if (gt + 1 - at > MAX_PENDING) this.refuseLong(at, `the end tag of ${name}`);
    const expected = this.open[this.open.length - 1];
    if (expected === undefined) this.fail(at, `end tag </${name}> with no element open`);
    if (name !== expected) this.fail(at, `end tag </${name}> where </${expected}> was expected`);
    this.advance(gt + 1);
    this.close(name);
    return gt + 1;
  }

  private close(name: string): void {
    this.open.pop();
    this.scopes.pop();
    for (let from = this.undoFrom.pop()!; this.replaced.length > from; ) {
      const [prefix, previous] = this.replaced.pop()!;
      if (previous === undefined) this.bindings.delete(prefix);
      else this.bindings.set(prefix, previous);
    }
    if (this.open.length === 0) this.closedRoot = true;
    this.on.closeTag(name);
  }

  private processingInstruction(input: string, at: number): number {
    const end = input.indexOf('?>', at + 2);
    if (end === -1) return INCOMPLETE;
    NAME.lastIndex = at + 2;
    const match = NAME.exec(input);
    if (!match || NAME.lastIndex > end) this.fail(at + 2, 'a processing instruction without a target name');
    const target = match[0];
    let i = NAME.lastIndex;
    if (i < end && !isSpace(input.charCodeAt(i))) this.fail(i, `a bad character after processing instruction target ${target}`);
    while (i < end && isSpace(input.charCodeAt(i))) i++;
    if (target !== 'xml' && target.toLowerCase() === 'xml') this.fail(at, `processing instruction target ${target} is reserved`);
    // Only after the root: whitespace before the declaration (a common server bug) was always read.
    if (target === 'xml' && this.sawRoot) this.fail(at, 'an XML declaration after the root element began');
    if (end + 2 - at > MAX_PENDING) this.refuseLong(at, `processing instruction ${target}`);
    this.advance(end + 2);
    this.on.processingInstruction(target, input.slice(i, end));
    return end + 2;
  }

  private declaration(input: string, at: number): number {
    if (input.startsWith('<!--', at)) {
      const end = input.indexOf('-->', at + 4);
      if (end === -1) return INCOMPLETE;
      const body = input.slice(at + 4, end);
      const dashes = body.indexOf('--');
      if (dashes !== -1) this.fail(at + 4 + dashes, "'--' inside a comment");
      if (body.endsWith('-')) this.fail(end - 1, "a comment that ends with '--->'");
      if (end + 3 - at > MAX_PENDING) this.refuseLong(at, 'a comment');
      this.advance(end + 3);
      this.on.comment(body);
      return end + 3;
    }
    if (input.startsWith('<![CDATA[', at)) {
      if (this.open.length === 0) this.fail(at, 'a CDATA section outside the root element');
      this.advance(at + 9);
      this.inCdata = true;
      return at + 9;
    }
    if (input.startsWith('<!DOCTYPE', at)) {
      // Reported at its end, once whole; nothing inside it is read (no entity is ever defined).
      const gt = input.indexOf('>', at + 9);
      const bracket = input.indexOf('[', at + 9);
      let end = gt;
      if (bracket !== -1 && (gt === -1 || bracket < gt)) {
        const closing = /\][ \t\n]*>/g;
        closing.lastIndex = bracket;
        const match = closing.exec(input);
        end = match ? match.index + match[0].length - 1 : -1;
      }
      if (end === -1) return INCOMPLETE;
      this.advance(end + 1);
      this.on.doctype();
      return this.fail(end + 1, 'a DOCTYPE declaration');
    }
    const start = input.slice(at, at + 9);
    if (start.length < 9 && ['<!--', '<![CDATA[', '<!DOCTYPE'].some((opening) => opening.startsWith(start))) return INCOMPLETE;
    return this.fail(at, "a '<!' that begins no comment, CDATA section or DOCTYPE");
  }

  /** The content of a CDATA section up to its `]]>` (or the end of this write, less what may begin it). */
  private cdataContent(input: string, from: number): number {
    const end = input.indexOf(']]>', from);
    if (end === -1) {
      const to = Math.max(from, input.length - 2);
      if (to > from) {
        this.advance(to);
        this.on.cdata(input.slice(from, to));
      }
      return to;
    }
    this.advance(end);
    if (end > from) this.on.cdata(input.slice(from, end));
    this.advance(end + 3);
    this.inCdata = false;
    return end + 3;
  }
}

/** What the incomplete construct that begins `pending` waits for; undefined when it cannot tell (read it again each write). */
function awaitedEnd(pending: string): Awaited | undefined {
  if (pending.charCodeAt(0) !== LT) return undefined;
  let awaited: Awaited;
  let from: number;
  const second = pending.charCodeAt(1);
  if (second === SLASH) [awaited, from] = [{ kind: 'gt' }, 2];
  else if (second === QUESTION) [awaited, from] = [{ kind: 'sequence', end: '?>', tail: '' }, 2];
  else if (pending.startsWith('<!--')) [awaited, from] = [{ kind: 'sequence', end: '-->', tail: '' }, 4];
  else if (pending.startsWith('<!DOCTYPE')) [awaited, from] = [{ kind: 'doctype', bracket: false, closing: false }, 9];
  else if (second === BANG) return undefined;
  else [awaited, from] = [{ kind: 'tag', quote: 0 }, 1];
  // Complete after all (it should not be: the parse stopped at it): read it again next time.
  return mayEnd(awaited, pending, from) ? undefined : awaited;
}

/**
 * Whether the end `awaited` needs may be in `text` (from `from`), which follows what it has
 * seen; if not, `awaited` now includes `text`. Each character is looked at once.
 */
function mayEnd(awaited: Awaited, text: string, from: number): boolean {
  switch (awaited.kind) {
    case 'gt':
      return text.indexOf('>', from) !== -1;
    case 'tag': {
      let i = from;
      let quote = awaited.quote;
      for (;;) {
        if (quote !== 0) {
          const close = text.indexOf(quote === QUOTE ? '"' : "'", i);
          if (close === -1) break;
          quote = 0;
          i = close + 1;
          continue;
        }
        TAG_STOP.lastIndex = i;
        const stop = TAG_STOP.exec(text);
        if (!stop) break;
        if (text.charCodeAt(stop.index) === GT) return true;
        quote = text.charCodeAt(stop.index);
        i = stop.index + 1;
      }
      awaited.quote = quote;
      return false;
    }
    case 'sequence': {
      const seen = awaited.tail + (from === 0 ? text : text.slice(from));
      if (seen.includes(awaited.end)) return true;
      awaited.tail = seen.slice(-(awaited.end.length - 1));
      return false;
    }
    case 'doctype':
      for (let i = from; i < text.length; i++) {
        const c = text.charCodeAt(i);
        if (!awaited.bracket) {
          if (c === GT) return true;
          if (c === 0x5b) awaited.bracket = true;
        } else if (c === 0x5d) awaited.closing = true;
        else if (c === GT && awaited.closing) return true;
        else if (!isSpace(c)) awaited.closing = false;
      }
      return false;
  }
}

function buildAsciiNameTable(): Uint8Array {
  const table = new Uint8Array(128);
  for (let c = 0; c < 128; c++) {
    const char = String.fromCharCode(c);
    if (/[:A-Z_a-z]/.test(char)) table[c] = 1;
    else if (/[-.0-9]/.test(char)) table[c] = 2;
  }
  return table;
}

/**
 * The end of the Name that starts at `from` in `input` (from itself when none does there), as
 * NAME would find it: through the ASCII table while it can, through NAME once a character
 * beyond ASCII comes.
 */
function nameEnd(input: string, from: number): number {
  let i = from;
  const first = input.charCodeAt(i);
  if (first >= 0x80 || Number.isNaN(first)) return regexNameEnd(input, from);
  if (ASCII_NAME[first] !== 1) return from;
  for (i++; i < input.length; i++) {
    const c = input.charCodeAt(i);
    if (c >= 0x80) return regexNameEnd(input, from);
    if (ASCII_NAME[c] === 0) return i;
  }
  return i;
}

function regexNameEnd(input: string, from: number): number {
  NAME.lastIndex = from;
  return NAME.exec(input) ? NAME.lastIndex : from;
}

/** Whether an attribute already read has namespace `uri` and local name `local` (a handful of attributes: a loop). */
function repeatsExpandedName(attributes: Record<string, XmlAttribute>, uri: string, local: string): boolean {
  for (const name in attributes) {
    const other = attributes[name]!;
    if (other.uri === uri && other.local === local) return true;
  }
  return false;
}

function isSpace(code: number): boolean {
  return code === 0x20 || code === 0x0a || code === 0x09 || code === 0x0d;
}

function firstNonSpace(text: string): number {
  for (let i = 0; i < text.length; i++) if (!isSpace(text.charCodeAt(i))) return i;
  return -1;
}

/** XML 1.0's Char production. */
function isXmlCharacter(code: number): boolean {
  return (
    code === 0x9 ||
    code === 0xa ||
    code === 0xd ||
    (code >= 0x20 && code <= 0xd7ff) ||
    (code >= 0xe000 && code <= 0xfffd) ||
    (code >= 0x10000 && code <= 0x10ffff)
  );
}
