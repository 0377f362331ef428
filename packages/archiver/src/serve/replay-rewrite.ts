// Link rewriting for replay (docs/browse.md, "Replay"): an archived HTML page's links and
// embedded resources are pointed at the archive, at the same instant, so that the page shows
// what was captured and never reaches the live web. HTML goes through parse5's streaming
// rewriter (the WHATWG tokenizer: a page is rewritten as it is read, in linear time, with what
// is not a URL passed through byte for byte); CSS, in a style sheet, a <style> element or a
// style attribute, has its url() and @import targets rewritten. Scripts are left as they are:
// what they fetch is refused by replay's policy (replay.ts), not rewritten.
import { RewritingStream } from 'parse5-html-rewriting-stream';

/** Where the archive replays a URL: as an embedded resource (`mp_`) or as a page to navigate to. */
export interface ReplayTargets {
  embed(url: string): string;
  page(url: string): string;
}

/** Style text held at most per <style> element; past it the rest goes out as it came. */
export const STYLE_ELEMENT_MAX_CHARS = 1024 * 1024;

/** Attributes that name a resource the page embeds, by element. */
const EMBEDS: Record<string, readonly string[]> = {
  img: ['src', 'srcset', 'lowsrc'],
  image: ['href', 'xlink:href'],
  source: ['src', 'srcset'],
  script: ['src'],
  iframe: ['src'],
  frame: ['src'],
  embed: ['src'],
  object: ['data'],
  video: ['src', 'poster'],
  audio: ['src'],
  track: ['src'],
  input: ['src'],
  body: ['background'],
  table: ['background'],
  td: ['background'],
  th: ['background'],
};

/** Attributes that name a page the reader may go to. */
const NAVIGATIONS: Record<string, readonly string[]> = { a: ['href'], area: ['href'], form: ['action'] };

/** The rel values of <link> that embed (others, like `alternate` or `canonical`, navigate). */
const EMBEDDING_LINKS = new Set(['stylesheet', 'icon', 'shortcut', 'apple-touch-icon', 'preload', 'prefetch', 'modulepreload', 'manifest', 'mask-icon']);

/**
 * A rewriting stream for the HTML page captured at `pageUrl`: write the page's text in, read
 * the rewritten text out. `<base href>` changes what relative URLs resolve against, as in a
 * browser, and is then taken out (the archive's policy forbids it anyway).
 */
export function htmlRewriter(pageUrl: string, targets: ReplayTargets): RewritingStream {
  const rewriter = new RewritingStream();
  let base = pageUrl;
  let style: { text: string; overflow: boolean } | undefined;
  rewriter.on('startTag', (tag) => {
    const name = tag.tagName;
    if (name === 'base') {
      const href = tag.attrs.find((attr) => attr.name === 'href');
      const resolved = href ? absoluteUrl(href.value, base) : undefined;
      if (resolved) base = resolved;
      tag.attrs = tag.attrs.filter((attr) => attr.name !== 'href');
    }
    const embeds = EMBEDS[name] ?? [];
    const navigations = NAVIGATIONS[name] ?? [];
    const rel = name === 'link' ? (tag.attrs.find((attr) => attr.name === 'rel')?.value ?? '').toLowerCase().split(/\s+/) : [];
    for (const attr of tag.attrs) {
      if (name === 'link' && attr.name === 'href') {
        attr.value = rel.some((value) => EMBEDDING_LINKS.has(value)) ? rewriteUrl(attr.value, base, targets.embed) : rewriteUrl(attr.value, base, targets.page);
      } else if (embeds.includes(attr.name)) {
        attr.value = attr.name.endsWith('srcset') ? rewriteSrcset(attr.value, base, targets.embed) : rewriteUrl(attr.value, base, targets.embed);
      } else if (navigations.includes(attr.name)) {
        attr.value = rewriteUrl(attr.value, base, targets.page);
      } else if (attr.name === 'style') {
        attr.value = rewriteCss(attr.value, base, targets);
      }
    }
    if (name === 'meta' && tag.attrs.some((attr) => attr.name === 'http-equiv' && attr.value.toLowerCase() === 'refresh')) {
      const content = tag.attrs.find((attr) => attr.name === 'content');
      if (content)
        content.value = content.value.replace(/(url\s*=\s*['"]?)([^'"\s]+)/i, (_, lead: string, url: string) => lead + rewriteUrl(url, base, targets.page));
    }
    // Links open the linked page's capture in the whole window, banner and all; a sub-resource
    // integrity hash would not match a rewritten style sheet.
    if (name === 'a' || name === 'area') {
      tag.attrs = tag.attrs.filter((attr) => attr.name !== 'target');
      tag.attrs.push({ name: 'target', value: '_top' });
    }
    if (name === 'link' || name === 'script') tag.attrs = tag.attrs.filter((attr) => attr.name !== 'integrity');
    if (name === 'style' && !tag.selfClosing) style = { text: '', overflow: false };
    rewriter.emitStartTag(tag);
  });
  rewriter.on('text', (_text, raw) => {
    if (style === undefined) {
      rewriter.emitRaw(raw);
      return;
    }
    if (style.overflow || style.text.length + raw.length > STYLE_ELEMENT_MAX_CHARS) {
      // Too long to hold: what was held goes out rewritten, the rest as it came.
      if (!style.overflow) rewriter.emitRaw(rewriteCss(style.text, base, targets));
      style.overflow = true;
      style.text = '';
      rewriter.emitRaw(raw);
      return;
    }
    style.text += raw;
  });
  rewriter.on('endTag', (tag, raw) => {
    if (tag.tagName === 'style' && style !== undefined) {
      if (!style.overflow) rewriter.emitRaw(rewriteCss(style.text, base, targets));
      style = undefined;
    }
    rewriter.emitRaw(raw);
  });
  return rewriter;
}

/** CSS with its url() and @import targets pointed at the archive (embedded resources all). */
export function rewriteCss(css: string, base: string, targets: ReplayTargets): string {
  // Both patterns are linear: no nested repetition, each quantifier stops at a fixed character.
  return css
    .replace(/url\(\s*(['"]?)([^'")]*)\1\s*\)/gi, (whole: string, quote: string, url: string) =>
      url.trim() === '' ? whole : `url(${quote}${rewriteUrl(url.trim(), base, targets.embed)}${quote})`,
    )
    .replace(/@import\s+(['"])([^'"]*)\1/gi, (_: string, quote: string, url: string) => `@import ${quote}${rewriteUrl(url, base, targets.embed)}${quote}`);
}

/** One URL: resolved against `base`; an http(s) one is given to `target`, anything else kept. */
function rewriteUrl(value: string, base: string, target: (url: string) => string): string {
  const trimmed = value.trim();
  if (trimmed === '' || trimmed.startsWith('#')) return value;
  const resolved = absoluteUrl(trimmed, base);
  return resolved === undefined ? value : target(resolved);
}

function rewriteSrcset(value: string, base: string, target: (url: string) => string): string {
  return value
    .split(',')
    .map((candidate) => {
      const match = /^(\s*)(\S+)(.*)$/s.exec(candidate);
      return match ? `${match[1]}${rewriteUrl(match[2]!, base, target)}${match[3]}` : candidate;
    })
    .join(',');
}

/** The absolute http(s) URL `value` names from `base`; undefined for other schemes or nonsense. */
function absoluteUrl(value: string, base: string): string | undefined {
  try {
    const url = new URL(value, base);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.href : undefined;
  } catch {
    return undefined;
  }
}
