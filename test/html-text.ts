// Text and attribute values of the HTML serve writes, as a browser reads them: the entities our
// escaping produces (didl's escapeText and escapeAttribute), decoded in one pass, so that
// `&amp;lt;` stays `&lt;`.
const NAMED: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"' };

export function decodeEntities(text: string): string {
  return text.replace(/&(amp|lt|gt|quot|#\d{1,7});/g, (_, name: string) => (name.startsWith('#') ? String.fromCodePoint(Number(name.slice(1))) : NAMED[name]!));
}
