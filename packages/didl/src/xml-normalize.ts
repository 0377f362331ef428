import sax from 'sax';

/**
 * The two normalisations of XML 1.0 that sax leaves to us:
 * - line ends (section 2.11): CR LF and a lone CR become LF;
 * - attribute values (section 3.3.3): a literal tab, LF or CR becomes a space, while a
 *   character reference (`&#10;`) keeps its character.
 * sax hands over attribute values with references already expanded, so the second must
 * happen before sax sees the text. The driver feeds sax one segment at a time, each ending
 * at the first `>` after the previous one, so a segment holds at most the end of one
 * construct and the start of one tag; sax's state at the segment's start says where we are.
 */
export class MarkupNormalizer {
  private heldCarriageReturn = false;

  /** Normalises one segment; `stateBefore` is sax's state before it is written. */
  segment(text: string, stateBefore: number): string {
    if (this.heldCarriageReturn) {
      text = `\r${text}`;
      this.heldCarriageReturn = false;
    }
    if (text.endsWith('\r')) {
      // A CR LF may straddle two segments: decide when the next one comes.
      text = text.slice(0, -1);
      this.heldCarriageReturn = true;
    }
    if (text.includes('\r')) text = text.replace(/\r\n?/g, '\n');
    return normalizeTagWhitespace(text, stateBefore);
  }

  /** What is left at the end of the input. */
  flush(): string {
    if (!this.heldCarriageReturn) return '';
    this.heldCarriageReturn = false;
    return '\n';
  }
}

const STATE = (sax as unknown as { STATE: Record<string, number> }).STATE;
const IN_START_TAG = new Set(
  [
    'OPEN_TAG',
    'OPEN_TAG_SLASH',
    'ATTRIB',
    'ATTRIB_NAME',
    'ATTRIB_NAME_SAW_WHITE',
    'ATTRIB_VALUE',
    'ATTRIB_VALUE_QUOTED',
    'ATTRIB_VALUE_UNQUOTED',
    'ATTRIB_VALUE_CLOSED',
    'ATTRIB_VALUE_ENTITY_Q',
    'ATTRIB_VALUE_ENTITY_U',
  ]
    .map((name) => STATE[name])
    .filter((state): state is number => state !== undefined),
);
const TEXT_STATES = new Set([STATE.BEGIN, STATE.BEGIN_WHITESPACE, STATE.TEXT, STATE.TEXT_ENTITY]);

/**
 * Within a start tag, outside or inside quotes, a tab or line feed means a space; replacing
 * them everywhere in the tag is therefore exact, and it normalises attribute values.
 */
function normalizeTagWhitespace(text: string, stateBefore: number): string {
  let tagStart: number;
  if (IN_START_TAG.has(stateBefore)) {
    tagStart = 0;
  } else if (TEXT_STATES.has(stateBefore)) {
    tagStart = text.indexOf('<');
    if (tagStart === -1) return text;
    const next = text.charCodeAt(tagStart + 1);
    // `<!` (comment, CDATA, DOCTYPE), `<?` (PI) and `</` (end tag) are left alone.
    if (next === 0x21 || next === 0x3f || next === 0x2f) return text;
  } else {
    return text; // inside a comment, CDATA section, PI or end tag
  }
  const tag = text.slice(tagStart);
  if (!/[\t\n]/.test(tag)) return text;
  return text.slice(0, tagStart) + tag.replace(/[\t\n]/g, ' ');
}
