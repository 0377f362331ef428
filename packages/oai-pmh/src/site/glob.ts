import { SiteMappingError } from './site-mapping-error.js';

/**
 * A predicate for a shell-style glob, matched against the whole subject, case-sensitively
 * (as the file system names files):
 * `*` any run of characters but '/', `**` any run including '/' (when followed by '/' it
 * also matches no directory at all, so `**` + `/x` matches `x` as well as `a/b/x`),
 * `?` one character but '/', `[abc]`, `[a-z]`,
 * `[!abc]` (or `[^abc]`) one character of a class, never '/' (a `]` right after the opening
 * `[` or `[!` is literal), `\` makes the next character literal. Everything else is literal.
 *
 * Throws SiteMappingError, naming the pattern, for an empty pattern, an unclosed `[`, a
 * trailing `\` or a reversed range: the patterns come from the command line, and a typo
 * should stop the start rather than silently export what it meant to hide.
 */
export function compileGlob(pattern: string): (subject: string) => boolean {
  if (pattern === '') throw invalid(pattern, 'it is empty');
  const chars = Array.from(pattern);
  let source = '';
  for (let i = 0; i < chars.length; i++) {
    const char = chars[i] as string;
    if (char === '\\') {
      const next = chars[++i];
      if (next === undefined) throw invalid(pattern, 'it ends in an unescaped "\\"');
      source += escapeRegExp(next);
    } else if (char === '*') {
      if (chars[i + 1] === '*') {
        i++;
        if (chars[i + 1] === '/') {
          i++;
          source += '(?:.*/)?';
        } else {
          source += '.*';
        }
      } else {
        source += '[^/]*';
      }
    } else if (char === '?') {
      source += '[^/]';
    } else if (char === '[') {
      const parsed = parseClass(chars, i, pattern);
      source += parsed.source;
      i = parsed.end;
    } else {
      source += escapeRegExp(char);
    }
  }
  let regExp: RegExp;
  try {
    regExp = new RegExp(`^${source}$`, 'su');
  } catch (error) {
    throw invalid(pattern, error instanceof Error ? error.message : String(error));
  }
  return (subject) => regExp.test(subject);
}

/** The regular expression of the class opened at `chars[start]`, and the index of its `]`. */
function parseClass(chars: string[], start: number, pattern: string): { source: string; end: number } {
  let i = start + 1;
  const negated = chars[i] === '!' || chars[i] === '^';
  if (negated) i++;
  let body = '';
  let first = true;
  for (; i < chars.length; i++) {
    let char = chars[i] as string;
    if (char === ']' && !first) {
      // A class never matches '/': a glob for names must not reach into another segment.
      return { source: negated ? `[^/${body}]` : `(?!/)[${body}]`, end: i };
    }
    first = false;
    if (char === '\\') {
      const next = chars[++i];
      if (next === undefined) break;
      char = next;
    }
    body += escapeClassChar(char);
    // A range: `a-z`, unless the '-' is last (`[a-]` is 'a' or '-').
    if (chars[i + 1] === '-' && chars[i + 2] !== undefined && chars[i + 2] !== ']') {
      let high = chars[i + 2] as string;
      i += 2;
      if (high === '\\') {
        const next = chars[++i];
        if (next === undefined) break;
        high = next;
      }
      if ((high.codePointAt(0) ?? 0) < (char.codePointAt(0) ?? 0)) {
        throw invalid(pattern, `its range "${char}-${high}" is reversed`);
      }
      body += `-${escapeClassChar(high)}`;
    }
  }
  throw invalid(pattern, 'it has an unclosed "["');
}

function escapeRegExp(char: string): string {
  return /[\\^$.*+?()[\]{}|/]/.test(char) ? `\\${char}` : char;
}

function escapeClassChar(char: string): string {
  return /[\\^\][-]/.test(char) ? `\\${char}` : char;
}

function invalid(pattern: string, why: string): SiteMappingError {
  return new SiteMappingError(`invalid glob pattern ${JSON.stringify(pattern)}: ${why}`, {
    hint: 'use * ** ? [a-z] [!a-z], and \\ before a character meant literally',
  });
}
