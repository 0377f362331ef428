import { ArchiverError } from './errors.js';
import { shown } from './remote-text.js';

/** What a URL the user gives may carry besides scheme, host and path. */
export interface HttpUrlRules {
  /**
   * A query or a fragment is refused: the URL is one others are given with paths appended
   * (`serve --base-url`, `export-rdf --base-url`), where `?…` or `#…` would end up in the middle.
   */
  pathOnly?: boolean;
}

/** Why a URL the user gave is refused, with what to do about it. */
export interface HttpUrlProblem {
  problem: string;
  hint: string;
}

/**
 * Why `value` is not an absolute http(s) URL with a host, or undefined when it is one. A URL
 * with a user name or password is refused too: a base URL is a source's identity in the catalog,
 * bag-info.txt and every log line, where a password must not be (harvest and mirror take
 * `--user` and `--password-file`). White space or a control character anywhere is refused
 * rather than trimmed, so that the URL stored is the URL given.
 */
export function httpUrlProblem(value: string, rules: HttpUrlRules = {}): HttpUrlProblem | undefined {
  if (value === '') return { problem: 'is empty', hint: 'give an http(s) URL, e.g. https://example.org/oai' };
  // `localhost:8080/oai` is a host and a port, not the scheme `localhost`.
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):(?!\d)/.exec(value)?.[1];
  if (scheme === undefined) {
    const rest = value.replace(/^\/+/, '');
    return { problem: 'is not an http(s) URL', hint: `write https://${shown(rest, 80)} or http://${shown(rest, 80)}` };
  }
  if (!/^https?$/i.test(scheme)) {
    return { problem: `has the scheme ${shown(scheme.toLowerCase(), 20)}, not http or https`, hint: 'only http:// and https:// URLs are harvested and served' };
  }
  const rest = value.slice(scheme.length + 1);
  if (!rest.startsWith('//')) return { problem: 'is not an absolute http(s) URL', hint: `write ${scheme}://${shown(rest.replace(/^\/+/, ''), 80)}` };
  if (/[\s\p{Cc}]/u.test(value)) return { problem: 'contains white space or a control character', hint: 'write the URL without it (encode a space as %20)' };
  if (!URL.canParse(value)) return { problem: 'is not a valid URL', hint: 'check the host name and the port (1-65535)' };
  const url = new URL(value);
  if (url.hostname === '') return { problem: 'has no host', hint: 'write the host after http:// or https://' };
  if (url.username !== '' || url.password !== '') {
    return { problem: 'carries a user name or password', hint: 'leave them out of the URL; harvest and mirror take --user and --password-file' };
  }
  if (rules.pathOnly && (url.search !== '' || url.hash !== '' || value.includes('?') || value.includes('#'))) {
    return { problem: 'has a query or a fragment', hint: 'give the scheme, host and path only' };
  }
  return undefined;
}

/**
 * `value` when it is an absolute http(s) URL with a host (see {@link httpUrlProblem}); otherwise
 * ERR_ARCHIVE_USAGE naming `name` (the option, argument or field) and the value, e.g.
 * `--base-url: "archive.example.org" is not an http(s) URL` (hint: write https://archive.example.org).
 * The one check of every URL a user gives, in the commands and at the library's edge.
 */
export function checkHttpUrl(value: string, name: string, rules: HttpUrlRules = {}): string {
  const found = httpUrlProblem(value, rules);
  if (found === undefined) return value;
  throw new ArchiverError('ERR_ARCHIVE_USAGE', `${name}: ${JSON.stringify(shown(withoutPassword(value)))} ${found.problem}`, { hint: found.hint });
}

/** The URL with its password replaced by `***`, so that an error message never repeats one. */
function withoutPassword(value: string): string {
  return value.replace(/^([A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#@]*?:)[^/?#@]*@/, '$1***@');
}
