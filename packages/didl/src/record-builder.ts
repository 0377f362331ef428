import { Base64Decoder } from './base64-decoder.js';
import { ByValueSink, type DatastreamHandler, type DeclineHeld, type IncomingDatastream } from './datastream.js';
import { DidlError, type DidlPosition } from './errors.js';
import type { DidlComponent, DidlDocument, DidlItem, DidlResource, HttpHeader, OaiHeader, OaiPage, ResumptionToken } from './model.js';
import { METADATA_ENTITY_TYPE, NS } from './namespaces.js';
import { ownedCopy, type ReceivedDidl, type ReceivedXmlCapture } from './received-xml.js';
import { checkDatastreams, checkRef, componentDigest, componentHeaders, getHeader, isSha256 } from './record-checks.js';
import { attribute, describe, plainAttributes, positionInText, trimXmlSpace } from './tag-helpers.js';
import { inheritedNamespaceDeclarations, XmlCapture } from './xml-capture.js';
import type { XmlTag as QualifiedTag } from './xml-tokenizer.js';

/** One record as the reader hands it over: an OAI-PMH header, a DIDL document, or both. */
export interface ReadRecord {
  header?: OaiHeader;
  didl?: DidlDocument;
  /** Set (in `recordErrors: 'report'` mode) when this record is unusable; the reader went on. */
  error?: DidlError;
  /** Namespace URI of the metadata when it was not DIDL (another format); the payload is skipped. */
  otherMetadataNamespace?: string;
  /** The DIDL element as received, By-Value content left out (only with `keepReceivedXml`). */
  receivedDidl?: ReceivedDidl;
  /** The OAI-PMH `header` element as received (only with `keepReceivedXml`). */
  receivedHeader?: Uint8Array;
  /**
   * Each OAI-PMH `about` container of the record as received, in order (only with
   * `keepReceivedXml`): provenance, rights, anything else a repository says about the record.
   */
  receivedAbout?: Uint8Array[];
}

export type RecordHandler = (record: ReadRecord) => void | Promise<void>;

export interface RecordBuilderOptions {
  onRecord?: RecordHandler | undefined;
  onDatastream?: DatastreamHandler | undefined;
  declineHeld?: DeclineHeld | undefined;
  recordErrors: 'throw' | 'report';
  maxDepth: number;
  maxMetadataChars: number;
  highWaterMark: number;
  /** See ReadDidlOptions.lenientIdentifier. */
  lenientIdentifier: boolean;
  /** Told where DIDL elements and By-Value contents begin and end, when they are kept as received. */
  received?: ReceivedXmlCapture;
}

/** What the driver needs from the builder to run the base64 fast path. */
export interface ActiveByValue {
  sink: ByValueSink;
  decoder: Base64Decoder;
  /** Set once the content was found bad: further bytes are skipped, not decoded. */
  discarding: boolean;
  /** Set when an entity reference appeared: the rest of the content goes through the tokenizer. */
  viaTokenizer: boolean;
  /**
   * The size the record's Content-Length promises, when a Descriptor before the Resource gave
   * one: the first byte past it fails the record at once, so a datastream that never ends costs
   * its consumer no more than the promise.
   */
  promisedSize?: number;
}

/** The longest attribute value accepted (the tokenizer bounds only what it must hold between writes). */
const MAX_ATTRIBUTE_CHARS = 64 * 1024;

interface ItemState {
  item: DidlItem;
  identifiers: string[];
  isMetadata: boolean;
  parent: ItemState | undefined;
  index: number[];
}

/** What was recognised inside a captured Descriptor or inline Resource. */
interface Interpretation {
  identifiers: string[];
  headers?: HttpHeader[];
  digestAlgorithm?: string;
  digestValue?: string;
  metadataMarker: boolean;
}

interface Frame {
  kind:
    | 'oai'
    | 'oai-verb'
    | 'oai-record'
    | 'oai-header'
    | 'oai-about'
    | 'oai-metadata'
    | 'field'
    | 'ignore'
    | 'didl'
    | 'item'
    | 'component'
    | 'descriptor'
    | 'inline-resource'
    | 'captured'
    | 'http-header'
    | 'fixity'
    | 'by-value'
    | 'by-ref';
  name: string;
  text?: string;
  onText?: (text: string) => void;
  item?: ItemState;
  component?: DidlComponent;
  interpretation?: Interpretation;
  onCaptured?: (xml: string, interpretation: Interpretation) => void;
}

interface RecordState {
  record: ReadRecord;
  top?: ItemState;
  documentId?: string;
  headerOnly: boolean;
  received?: ReceivedDidl;
}

/**
 * Turns the XML tokenizer's events into records. Synchronous like the tokenizer itself: whatever must be awaited
 * (the caller's handlers, backpressure) is queued with `schedule` and run by the driver
 * between two writes.
 */
export class RecordBuilder {
  readonly page: OaiPage = { errors: [] };
  rootKind: 'didl' | 'oai-pmh' | undefined;
  rootClosed = false;
  records = 0;
  active: ActiveByValue | undefined;

  private readonly stack: Frame[] = [];
  private current: RecordState | undefined;
  private capture: XmlCapture | undefined;
  private readonly tasks: Array<() => Promise<void>> = [];

  constructor(
    private readonly options: RecordBuilderOptions,
    private readonly where: () => DidlPosition,
  ) {}

  /** Async work queued by the last events, in order; the driver runs it before writing more. */
  takeTasks(): Array<() => Promise<void>> {
    return this.tasks.splice(0);
  }

  /** Whether any async work is queued (checked after each run of markup, most of which queue none). */
  get hasTasks(): boolean {
    return this.tasks.length > 0;
  }

  onOpenTag(tag: QualifiedTag): void {
    if (this.stack.length >= this.options.maxDepth) {
      throw new DidlError('ERR_DIDL_TOO_LARGE', `elements are nested deeper than ${this.options.maxDepth} levels`, { position: this.where() });
    }
    const attributes = tag.attributes;
    for (const name in attributes) {
      if (attributes[name]!.value.length > MAX_ATTRIBUTE_CHARS) {
        throw new DidlError('ERR_DIDL_TOO_LARGE', `an attribute of ${tag.name} is longer than ${MAX_ATTRIBUTE_CHARS} characters`, this.errorContext());
      }
    }
    const parent = this.stack[this.stack.length - 1];
    if (this.capture) {
      this.capture.open(tag);
      this.stack.push(this.interpretCaptured(tag, parent!));
      return;
    }
    if (!parent) {
      if (this.rootClosed) {
        throw new DidlError('ERR_DIDL_NOT_WELL_FORMED', `not well-formed XML: a second root element ${tag.name}`, { position: this.where() });
      }
      this.stack.push(this.openRoot(tag));
      return;
    }
    this.stack.push(this.openChild(tag, parent));
  }

  onText(text: string): void {
    const frame = this.stack[this.stack.length - 1];
    if (!frame) return;
    if (this.capture) this.capture.text(text);
    if (frame.kind === 'by-value') {
      this.decodeText(text);
      return;
    }
    if (frame.text !== undefined) {
      frame.text += text;
      if (frame.text.length > this.options.maxMetadataChars) {
        throw new DidlError('ERR_DIDL_TOO_LARGE', `text of ${frame.name} is longer than ${this.options.maxMetadataChars} characters`, {
          position: this.where(),
        });
      }
    }
  }

  onComment(text: string): void {
    this.capture?.comment(text);
  }

  onCloseTag(): void {
    const frame = this.stack.pop();
    if (!frame) return;
    if (this.capture) {
      const done = this.capture.close(frame.name);
      if (frame.text !== undefined) frame.onText?.(trimXmlSpace(frame.text));
      if (done) {
        const xml = this.capture.result;
        this.capture = undefined;
        frame.onCaptured?.(xml, frame.interpretation!);
      }
      return;
    }
    if (frame.text !== undefined) frame.onText?.(trimXmlSpace(frame.text));
    switch (frame.kind) {
      case 'by-value':
        this.closeByValue();
        break;
      case 'item':
        this.closeItem(frame.item!);
        break;
      case 'didl': {
        const received = this.options.received?.finish();
        if (received && this.current) this.current.received = received;
        if (this.rootKind === 'didl') this.closeRecord();
        break;
      }
      case 'oai-record':
        this.closeRecord();
        break;
      case 'oai-header': {
        const received = this.options.received?.finish();
        if (received && this.current) this.current.record.receivedHeader = joinedCopy(received);
        if (this.current?.headerOnly) this.closeRecord();
        break;
      }
      case 'oai-about': {
        const received = this.options.received?.finish();
        if (received && this.current) (this.current.record.receivedAbout ??= []).push(joinedCopy(received));
        break;
      }
      default:
        break;
    }
    if (this.stack.length === 0) this.rootClosed = true;
  }

  /** Decoded bytes from the fast path or from text events go through here. */
  deliver(bytes: Buffer): void {
    const active = this.active;
    if (!active || active.discarding || bytes.length === 0) return;
    const promised = active.promisedSize;
    if (promised !== undefined && active.sink.size + bytes.length > promised) {
      const found = active.sink.size + bytes.length;
      const context = this.errorContext();
      this.failByValue(
        new DidlError('ERR_DIDL_LENGTH_MISMATCH', `By-Value content is more than the ${promised} bytes its Content-Length says`, {
          ...context,
          expected: promised,
          found,
        }),
      );
      return;
    }
    if (!active.sink.write(bytes)) {
      const sink = active.sink;
      this.schedule(() => sink.demand());
    }
  }

  /** The By-Value content is not valid base64 (or otherwise bad): fail the record. */
  failByValue(error: DidlError): void {
    const active = this.active;
    if (active && !active.discarding) {
      active.discarding = true;
      const sink = active.sink;
      this.schedule(() => sink.abandon(error));
    }
    this.fail(error);
  }

  /** Called when reading stops with an error: release the caller's stream, if any. */
  async abort(error: Error): Promise<void> {
    const active = this.active;
    this.active = undefined;
    this.options.received?.discard();
    if (active) await active.sink.abandon(error);
  }

  private openRoot(tag: QualifiedTag): Frame {
    if (tag.uri === NS.oai && tag.local === 'OAI-PMH') {
      this.rootKind = 'oai-pmh';
      return { kind: 'oai', name: tag.name };
    }
    if (tag.uri === NS.didl && tag.local === 'DIDL') {
      this.rootKind = 'didl';
      this.current = { record: {}, headerOnly: false };
      return this.openDidl(tag);
    }
    throw new DidlError('ERR_DIDL_NOT_DIDL', `root element is ${describe(tag)}, not a DIDL document or an OAI-PMH response`, {
      position: this.where(),
    });
  }

  private openChild(tag: QualifiedTag, parent: Frame): Frame {
    const { uri, local } = tag;
    switch (parent.kind) {
      case 'oai':
        if (uri !== NS.oai) return this.ignore(tag);
        if (local === 'responseDate') return this.field(tag, (text) => (this.page.responseDate = text));
        if (local === 'request') {
          const attributes = plainAttributes(tag.attributes);
          return this.field(tag, (text) => (this.page.request = { url: text, attributes }));
        }
        if (local === 'error') {
          const code = attribute(tag, 'code') ?? '';
          return this.field(tag, (text) => this.page.errors.push({ code, message: text }));
        }
        this.page.verb = local;
        return { kind: 'oai-verb', name: tag.name };
      case 'oai-verb':
        if (uri !== NS.oai) return this.ignore(tag);
        if (local === 'record') {
          this.current = { record: {}, headerOnly: false };
          return { kind: 'oai-record', name: tag.name };
        }
        if (local === 'header') {
          this.current = { record: {}, headerOnly: true };
          return this.openHeader(tag);
        }
        if (local === 'resumptionToken') return this.openResumptionToken(tag);
        return this.ignore(tag);
      case 'oai-record':
        if (uri === NS.oai && local === 'header') return this.openHeader(tag);
        if (uri === NS.oai && local === 'metadata') return { kind: 'oai-metadata', name: tag.name };
        if (uri === NS.oai && local === 'about') {
          // Kept byte for byte: nothing inside is interpreted (no base64 is expected there).
          this.options.received?.start(inheritedNamespaceDeclarations(tag));
          return { kind: 'oai-about', name: tag.name };
        }
        return this.ignore(tag);
      case 'oai-header': {
        const header = this.current!.record.header!;
        if (uri !== NS.oai) return this.ignore(tag);
        if (local === 'identifier') return this.field(tag, (text) => (header.identifier = text));
        if (local === 'datestamp') return this.field(tag, (text) => (header.datestamp = text));
        if (local === 'setSpec') return this.field(tag, (text) => header.setSpecs.push(text));
        return this.ignore(tag);
      }
      case 'oai-metadata':
        if (uri === NS.didl && local === 'DIDL') return this.openDidl(tag);
        if (this.current) this.current.record.otherMetadataNamespace = uri;
        return this.ignore(tag);
      case 'didl':
        if (uri === NS.didl && local === 'Item' && !this.current?.top) return this.openItem(tag, undefined);
        if (uri === NS.didl && local === 'Container') {
          this.fail(new DidlError('ERR_DIDL_NOT_DIDL', 'a DIDL Container is not supported: one Item per record is expected', { position: this.where() }));
        }
        return this.ignore(tag);
      case 'item': {
        const state = parent.item!;
        if (uri !== NS.didl) return this.ignore(tag);
        if (local === 'Descriptor') return this.openDescriptor(tag, state.item, state);
        if (local === 'Item') return this.openItem(tag, state);
        if (local === 'Component') {
          const component: DidlComponent = { resources: [], descriptors: [] };
          state.item.components.push(component);
          return { kind: 'component', name: tag.name, item: state, component };
        }
        return this.ignore(tag);
      }
      case 'component':
        if (uri !== NS.didl) return this.ignore(tag);
        if (local === 'Descriptor') return this.openDescriptor(tag, parent.component!, undefined);
        if (local === 'Resource') return this.openResource(tag, parent);
        return this.ignore(tag);
      case 'by-value':
        this.failByValue(new DidlError('ERR_DIDL_BAD_BASE64', `element ${tag.name} inside base64 content`, this.errorContext()));
        return this.ignore(tag);
      default:
        return this.ignore(tag);
    }
  }

  private openHeader(tag: QualifiedTag): Frame {
    const header: OaiHeader = { identifier: '', datestamp: '', setSpecs: [], deleted: attribute(tag, 'status') === 'deleted' };
    this.current!.record.header = header;
    this.options.received?.start(inheritedNamespaceDeclarations(tag));
    return { kind: 'oai-header', name: tag.name };
  }

  private openResumptionToken(tag: QualifiedTag): Frame {
    const number = (name: string) => {
      const value = attribute(tag, name);
      return value !== undefined && /^\d+$/.test(value) ? Number(value) : undefined;
    };
    const token: ResumptionToken = { value: '' };
    const completeListSize = number('completeListSize');
    const cursor = number('cursor');
    const expirationDate = attribute(tag, 'expirationDate');
    if (completeListSize !== undefined) token.completeListSize = completeListSize;
    if (cursor !== undefined) token.cursor = cursor;
    if (expirationDate !== undefined) token.expirationDate = expirationDate;
    this.page.resumptionToken = token;
    return this.field(tag, (text) => (token.value = text));
  }

  private openDidl(tag: QualifiedTag): Frame {
    const documentId = attribute(tag, 'DIDLDocumentId');
    if (this.current && documentId !== undefined) this.current.documentId = documentId;
    this.options.received?.start(inheritedNamespaceDeclarations(tag));
    return { kind: 'didl', name: tag.name };
  }

  private openItem(tag: QualifiedTag, parent: ItemState | undefined): Frame {
    const item: DidlItem = { components: [], items: [], descriptors: [] };
    const index = parent ? [...parent.index, parent.item.items.length] : [];
    const state: ItemState = { item, identifiers: [], isMetadata: false, parent, index };
    if (!parent && this.current) this.current.top = state;
    return { kind: 'item', name: tag.name, item: state };
  }

  private openDescriptor(tag: QualifiedTag, owner: DidlItem | DidlComponent, item: ItemState | undefined): Frame {
    this.capture = new XmlCapture(this.options.maxMetadataChars, `Descriptor ${tag.name}`, () => this.errorContext());
    this.capture.open(tag);
    const interpretation: Interpretation = { identifiers: [], metadataMarker: false };
    return {
      kind: 'descriptor',
      name: tag.name,
      interpretation,
      onCaptured: (xml, found) => this.applyDescriptor(xml, found, owner, item),
    };
  }

  private applyDescriptor(xml: string, found: Interpretation, owner: DidlItem | DidlComponent, item: ItemState | undefined): void {
    let recognised = false;
    if (found.identifiers.length > 0) {
      recognised = true;
      if (item) item.identifiers.push(...found.identifiers);
    }
    if (found.headers) {
      recognised = true;
      owner.headers = [...(owner.headers ?? []), ...found.headers];
    }
    if (found.digestValue !== undefined) {
      recognised = true;
      owner.digest = { algorithm: found.digestAlgorithm ?? 'SHA-256', value: found.digestValue.toLowerCase() };
    }
    if (found.metadataMarker) {
      recognised = true;
      if (item) item.isMetadata = true;
    }
    if (!recognised) owner.descriptors.push(xml);
  }

  private openResource(tag: QualifiedTag, parent: Frame): Frame {
    const component = parent.component!;
    const resource: DidlResource = {};
    const mimeType = attribute(tag, 'mimeType');
    const ref = attribute(tag, 'ref');
    const encoding = attribute(tag, 'encoding');
    if (mimeType !== undefined) resource.mimeType = mimeType;
    component.resources.push(resource);
    if (ref !== undefined) {
      resource.ref = ref;
      const error = checkRef(ref, this.where(), this.identifier());
      if (error) this.fail(error);
      return { kind: 'by-ref', name: tag.name };
    }
    if (encoding !== undefined && encoding.toLowerCase() !== 'base64') {
      resource.encoding = encoding;
      this.fail(new DidlError('ERR_DIDL_UNSUPPORTED_ENCODING', `Resource encoding "${encoding}" is not supported (only base64)`, this.errorContext()));
      return this.ignore(tag);
    }
    if (encoding !== undefined) return this.openByValue(tag, parent, resource);
    this.capture = new XmlCapture(this.options.maxMetadataChars, `inline Resource ${tag.name}`, () => this.errorContext());
    this.capture.open(tag);
    return {
      kind: 'inline-resource',
      name: tag.name,
      interpretation: { identifiers: [], metadataMarker: false },
      onCaptured: (xml, found) => {
        resource.inline = xml;
        if (found.headers) component.headers = [...(component.headers ?? []), ...found.headers];
        if (found.digestValue !== undefined) component.digest = { algorithm: found.digestAlgorithm ?? 'SHA-256', value: found.digestValue.toLowerCase() };
      },
    };
  }

  private openByValue(tag: QualifiedTag, parent: Frame, resource: DidlResource): Frame {
    const item = parent.item!;
    const identifier = this.identifier();
    // Built property by property: spreading optional parts into a literal cost a By-Value
    // Resource more than the rest of its start tag (a runtime clone per spread).
    const info: Omit<IncomingDatastream, 'bytes'> = {
      itemPath: item.index,
      componentIndex: item.item.components.length - 1,
      resourceIndex: parent.component!.resources.length - 1,
    };
    const header = this.current?.record.header;
    if (header) info.header = header;
    if (identifier !== undefined) info.identifier = identifier;
    if (resource.mimeType !== undefined) info.mimeType = resource.mimeType;
    const promised = componentDigest(item.item, parent.component!);
    if (promised && isSha256(promised.algorithm)) info.promisedSha256 = promised.value;
    // Declined: no stream and no handler call for these bytes, only their size and digest.
    const declined = info.promisedSha256 !== undefined && this.options.declineHeld?.(info.promisedSha256, info) === true;
    const sink = new ByValueSink(declined ? undefined : this.options.onDatastream, info, this.options.highWaterMark);
    const declaredLength = getHeader(componentHeaders(item.item, parent.component!), 'Content-Length')?.trim();
    const active: ActiveByValue = { sink, decoder: new Base64Decoder(), discarding: false, viaTokenizer: false };
    if (declaredLength !== undefined && /^\d{1,15}$/.test(declaredLength)) active.promisedSize = Number(declaredLength);
    this.active = active;
    resource.byValue = { encoding: 'base64', size: 0, sha256: '' };
    this.options.received?.byValue(resource, tag.name, tag.isSelfClosing);
    const byValue = resource.byValue;
    this.closeByValueHook = () => {
      const problem = active.discarding ? undefined : active.decoder.end();
      if (problem) this.failByValue(new DidlError('ERR_DIDL_BAD_BASE64', problem, this.errorContext()));
      const { size, sha256 } = sink.close();
      byValue.size = size;
      byValue.sha256 = sha256;
      this.schedule(() => sink.settled());
    };
    return { kind: 'by-value', name: tag.name };
  }

  private closeByValueHook: (() => void) | undefined;

  private closeByValue(): void {
    this.closeByValueHook?.();
    this.closeByValueHook = undefined;
    this.active = undefined;
  }

  private decodeText(text: string): void {
    const active = this.active;
    if (!active || active.discarding) return;
    const bytes = Buffer.from(text, 'utf8');
    const result = active.decoder.write(bytes);
    this.deliver(result.bytes);
    if (result.stoppedAt < bytes.length) {
      // Everything before the stop is base64, so byte and character indices agree there.
      const at = result.stoppedAt;
      const shown = JSON.stringify(String.fromCodePoint(text.codePointAt(at)!));
      const reason = active.decoder.sawPadding ? `${shown} after base64 padding` : `character ${shown} is not base64`;
      this.failByValue(new DidlError('ERR_DIDL_BAD_BASE64', reason, { ...this.errorContext(), position: positionInText(text, at, this.where()) }));
    }
  }

  private closeItem(state: ItemState): void {
    const { item, identifiers } = state;
    if (identifiers.length > 0) item.identifier = identifiers[0]!;
    const parent = state.parent;
    if (!parent) {
      if (this.options.lenientIdentifier) {
        if (identifiers.length > 1) item.otherIdentifiers = identifiers.slice(1);
        return; // none: closeRecord falls back to DIDLDocumentId or the OAI header
      }
      if (identifiers.length === 0) {
        this.fail(new DidlError('ERR_DIDL_NO_IDENTIFIER', 'the top Item has no dii:Identifier', this.errorContext()));
      } else if (identifiers.length > 1) {
        this.fail(
          new DidlError(
            'ERR_DIDL_REPEATED_IDENTIFIER',
            `the top Item has ${identifiers.length} dii:Identifier values (${identifiers.join(', ')})`,
            this.errorContext(),
          ),
        );
      }
      return;
    }
    if (state.isMetadata) {
      // aDORe style: a nested Item typed entity#metadata describes its parent.
      const headers = item.headers ?? item.components.find((c) => c.headers)?.headers;
      const digest = item.digest ?? item.components.find((c) => c.digest)?.digest;
      if (headers) parent.item.headers = [...(parent.item.headers ?? []), ...headers];
      if (digest && !parent.item.digest) parent.item.digest = digest;
      parent.item.descriptors.push(...item.descriptors);
      return;
    }
    parent.item.items.push(item);
  }

  private closeRecord(): void {
    const state = this.current;
    this.current = undefined;
    if (!state) return;
    const { record } = state;
    if (record.header && !record.header.identifier) {
      this.fail(new DidlError('ERR_DIDL_NO_IDENTIFIER', 'OAI-PMH header has no identifier', { position: this.where() }), record);
    }
    if (state.top) {
      const { identifier, from } = this.documentIdentifier(state.top.item, state.documentId, record.header?.identifier);
      const document: DidlDocument = { identifier, item: state.top.item };
      if (from !== undefined) document.identifierFrom = from;
      if (!identifier && this.options.lenientIdentifier) {
        this.fail(
          new DidlError(
            'ERR_DIDL_NO_IDENTIFIER',
            'the record has no identifier: no dii:Identifier on the top Item, no DIDLDocumentId, no OAI-PMH header',
            this.errorContext(),
          ),
          record,
        );
      }
      if (state.documentId !== undefined) document.documentId = state.documentId;
      record.didl = document;
      if (state.received) record.receivedDidl = state.received;
      if (!record.error && identifier) {
        const mismatch = checkDatastreams(document, this.where());
        if (mismatch) this.fail(mismatch, record);
      }
    } else if (this.rootKind === 'didl') {
      this.fail(new DidlError('ERR_DIDL_NO_IDENTIFIER', 'the DIDL document has no Item', { position: this.where() }), record);
    }
    this.records++;
    const onRecord = this.options.onRecord;
    if (onRecord) this.schedule(async () => onRecord(record));
  }

  /** The record's identifier and where it came from (the fallbacks only when lenient). */
  private documentIdentifier(
    item: DidlItem,
    documentId: string | undefined,
    headerIdentifier: string | undefined,
  ): { identifier: string; from?: DidlDocument['identifierFrom'] } {
    if (item.identifier) return { identifier: item.identifier };
    if (!this.options.lenientIdentifier) return { identifier: '' };
    if (documentId) return { identifier: documentId, from: 'DIDLDocumentId' };
    if (headerIdentifier) return { identifier: headerIdentifier, from: 'oai-header' };
    return { identifier: '' };
  }

  private interpretCaptured(tag: QualifiedTag, parent: Frame): Frame {
    const interpretation = parent.interpretation!;
    const frame: Frame = { kind: 'captured', name: tag.name, interpretation };
    if (parent.kind === 'http-header') {
      // One child per header; a `name` attribute carries names that are not XML names.
      const name = attribute(tag, 'name') ?? tag.local;
      frame.text = '';
      frame.onText = (value) => interpretation.headers!.push({ name, value });
      return frame;
    }
    if (parent.kind === 'fixity') {
      if (tag.uri === NS.premis && tag.local === 'messageDigestAlgorithm') {
        frame.text = '';
        frame.onText = (value) => (interpretation.digestAlgorithm = value);
      } else if (tag.uri === NS.premis && tag.local === 'messageDigest') {
        frame.text = '';
        frame.onText = (value) => (interpretation.digestValue = value);
      }
      return frame;
    }
    if (tag.uri === NS.dii && tag.local === 'Identifier') {
      frame.text = '';
      frame.onText = (value) => interpretation.identifiers.push(value);
    } else if (tag.uri === NS.http && tag.local === 'header') {
      frame.kind = 'http-header';
      interpretation.headers ??= [];
    } else if (tag.uri === NS.premis && tag.local === 'fixity') {
      frame.kind = 'fixity';
    } else if (tag.uri === NS.dc && tag.local === 'type') {
      frame.text = '';
      frame.onText = (value) => {
        if (value === METADATA_ENTITY_TYPE) interpretation.metadataMarker = true;
      };
    }
    return frame;
  }

  private field(tag: QualifiedTag, onText: (text: string) => void): Frame {
    return { kind: 'field', name: tag.name, text: '', onText };
  }

  private ignore(tag: QualifiedTag): Frame {
    return { kind: 'ignore', name: tag.name };
  }

  private identifier(): string | undefined {
    const top = this.current?.top;
    return top?.identifiers[0] ?? this.current?.record.header?.identifier ?? undefined;
  }

  /** Position and record, for errors raised here or by the driver. */
  errorContext(): { position: DidlPosition; identifier?: string } {
    const identifier = this.identifier();
    return identifier ? { position: this.where(), identifier } : { position: this.where() };
  }

  /** A record-level problem: thrown, or kept on the record so reading can go on. */
  private fail(error: DidlError, record = this.current?.record): void {
    if (this.options.recordErrors === 'throw') throw error;
    if (record && !record.error) record.error = error;
  }

  private schedule(task: () => Promise<void>): void {
    this.tasks.push(task);
  }
}

/**
 * A header or an `about` as received, in one buffer of its own: `finish` joined its runs into
 * such a buffer already (nothing By-Value is inside), so it is not copied a second time.
 */
function joinedCopy(received: ReceivedDidl): Uint8Array {
  const parts = received.parts;
  return parts.length === 1 && parts[0] instanceof Uint8Array ? parts[0] : ownedCopy(parts as Uint8Array[]);
}
