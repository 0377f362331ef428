import { DidlError, type DidlPosition } from './errors.js';
import type { DidlComponent, DidlDocument, DidlItem, HttpHeader } from './model.js';

/** Value of the first header named `name` (case-insensitive), or undefined. */
export function getHeader(headers: readonly HttpHeader[] | undefined, name: string): string | undefined {
  if (!headers) return undefined;
  const wanted = name.toLowerCase();
  return headers.find((header) => header.name.toLowerCase() === wanted)?.value;
}

/**
 * The headers that describe a Component: its own, or, when the Item has a single Component
 * (the mod_oai case), the Item's. With several Components an Item-level Content-Length
 * cannot be attributed to any one of them, so none is.
 */
export function componentHeaders(item: DidlItem, component: DidlComponent): HttpHeader[] | undefined {
  return component.headers ?? (item.components.length === 1 ? item.headers : undefined);
}

/** Same rule as componentHeaders, for the fixity digest. */
export function componentDigest(item: DidlItem, component: DidlComponent) {
  return component.digest ?? (item.components.length === 1 ? item.digest : undefined);
}

/** A `ref` must be an absolute http or https URL: anything else is not ours to fetch. */
export function checkRef(ref: string, position: DidlPosition, identifier?: string): DidlError | undefined {
  // The common case without building a URL (one per By-Reference Resource of a page).
  if ((ref.startsWith('http://') || ref.startsWith('https://')) && URL.canParse(ref)) return undefined;
  let url: URL;
  try {
    url = new URL(ref);
  } catch {
    return new DidlError('ERR_DIDL_BAD_REF', `Resource ref "${ref}" is not an absolute URL`, { position, identifier });
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return new DidlError('ERR_DIDL_BAD_REF', `Resource ref "${ref}" has scheme ${url.protocol.slice(0, -1)}; only http and https are accepted`, {
      position,
      identifier,
    });
  }
  return undefined;
}

/**
 * Checks every By-Value datastream of the document against the size and digest the
 * record declares for it. Returns the first mismatch.
 */
export function checkDatastreams(document: DidlDocument, position: DidlPosition): DidlError | undefined {
  return checkItem(document.item, document.identifier, position);
}

function checkItem(item: DidlItem, identifier: string, position: DidlPosition): DidlError | undefined {
  for (const component of item.components) {
    const headers = componentHeaders(item, component);
    const digest = componentDigest(item, component);
    for (const resource of component.resources) {
      if (!resource.byValue) continue;
      const declaredLength = getHeader(headers, 'Content-Length');
      if (declaredLength !== undefined) {
        if (!/^\s*\d+\s*$/.test(declaredLength)) {
          return new DidlError('ERR_DIDL_BAD_HEADER', `Content-Length "${declaredLength}" is not a number`, { position, identifier });
        }
        const expected = Number(declaredLength);
        if (expected !== resource.byValue.size) {
          return new DidlError('ERR_DIDL_LENGTH_MISMATCH', `By-Value content is ${resource.byValue.size} bytes but Content-Length says ${expected}`, {
            position,
            identifier,
            expected,
            found: resource.byValue.size,
          });
        }
      }
      if (digest && isSha256(digest.algorithm) && digest.value !== resource.byValue.sha256) {
        return new DidlError('ERR_DIDL_DIGEST_MISMATCH', `By-Value content has sha-256 ${resource.byValue.sha256} but the record says ${digest.value}`, {
          position,
          identifier,
          expected: digest.value,
          found: resource.byValue.sha256,
        });
      }
    }
  }
  for (const nested of item.items) {
    const error = checkItem(nested, identifier, position);
    if (error) return error;
  }
  return undefined;
}

/** Accepts the spellings PREMIS registries and tools use for SHA-256. */
export function isSha256(algorithm: string): boolean {
  return /^sha-?256$/i.test(algorithm.trim());
}
