// Where each element of an XML text begins and ends, as character offsets into the text: what
// `oaibag serve` needs to cut a record out of records.xml and to rewrite a few tags of a DIDL
// kept as received while every other byte stays as it came. The didl package's strict
// tokenizer reads the text; it is fed one run of markup at a time (up to each `>`), so every
// tag it reports ends where the run ends and begins at the run's last `<` (attribute values
// hold no `<`).
import { inheritedNamespaceDeclarations, type XmlTag, XmlTokenizer } from '@oaibag/didl';

export interface SpanHandlers {
  /** A start tag (or an empty-element tag, then `close` follows with the same span). */
  open(tag: XmlTag, start: number, end: number): void;
  /** An end tag, or the end of an empty-element tag. */
  close(name: string, start: number, end: number): void;
}

/** Reads `text` (one well-formed element) and reports each tag's span; throws on malformed XML. */
export function scanXmlSpans(text: string, handlers: SpanHandlers): void {
  const scanner = new XmlSpanScanner(text, handlers);
  while (scanner.step());
}

/**
 * The same reading of `text`, one run of markup (up to the next `>`) per `step()`, so a caller
 * reads only as far as it needs now and goes on later from there (stored-records.ts reads a
 * bag's records.xml up to the record asked for). `step()` returns false once the text is read
 * (and checked to end where its element ends); it throws on malformed XML.
 */
export class XmlSpanScanner {
  private readonly tokenizer: XmlTokenizer;
  private runStart = 0;
  private runEnd = 0;
  private lastOpenStart = -1;
  private ended = false;

  constructor(
    private readonly text: string,
    handlers: SpanHandlers,
  ) {
    const tagStart = () => text.lastIndexOf('<', this.runEnd - 1);
    this.tokenizer = new XmlTokenizer({
      openTag: (tag) => {
        this.lastOpenStart = tagStart();
        handlers.open(tag, this.lastOpenStart, this.runEnd);
      },
      closeTag: (name) => {
        // An empty-element tag closes in the same run it opened in.
        const start = text.charCodeAt(this.runEnd - 2) === SLASH && this.lastOpenStart >= this.runStart ? this.lastOpenStart : tagStart();
        handlers.close(name, start, this.runEnd);
      },
      text: () => {},
      cdata: () => {},
      comment: () => {},
      doctype: () => {},
      processingInstruction: () => {},
      error: (reason) => {
        throw new Error(`not well-formed XML: ${reason}`);
      },
    });
  }

  step(): boolean {
    if (this.ended) return false;
    const text = this.text;
    if (this.runEnd >= text.length) {
      this.ended = true;
      this.tokenizer.end();
      return false;
    }
    this.runStart = this.runEnd;
    const gt = text.indexOf('>', this.runEnd);
    this.runEnd = gt === -1 ? text.length : gt + 1;
    this.tokenizer.write(text.slice(this.runStart, this.runEnd));
    return true;
  }
}

const SLASH = 0x2f;

/**
 * The element whose start tag is `text[start, openEnd)` and which ends at `end`, with the
 * namespace declarations it inherited written into its start tag: it means the same alone.
 */
export function standaloneElement(text: string, tag: XmlTag, start: number, openEnd: number, end: number): string {
  const declarations = inheritedNamespaceDeclarations(tag);
  if (declarations === '') return text.slice(start, end);
  const at = text.charCodeAt(openEnd - 2) === SLASH ? openEnd - 2 : openEnd - 1;
  return text.slice(start, at) + declarations + text.slice(at, end);
}
