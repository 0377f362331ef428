import { SiteMappingError } from './site-mapping-error.js';

/**
 * A site's base URL in the one form identifiers are made from: `HTTPS://Example.org:443/site/`
 * → `https://example.org/site` (the URL parser lower-cases scheme and host and drops the
 * default port; trailing slashes are removed). Throws SiteMappingError, quoting the value, for
 * anything but an http or https URL without query, fragment or credentials.
 */
export function normalizeBaseUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new SiteMappingError(`${JSON.stringify(value)} is not a URL`);
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.search || url.hash || url.username || url.password) {
    throw new SiteMappingError(`${JSON.stringify(value)} must be an http or https URL without query, fragment or credentials`);
  }
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
}
