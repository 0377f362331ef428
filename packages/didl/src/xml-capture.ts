import { DidlError, type DidlErrorDetails } from './errors.js';
import { escapeAttribute, escapeText } from './xml-text.js';
import type { XmlTag as QualifiedTag } from './xml-tokenizer.js';

/**
 * Rebuilds an element we do not interpret (an unknown Descriptor, inline Resource XML) as a
 * self-contained XML string: every namespace in scope at its root is declared on the root, so
 * the fragment means the same thing wherever it is written again. The text is equivalent to
 * the input, not byte-identical (attribute quoting and escaping are normalised).
 */
export class XmlCapture {
  private xml = '';
  private depth = 0;
  private openTagPending = false;

  constructor(
    private readonly limit: number,
    private readonly what: string,
    private readonly context: () => DidlErrorDetails,
  ) {}

  open(tag: QualifiedTag): void {
    this.closePendingStartTag();
    let start = `<${tag.name}`;
    const attributes = tag.attributes;
    for (const name in attributes) start += ` ${name}="${escapeAttribute(attributes[name]!.value)}"`;
    if (this.depth === 0) start += inheritedNamespaceDeclarations(tag);
    this.append(start);
    this.openTagPending = true;
    this.depth++;
  }

  text(value: string): void {
    if (value.length === 0) return;
    this.closePendingStartTag();
    this.append(escapeText(value));
  }

  comment(value: string): void {
    this.closePendingStartTag();
    this.append(`<!--${value}-->`);
  }

  /** Closes the current element; returns true when the captured root was closed. */
  close(name: string): boolean {
    this.depth--;
    if (this.openTagPending) {
      this.xml += '/>';
      this.openTagPending = false;
    } else {
      this.append(`</${name}>`);
    }
    return this.depth === 0;
  }

  get result(): string {
    return this.xml;
  }

  private closePendingStartTag(): void {
    if (this.openTagPending) {
      this.xml += '>';
      this.openTagPending = false;
    }
  }

  private append(part: string): void {
    this.xml += part;
    if (this.xml.length > this.limit) {
      throw new DidlError('ERR_DIDL_TOO_LARGE', `${this.what} is larger than ${this.limit} characters`, {
        ...this.context(),
        hint: 'raise maxMetadataChars if such records are expected',
      });
    }
  }
}

/**
 * Declarations (` xmlns:p="uri"`, each with a leading space) of the namespaces in scope at
 * `tag` that it does not declare itself: what it would need to mean the same on its own.
 */
export function inheritedNamespaceDeclarations(tag: QualifiedTag): string {
  const declared = new Set<string>();
  for (const name in tag.attributes) {
    if (name === 'xmlns') declared.add('');
    else if (name.startsWith('xmlns:')) declared.add(name.slice(6));
  }
  // A tag that declares nothing shares its parent's bindings object: so do its declarations
  // (every Descriptor of a record, every header of a page).
  if (declared.size === 0) {
    const known = declarationsOfScope.get(tag.ns);
    if (known !== undefined) return known;
    const declarations = declarationsOf(tag.ns, declared);
    declarationsOfScope.set(tag.ns, declarations);
    return declarations;
  }
  return declarationsOf(tag.ns, declared);
}

/** The declarations of a tag that declares nothing itself, by its bindings object (see XmlTag.ns). */
const declarationsOfScope = new WeakMap<Record<string, string>, string>();

function declarationsOf(ns: Record<string, string>, declared: ReadonlySet<string>): string {
  let declarations = '';
  // `ns` holds inherited bindings on its prototype chain: for..in visits them too.
  for (const prefix in ns) {
    if (declared.has(prefix) || prefix === 'xml' || prefix === 'xmlns') continue;
    const uri = ns[prefix]!;
    declarations += prefix === '' ? ` xmlns="${escapeAttribute(uri)}"` : ` xmlns:${prefix}="${escapeAttribute(uri)}"`;
  }
  return declarations;
}
