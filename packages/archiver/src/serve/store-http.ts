// Requests to a remote SPARQL store (`serve --sparql-store`), with its account when one is
// given: HTTP Digest (RFC 7616, MD5 or SHA-256, qop=auth: Virtuoso's /sparql-auth) or Basic
// (Fuseki, GraphDB), whichever the store asks for in its 401. The challenge is kept and used
// again with the next nonce count, so that a write is sent once rather than twice.
import { createHash, randomBytes } from 'node:crypto';

export interface StoreCredentials {
  user: string;
  password: string;
}

interface Challenge {
  scheme: 'basic' | 'digest';
  params: Record<string, string>;
  count: number;
}

export interface StoreRequest {
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string;
  signal?: AbortSignal;
}

/** One store's endpoint with its account: `send` answers a request, authenticating when asked to. */
export class StoreClient {
  private challenge: Challenge | undefined;

  constructor(
    readonly url: string,
    private readonly credentials: StoreCredentials | undefined,
  ) {}

  async send(request: StoreRequest, search = ''): Promise<Response> {
    const url = this.url + search;
    const attempt = (authorization?: string) =>
      fetch(url, {
        method: request.method,
        headers: { ...request.headers, ...(authorization ? { Authorization: authorization } : {}) },
        ...(request.body !== undefined ? { body: request.body } : {}),
        ...(request.signal ? { signal: request.signal } : {}),
        // A store that redirects is given its final URL in the options instead.
        redirect: 'manual',
      });
    let response = await attempt(this.authorization(request.method, url));
    if (response.status !== 401 || !this.credentials) return response;
    const offered = parseChallenge(response.headers.get('www-authenticate'));
    if (!offered) return response;
    await response.body?.cancel();
    this.challenge = offered;
    response = await attempt(this.authorization(request.method, url));
    return response;
  }

  private authorization(method: string, url: string): string | undefined {
    const challenge = this.challenge;
    const credentials = this.credentials;
    if (!challenge || !credentials) return undefined;
    if (challenge.scheme === 'basic') return `Basic ${Buffer.from(`${credentials.user}:${credentials.password}`).toString('base64')}`;
    const { realm = '', nonce = '', opaque, qop, algorithm = 'MD5' } = challenge.params;
    const hashName = algorithm.toUpperCase().startsWith('SHA-256') ? 'sha256' : 'md5';
    const hash = (text: string) => createHash(hashName).update(text).digest('hex');
    const target = new URL(url);
    const uri = target.pathname + target.search;
    const count = (++challenge.count).toString(16).padStart(8, '0');
    const cnonce = randomBytes(8).toString('hex');
    const ha1 = hash(`${credentials.user}:${realm}:${credentials.password}`);
    const ha2 = hash(`${method}:${uri}`);
    const withQop = qop?.split(',').some((value) => value.trim() === 'auth') === true;
    const response = withQop ? hash(`${ha1}:${nonce}:${count}:${cnonce}:auth:${ha2}`) : hash(`${ha1}:${nonce}:${ha2}`);
    const fields = [
      `username="${quoted(credentials.user)}"`,
      `realm="${quoted(realm)}"`,
      `nonce="${quoted(nonce)}"`,
      `uri="${quoted(uri)}"`,
      `algorithm=${algorithm}`,
      `response="${response}"`,
      ...(opaque !== undefined ? [`opaque="${quoted(opaque)}"`] : []),
      ...(withQop ? ['qop=auth', `nc=${count}`, `cnonce="${cnonce}"`] : []),
    ];
    return `Digest ${fields.join(', ')}`;
  }
}

function quoted(value: string): string {
  return value.replace(/["\\]/g, (char) => `\\${char}`);
}

/** The first challenge of a WWW-Authenticate header that this client answers (Digest before Basic). */
function parseChallenge(header: string | null): Challenge | undefined {
  if (!header) return undefined;
  if (/^\s*digest\s/i.test(header)) {
    const params: Record<string, string> = {};
    for (const match of header.replace(/^\s*digest\s+/i, '').matchAll(/([A-Za-z0-9_-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]+))/g)) {
      params[match[1]!.toLowerCase()] = match[2] !== undefined ? match[2].replace(/\\(.)/g, '$1') : match[3]!;
    }
    return { scheme: 'digest', params, count: 0 };
  }
  if (/^\s*basic\b/i.test(header)) return { scheme: 'basic', params: {}, count: 0 };
  return undefined;
}
