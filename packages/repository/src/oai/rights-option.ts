// `--rights URI|FILE`: the rights of the metadata this repository serves (OAI-rights). A file
// holds the rights expression as XML (a Creative Commons RDF file, say): it goes inline into
// Identify's rightsManifest and is served at RIGHTS_PATH, which each record's rights point to.
// Anything else must be an absolute URI naming the rights; records and manifest refer to it.
import { readFile, stat } from 'node:fs/promises';
import { XmlTokenizer } from '@oaibag/didl';
import { type RightsStatement, recordRightsAbout } from '@oaibag/oai-pmh';
import { RepositoryError } from '../core/errors.js';

/** Where a rights definition given as a file is served, below the base URL. */
export const RIGHTS_PATH = 'oai/rights';

/** The statement `--rights` names; ERR_REPO_OPTIONS for a file that is not XML or a value that is neither. */
export async function loadRights(value: string): Promise<RightsStatement> {
  const file = await stat(value).catch(() => undefined);
  if (file?.isFile()) {
    const text = (await readFile(value, 'utf8')).replace(/^\uFEFF/, '');
    const problem = notWellFormed(text);
    if (problem) throw new RepositoryError('ERR_REPO_OPTIONS', `--rights ${value}: not well-formed XML (${problem})`);
    return { definition: text.replace(/^\s*<\?xml[^>]*\?>\s*/, '').trim() };
  }
  if (/^[A-Za-z][A-Za-z0-9+.-]*:[^\s<>"]+$/.test(value)) return { reference: value };
  throw new RepositoryError('ERR_REPO_OPTIONS', `--rights ${value}: neither a file nor an absolute URI`, {
    hint: 'give the URI of the rights (e.g. https://creativecommons.org/licenses/by/4.0/) or a file holding them as XML',
  });
}

/** The `<about>` each record carries, or '' without rights. */
export function recordAbout(rights: RightsStatement | undefined, baseUrl: string): string {
  if (!rights) return '';
  return recordRightsAbout('reference' in rights ? rights.reference : `${baseUrl}/${RIGHTS_PATH}`);
}

function notWellFormed(text: string): string | undefined {
  const tokenizer = new XmlTokenizer({
    openTag() {},
    closeTag() {},
    text() {},
    cdata() {},
    comment() {},
    doctype() {
      throw new Error('a DOCTYPE is not accepted');
    },
    processingInstruction() {},
    error(reason) {
      throw new Error(reason);
    },
  });
  try {
    tokenizer.write(text);
    tokenizer.end();
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}
