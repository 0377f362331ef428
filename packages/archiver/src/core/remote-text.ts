/** Characters of a remote string (a URL, a token, an identifier) shown in a message or a log line. */
export const SHOWN_CHARS = 200;

/**
 * A string a source or a client chose, made fit for one line of a message: control characters
 * escaped (no forged log lines), and cut at `max` characters with its full length given, so a
 * 2 MB resumption token costs a 250-character line rather than a 2 MB one.
 */
export function shown(text: string, max = SHOWN_CHARS): string {
  const cut = text.length > max ? text.slice(0, max) : text;
  const clean = cut.replace(/[\u0000-\u001f\u007f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
  return text.length > max ? `${clean}… (${text.length} characters)` : clean;
}
