// A record's DIDL as `oaibag serve` disseminates it (docs/serve.md, "Metadata formats"): the
// DIDL the bag keeps as received, every byte as it came except the Resources that carried the
// datastreams. Each datastream's Component gets a By-Reference Resource whose `ref` is the
// archive's own copy (a `ref` to the original site is rewritten, one is added where the record
// had only base64), and its By-Value Resource gets its base64 back when the payload is at most
// the By-Value limit and the client may read it (it is dropped otherwise). Digest Descriptors
// stay as they were.
import { escapeAttribute, NS } from '@oaibag/didl';
import { AIP_NAMESPACE } from '../aip/aip-metadata.js';
import type { PayloadLocation } from '../catalog/catalog-types.js';
import { ArchiverError } from '../core/errors.js';
import { scanXmlSpans } from '../core/xml-spans.js';

/** Where a payload's base64 goes in the text served. */
export interface Base64Part {
  base64: PayloadLocation;
}

export type DidlPart = string | Base64Part;

export interface DidlPayloads {
  /** The version's payload files, in the record's part order. */
  parts: readonly PayloadLocation[];
  /** The `ref` each By-Reference part was fetched from (part numbers from 1). */
  fetchedRefs: ReadonlyArray<{ part: number; ref: string }>;
  /** The archive's URL of a payload file. */
  urlOf(location: PayloadLocation): string;
  /** Payloads of at most this many bytes go By-Value too. */
  byValueMax: number;
  /** Whether the client may have this payload's bytes (archive-access.ts); when not, only its By-Reference ref is served. */
  mayRead(location: PayloadLocation): boolean;
}

interface ResourceSpan {
  openStart: number;
  openEnd: number;
  end: number;
  name: string;
  mimeType: string | undefined;
  ref: string | undefined;
  pointer?: { start: number; end: number; sha256: string };
}

interface Edit {
  start: number;
  end: number;
  parts: DidlPart[];
}

/** The DIDL text served for a record: strings, with the places where a payload's base64 goes. */
export function servedDidl(didl: string, payloads: DidlPayloads): DidlPart[] {
  const bySha = new Map(payloads.parts.map((part) => [part.sha256, part]));
  const byRef = new Map(payloads.fetchedRefs.map(({ part, ref }) => [ref, payloads.parts[part - 1]]));
  const edits: Edit[] = [];
  let component: { depth: number; resources: ResourceSpan[] } | undefined;
  let resource: (ResourceSpan & { depth: number }) | undefined;
  let depth = 0;
  scanXmlSpans(didl, {
    open(tag, start, end) {
      depth++;
      if (tag.uri === NS.didl && tag.local === 'Component' && !component) component = { depth, resources: [] };
      else if (tag.uri === NS.didl && tag.local === 'Resource' && component && !resource) {
        resource = { depth, openStart: start, openEnd: end, end, name: tag.name, mimeType: tag.attributes.mimeType?.value, ref: tag.attributes.ref?.value };
        component.resources.push(resource);
      } else if (tag.uri === AIP_NAMESPACE && tag.local === 'byValue' && resource) {
        resource.pointer = { start, end, sha256: tag.attributes.sha256?.value ?? '' };
      }
    },
    close(_name, _start, end) {
      if (resource && depth === resource.depth) {
        resource.end = end;
        resource = undefined;
      } else if (component && depth === component.depth) {
        edits.push(...componentEdits(didl, component.resources, bySha, byRef, payloads));
        component = undefined;
      }
      depth--;
    },
  });
  const served: DidlPart[] = [];
  let at = 0;
  for (const edit of edits.sort((a, b) => a.start - b.start)) {
    served.push(didl.slice(at, edit.start), ...edit.parts);
    at = edit.end;
  }
  served.push(didl.slice(at));
  return served.filter((part) => part !== '');
}

function componentEdits(
  didl: string,
  resources: readonly ResourceSpan[],
  bySha: ReadonlyMap<string, PayloadLocation>,
  byRef: ReadonlyMap<string, PayloadLocation | undefined>,
  payloads: DidlPayloads,
): Edit[] {
  const withPointer = resources.find((resource) => resource.pointer);
  const location = withPointer
    ? bySha.get(withPointer.pointer!.sha256)
    : resources.map((resource) => (resource.ref !== undefined ? byRef.get(resource.ref) : undefined)).find(Boolean);
  if (withPointer && !location) {
    throw new ArchiverError(
      'ERR_ARCHIVE_DAMAGED',
      `a By-Value Resource points to a payload (sha-256 ${withPointer.pointer!.sha256}) that is not one of its version's parts`,
    );
  }
  if (!location) return []; // a Component without a datastream of ours: as received
  const url = escapeAttribute(payloads.urlOf(location));
  const edits: Edit[] = [];
  const refs = resources.filter((resource) => resource.ref !== undefined && !resource.pointer);
  for (const resource of refs) {
    const tag = didl.slice(resource.openStart, resource.openEnd).replace(REF_ATTRIBUTE, `$1"${url}"`);
    edits.push({ start: resource.openStart, end: resource.openEnd, parts: [tag] });
  }
  if (withPointer) {
    const pointer = withPointer.pointer!;
    const byReference =
      refs.length === 0 ? `<${withPointer.name} mimeType="${escapeAttribute(withPointer.mimeType ?? 'application/octet-stream')}" ref="${url}"/>` : '';
    if (location.size <= payloads.byValueMax && payloads.mayRead(location)) {
      if (byReference) edits.push({ start: withPointer.openStart, end: withPointer.openStart, parts: [byReference] });
      edits.push({ start: pointer.start, end: pointer.end, parts: [{ base64: location }] });
    } else {
      edits.push({ start: withPointer.openStart, end: withPointer.end, parts: byReference ? [byReference] : [] });
    }
  }
  return edits;
}

/** The `ref` attribute of a start tag (not a prefixed one: those follow a `:`). */
const REF_ATTRIBUTE = /(\sref\s*=\s*)(?:"[^"]*"|'[^']*')/;
