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
  let runStart = 0;
  let runEnd = 0;
  const tagStart = () => text.lastIndexOf('<', runEnd - 1);
  let lastOpenStart = -1;
  const tokenizer = new XmlTokenizer({
    openTag: (tag) => {
      lastOpenStart = tagStart();
      handlers.open(tag, lastOpenStart, runEnd);
    },
    closeTag: (name) => {
      // An empty-element tag closes in the same run it opened in.
      const start = text.charCodeAt(runEnd - 2) === SLASH && lastOpenStart >= runStart ? lastOpenStart : tagStart();
      handlers.close(name, start, runEnd);
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
  while (runEnd < text.length) {
    runStart = runEnd;
    const gt = text.indexOf('>', runEnd);
    runEnd = gt === -1 ? text.length : gt + 1;
    tokenizer.write(text.slice(runStart, runEnd));
  }
  tokenizer.end();
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
