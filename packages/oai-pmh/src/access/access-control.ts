import { createHash } from 'node:crypto';
import { type AuthConfig, emptyAuthConfig, normalizeUserName, type ProtectRule } from './auth-file.js';
import { verifyPassword } from './password-hash.js';

/**
 * What one request may see. The index filters lists with `hiddenPrefixes` (range
 * conditions in SQL); GetRecord and the static server ask `canSee`. Both are built from the
 * same list with `isUnderPrefix`, so a record can never be listed yet refused, or the reverse.
 */
export interface Viewer {
  /** The authenticated user, or null for a request without credentials. */
  readonly user: string | null;
  /**
   * Rule prefixes (relative form, see `ProtectRule`) whose paths this viewer may not see,
   * sorted, without duplicates and without prefixes already covered by another one.
   * `''` means the viewer sees nothing at all.
   */
  readonly hiddenPrefixes: readonly string[];
  /** True when the index path `relPath` (no leading '/') is visible to this viewer. */
  canSee(relPath: string): boolean;
}

/** The WWW-Authenticate value of a 401; charset tells browsers to send UTF-8 (RFC 7617). */
export function basicChallenge(realm: string): string {
  return `Basic realm="${realm}", charset="UTF-8"`;
}

/** oaibag-repository's challenge. */
export const challengeHeader = basicChallenge('oaibag-repository');

/**
 * True when `relPath` is protected by a rule with `prefix`. A prefix ending in '/' covers
 * everything below that folder; any other prefix covers the path itself and everything
 * below it, so `private` covers `private/a` but not `private-notes.txt`; `''` covers all.
 */
export function isUnderPrefix(relPath: string, prefix: string): boolean {
  if (prefix === '' || prefix.endsWith('/')) return relPath.startsWith(prefix);
  return relPath === prefix || relPath.startsWith(`${prefix}/`);
}

/** How many successful logins are remembered; beyond that the oldest is forgotten. */
const CACHE_LIMIT = 1000;

/**
 * A hash no password produces in practice (its key is all zeros): verifying an unknown user
 * against it costs as much as a real check, so response times do not reveal which user
 * names exist.
 */
const DECOY_HASH = '$scrypt$ln=15,r=8,p=1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';

/**
 * Decides who a request is and what it may see, from the `--auth` configuration (or none).
 *
 * Rules combine by intersection: a path is visible to a user only if EVERY rule whose prefix
 * covers it allows that user, so a nested rule can narrow access but never widen it. The
 * anonymous viewer is allowed by no rule and sees only unprotected paths.
 */
export class AccessControl {
  /** The viewer of requests without credentials. */
  readonly anonymous: Viewer;
  private readonly users: ReadonlyMap<string, string>;
  private readonly viewers = new Map<string, Viewer>();
  /** sha-256 of an Authorization value that verified → its user; Map order is recency. */
  private readonly verified = new Map<string, string>();
  /** Checks in progress, so a browser's burst of parallel requests costs one scrypt run. */
  private readonly pending = new Map<string, Promise<string | null>>();

  constructor(config: AuthConfig = emptyAuthConfig()) {
    this.users = new Map(config.users);
    this.anonymous = makeViewer(null, config.rules);
    for (const user of this.users.keys()) this.viewers.set(user, makeViewer(user, config.rules));
  }

  /** True when an auth file protects at least one path. */
  get protectsAnything(): boolean {
    return this.anonymous.hiddenPrefixes.length > 0;
  }

  /** The viewer of a known user (or the anonymous viewer for null); undefined for an unknown name. */
  viewerFor(user: string | null): Viewer | undefined {
    return user === null ? this.anonymous : this.viewers.get(normalizeUserName(user));
  }

  /**
   * The viewer for a request's Authorization header. No header → the anonymous viewer.
   * Right Basic credentials → that user's viewer. Anything else (unknown user, wrong
   * password, another scheme, bad base64, no ':', not UTF-8, an empty header) → null, which
   * the server answers with 401 and `challengeHeader`: a typo in a harvester's credentials
   * must be loud, not a silently smaller view.
   *
   * Only successes are cached, keyed by the digest of the whole header value, so a wrong
   * password is a different key and is always checked with scrypt.
   */
  async authenticate(authorization: string | undefined): Promise<Viewer | null> {
    if (authorization === undefined) return this.anonymous;
    const key = createHash('sha256').update(authorization, 'utf8').digest('base64');
    const known = this.verified.get(key);
    if (known !== undefined) {
      this.verified.delete(key);
      this.verified.set(key, known);
      return this.viewers.get(known) ?? null;
    }
    let check = this.pending.get(key);
    if (check === undefined) {
      check = this.check(authorization);
      this.pending.set(key, check);
      const settled = (): void => {
        this.pending.delete(key);
      };
      check.then(settled, settled);
    }
    const user = await check;
    if (user === null) return null;
    this.remember(key, user);
    return this.viewers.get(user) ?? null;
  }

  private async check(authorization: string): Promise<string | null> {
    const credentials = parseBasicCredentials(authorization);
    if (credentials === null) return null;
    const user = normalizeUserName(credentials.user);
    const hash = this.users.get(user);
    const matches = await verifyPassword(credentials.password, hash ?? DECOY_HASH);
    return matches && hash !== undefined ? user : null;
  }

  private remember(key: string, user: string): void {
    this.verified.delete(key);
    this.verified.set(key, user);
    while (this.verified.size > CACHE_LIMIT) {
      const oldest = this.verified.keys().next().value;
      if (oldest === undefined) break;
      this.verified.delete(oldest);
    }
  }
}

/**
 * Reads `Basic <base64(user:password)>`. The scheme is case-insensitive (RFC 9110); the
 * base64 must be strict (standard alphabet, optional padding) and the decoded bytes valid
 * UTF-8. The user name ends at the first ':', so passwords may contain ':' but names not.
 */
export function parseBasicCredentials(authorization: string): { user: string; password: string } | null {
  const match = /^[ \t]*basic[ \t]+([A-Za-z0-9+/]+={0,2})[ \t]*$/i.exec(authorization);
  const token = match?.[1];
  if (token === undefined) return null;
  const unpadded = token.replace(/=+$/, '');
  if (unpadded.length % 4 === 1 || (token.length !== unpadded.length && token.length % 4 !== 0)) return null;
  const bytes = Buffer.from(unpadded, 'base64');
  if (bytes.toString('base64').replace(/=+$/, '') !== unpadded) return null;
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return null;
  }
  const colon = text.indexOf(':');
  if (colon < 0) return null;
  return { user: text.slice(0, colon), password: text.slice(colon + 1) };
}

/** The viewer of `user` (null: anonymous): hidden are the prefixes of the rules that do not allow it. */
function makeViewer(user: string | null, rules: readonly ProtectRule[]): Viewer {
  const refused = rules.filter((rule) => !allows(rule, user)).map((rule) => rule.prefix);
  const unique = [...new Set(refused)].sort();
  const hiddenPrefixes = Object.freeze(unique.filter((prefix) => !unique.some((other) => other !== prefix && isUnderPrefix(prefix, other))));
  return Object.freeze({
    user,
    hiddenPrefixes,
    canSee: (relPath: string) => !hiddenPrefixes.some((prefix) => isUnderPrefix(relPath, prefix)),
  });
}

function allows(rule: ProtectRule, user: string | null): boolean {
  if (user === null) return false;
  return rule.users === 'any-user' || rule.users.has(user);
}

/**
 * A symbolic link may be exported only if every rule protecting its target also protects
 * the link, so that a link never publishes a protected file at a less protected URL.
 */
export function linkKeepsProtection(config: AuthConfig): (linkPath: string, targetPath: string) => boolean {
  return (linkPath, targetPath) => config.rules.every((rule) => !isUnderPrefix(targetPath, rule.prefix) || isUnderPrefix(linkPath, rule.prefix));
}
