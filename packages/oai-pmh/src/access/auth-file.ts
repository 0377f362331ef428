import { readFile } from 'node:fs/promises';
import { isPasswordHash } from './password-hash.js';

/**
 * The `--auth` file: which URL path prefixes are protected and who may see them.
 *
 * ```
 * user alice $scrypt$ln=15,r=8,p=1$...$...
 * protect /private/          alice bob
 * protect /staff/report.pdf  carol
 * protect "/Annual Reports/" *        # * = any valid user
 * ```
 *
 * Everything here is checked when the file is loaded, so a mistake stops the command at
 * start-up with the file and line instead of leaving something unprotected.
 */

/**
 * One `protect` line. `prefix` is in the relative form the index uses (no leading '/'):
 * `private/` protects everything below that folder, `staff/report.pdf` protects that path
 * and everything below `staff/report.pdf/`, and `` (from `protect /`) protects everything.
 */
export interface ProtectRule {
  prefix: string;
  users: Set<string> | 'any-user';
}

/** A parsed auth file: user name → password hash, and the rules in file order. */
export interface AuthConfig {
  users: Map<string, string>;
  rules: ProtectRule[];
}

/** The configuration without `--auth`: nobody can log in and nothing is protected. */
export function emptyAuthConfig(): AuthConfig {
  return { users: new Map(), rules: [] };
}

/**
 * A problem with an auth file: one line naming the file (and line), with what to do next.
 * Each server turns it into its own coded error: `oaibag-repository`'s ERR_REPO_AUTH_FILE (exit 1),
 * `oaibag serve`'s ERR_ARCHIVE_USAGE (exit 2).
 */
export class AuthFileError extends Error {
  readonly code = 'ERR_AUTH_FILE';
  constructor(
    message: string,
    readonly hint: string | undefined,
    cause?: unknown,
  ) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = 'AuthFileError';
  }
}

/** Reads and parses an auth file; unreadable or non-UTF-8 files are an AuthFileError too. */
export async function loadAuthFile(path: string): Promise<AuthConfig> {
  let bytes: Buffer;
  try {
    bytes = await readFile(path);
  } catch (error) {
    const reason = error instanceof Error && 'code' in error ? String(error.code) : String(error);
    throw new AuthFileError(`${path}: cannot read the auth file (${reason})`, 'Check the path given to --auth.', error);
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch (error) {
    throw new AuthFileError(`${path}: the auth file is not valid UTF-8`, undefined, error);
  }
  return parseAuthFile(text, path);
}

/**
 * Parses the text of an auth file. `fileName` only labels error messages
 * (`<file>:<line>: <what is wrong>`). The first problem found stops the parse.
 *
 * `user` and `protect` lines may come in any order: a rule's user names are checked after
 * the whole file is read, and the error points at the `protect` line.
 */
export function parseAuthFile(text: string, fileName: string): AuthConfig {
  const users = new Map<string, string>();
  const userLines = new Map<string, number>();
  const rules: ProtectRule[] = [];
  const pendingNames: Array<{ line: number; names: string[] }> = [];
  const fail = (line: number, what: string): never => {
    throw new AuthFileError(`${fileName}:${line}: ${what}`, 'Fix the auth file named by --auth and start again.');
  };

  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  lines.forEach((content, index) => {
    const line = index + 1;
    const fields = splitFields(content, (what) => fail(line, what));
    const [directive, ...args] = fields;
    if (directive === undefined) return;
    if (directive === 'user') {
      if (args.length !== 2) fail(line, `'user' takes a name and a password hash, found ${args.length} field(s)`);
      const name = checkUserName(args[0] ?? '', (what) => fail(line, what));
      const hash = args[1] ?? '';
      if (!isPasswordHash(hash)) fail(line, `user '${name}' has no valid password hash (expected $scrypt$ln=…,r=…,p=…$salt$key)`);
      const previous = userLines.get(name);
      if (previous !== undefined) fail(line, `user '${name}' is already defined on line ${previous}`);
      users.set(name, hash);
      userLines.set(name, line);
    } else if (directive === 'protect') {
      const [rawPrefix, ...names] = args;
      if (rawPrefix === undefined) fail(line, `'protect' needs a path prefix and the users allowed`);
      const prefix = relativePrefix(rawPrefix ?? '', (what) => fail(line, what));
      if (names.length === 0) fail(line, `'protect ${rawPrefix}' names no users (use * for any valid user)`);
      if (names.includes('*')) {
        if (names.length > 1) fail(line, `'*' already allows every valid user; do not list names beside it`);
        rules.push({ prefix, users: 'any-user' });
      } else {
        const normalized = names.map((name) => checkUserName(name, (what) => fail(line, what)));
        rules.push({ prefix, users: new Set(normalized) });
        pendingNames.push({ line, names: normalized });
      }
    } else {
      fail(line, `unknown directive '${directive}' (expected 'user' or 'protect')`);
    }
  });

  for (const { line, names } of pendingNames) {
    for (const name of names) {
      if (!users.has(name)) fail(line, `'protect' names user '${name}', who has no 'user' line`);
    }
  }
  return { users, rules };
}

/**
 * Fields are separated by spaces and tabs (not by other Unicode white space, which can be part
 * of a file name). A field that starts with `"` runs to the next unescaped `"`, with `\"` and
 * `\\` as the only escapes, so a prefix can name a folder with spaces. A `#` starting a field
 * begins a comment; inside a field it is an ordinary character (`/a#b.txt` is a file name).
 */
function splitFields(content: string, fail: (what: string) => never): string[] {
  const fields: string[] = [];
  let at = 0;
  while (at < content.length) {
    const char = content[at];
    if (char === ' ' || char === '\t') {
      at++;
    } else if (char === '#') {
      break;
    } else if (char === '"') {
      let field = '';
      at++;
      for (;;) {
        if (at >= content.length) fail('a quoted field has no closing quote');
        const inner = content[at];
        if (inner === '"') break;
        if (inner === '\\') {
          const escaped = content[at + 1];
          if (escaped !== '"' && escaped !== '\\') fail(`in a quoted field only \\" and \\\\ are escapes`);
          field += escaped;
          at += 2;
        } else {
          field += inner;
          at++;
        }
      }
      at++;
      const next = content[at];
      if (next !== undefined && next !== ' ' && next !== '\t') fail('a closing quote must end its field');
      fields.push(field);
    } else {
      let end = at;
      while (end < content.length && content[end] !== ' ' && content[end] !== '\t') end++;
      fields.push(content.slice(at, end));
      at = end;
    }
  }
  return fields;
}

/**
 * User names are compared in Unicode Normalization Form C (RFC 7613's UsernameCasePreserved
 * profile, which RFC 7617 asks for with charset="UTF-8"), so the name a browser sends matches
 * however it composed the characters. ':' cannot be sent in Basic credentials.
 */
export function normalizeUserName(name: string): string {
  return name.normalize('NFC');
}

function checkUserName(raw: string, fail: (what: string) => never): string {
  const name = normalizeUserName(raw);
  if (name === '') fail('a user name is empty');
  if (name === '*') fail(`'*' is not a user name; it means any valid user in a 'protect' line`);
  if (name.includes(':')) fail(`user name '${name}' contains ':', which HTTP Basic credentials cannot carry`);
  if (/\p{Cc}/u.test(name)) fail(`user name '${JSON.stringify(name)}' contains a control character`);
  return name;
}

/**
 * Turns `/private/` into `private/`. The prefix must be a clean decoded URL path: `.` or
 * `..` segments and empty segments could never match an indexed path, so they are typos
 * that would leave files unprotected. For the same reason a `%` followed by two hex digits
 * is refused: it is almost always a percent-encoded copy from the address bar (`%20`),
 * which would silently match nothing.
 */
function relativePrefix(raw: string, fail: (what: string) => never): string {
  if (!raw.startsWith('/')) fail(`prefix '${raw}' must start with '/'`);
  if (raw.includes('\u0000')) fail(`prefix ${JSON.stringify(raw)} contains a NUL character`);
  if (/%[0-9A-Fa-f]{2}/.test(raw)) {
    fail(`prefix '${raw}' looks percent-encoded; write the decoded path (quote it if it contains spaces)`);
  }
  const relative = raw.slice(1);
  if (relative === '') return '';
  const segments = (relative.endsWith('/') ? relative.slice(0, -1) : relative).split('/');
  for (const segment of segments) {
    if (segment === '.' || segment === '..') fail(`prefix '${raw}' contains a '${segment}' segment`);
    if (segment === '') fail(`prefix '${raw}' contains an empty segment ('//')`);
  }
  return relative;
}
