import type { DidlPosition } from './errors.js';
import type { XmlAttribute as QualifiedAttribute, XmlTag as QualifiedTag } from './xml-tokenizer.js';

/** Small helpers over what the XML tokenizer hands us: tags, attributes and text. */

/** Value of the un-namespaced attribute `local`, if present. */
export function attribute(tag: QualifiedTag, local: string): string | undefined {
  const attributes = tag.attributes;
  for (const name in attributes) {
    const value = attributes[name]!;
    if (value.local === local && value.uri === '') return value.value;
  }
  return undefined;
}

/** The un-namespaced attributes as a plain object. */
export function plainAttributes(attributes: Record<string, QualifiedAttribute>): Record<string, string> {
  const result: Record<string, string> = {};
  for (const [name, value] of Object.entries(attributes)) if (value.uri === '') result[name] = value.value;
  return result;
}

/**
 * The tokenizer reports text when it ends; `where` is that end. Step back to character `at` of the
 * text: exact for lines as long as the text holds no references to line feeds.
 */
export function positionInText(text: string, at: number, where: DidlPosition): DidlPosition {
  const after = text.slice(at);
  const linesAfter = after.split('\n').length - 1;
  const lastBreak = text.lastIndexOf('\n', at - 1);
  if (linesAfter === 0) return { line: where.line, column: Math.max(1, where.column - after.length) };
  return { line: where.line - linesAfter, column: lastBreak === -1 ? 1 : at - lastBreak };
}

/** Trims XML whitespace only (not NBSP or U+FEFF, which String.prototype.trim also strips). */
export function trimXmlSpace(text: string): string {
  // A loop, not a regular expression: /\s+$/ is quadratic on long runs of inner whitespace.
  let start = 0;
  let end = text.length;
  while (start < end && isXmlSpace(text.charCodeAt(start))) start++;
  while (end > start && isXmlSpace(text.charCodeAt(end - 1))) end--;
  return start === 0 && end === text.length ? text : text.slice(start, end);
}

function isXmlSpace(code: number): boolean {
  return code === 0x20 || code === 0x09 || code === 0x0a || code === 0x0d;
}

/** `{namespace}local` for messages. */
export function describe(tag: QualifiedTag): string {
  return tag.uri ? `{${tag.uri}}${tag.local}` : tag.local;
}
