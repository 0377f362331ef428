import { escapeAttribute, escapeText, NS } from '@oaibag/didl';
import { formatDatestamp } from './oai-date.js';
import type { OaiProtocolError } from './oai-errors.js';

/** A response body: strings written in order (an array for short answers, a generator when streamed). */
export type ResponseBody = Iterable<string> | AsyncIterable<string>;

const OAI_SCHEMA = 'http://www.openarchives.org/OAI/2.0/OAI-PMH.xsd';

/**
 * The start of an OAI-PMH response up to the verb element's content. `args` are echoed as
 * attributes of `request` (null when the specification says not to: badVerb, badArgument).
 */
export function responseStart(responseDate: number, endpoint: string, args: Record<string, string> | null): string {
  let request = '<request';
  if (args) for (const [name, value] of Object.entries(args)) request += ` ${name}="${escapeAttribute(value)}"`;
  request += `>${escapeText(endpoint)}</request>`;
  return (
    '<?xml version="1.0" encoding="UTF-8"?>\n' +
    `<OAI-PMH xmlns="${NS.oai}" xmlns:xsi="${NS.xsi}" xsi:schemaLocation="${NS.oai} ${OAI_SCHEMA}">\n` +
    `<responseDate>${formatDatestamp(responseDate)}</responseDate>\n${request}\n`
  );
}

export const RESPONSE_END = '</OAI-PMH>\n';

export function errorElements(errors: readonly OaiProtocolError[]): string {
  return errors.map((error) => `<error code="${error.code}">${escapeText(error.message)}</error>\n`).join('');
}

/** A resumptionToken element; completeListSize is optional in OAI-PMH, left out when the list's size is not known. */
export function resumptionTokenXml(token: string, cursor: number, completeListSize: number | undefined): string {
  const size = completeListSize === undefined ? '' : ` completeListSize="${completeListSize}"`;
  return `<resumptionToken${size} cursor="${cursor}">${escapeText(token)}</resumptionToken>\n`;
}
