// OAI-rights (the OAI rights guidelines, namespace http://www.openarchives.org/OAI/2.0/rights/):
// a repository's rightsManifest, given in Identify's <description>, and the <rights> each record
// carries in an <about>. The rights are the repository's statement about the metadata; oaibag
// keeps them with each record and gives them back when it serves the archive.
import { escapeAttribute } from '@oaibag/didl';

export const RIGHTS_NAMESPACE = 'http://www.openarchives.org/OAI/2.0/rights/';
const RIGHTS_SCHEMA = 'http://www.openarchives.org/OAI/2.0/rights.xsd';
const MANIFEST_SCHEMA = 'http://www.openarchives.org/OAI/2.0/rightsManifest.xsd';
/** What the manifest's rights apply to: the metadata of the records. */
const APPLIES_TO_METADATA = 'http://www.openarchives.org/OAI/2.0/entity#metadata';
const XSI = 'http://www.w3.org/2001/XMLSchema-instance';

/** A rights expression: a URI that names it, or its XML (served at a URL of the repository). */
export type RightsStatement = { reference: string } | { definition: string };

/** The rightsManifest element for Identify's `<description>`. */
export function rightsManifestXml(rights: RightsStatement): string {
  return (
    `<rightsManifest xmlns="${RIGHTS_NAMESPACE}" xmlns:xsi="${XSI}" xsi:schemaLocation="${RIGHTS_NAMESPACE} ${MANIFEST_SCHEMA}" appliesTo="${APPLIES_TO_METADATA}">` +
    `<rights>${rightsContent(rights)}</rights></rightsManifest>`
  );
}

/** The `<about>` of each record: a reference to the rights (`ref`: the URI, or where the definition is served). */
export function recordRightsAbout(ref: string): string {
  return (
    `<about><rights xmlns="${RIGHTS_NAMESPACE}" xmlns:xsi="${XSI}" xsi:schemaLocation="${RIGHTS_NAMESPACE} ${RIGHTS_SCHEMA}">` +
    `<rightsReference ref="${escapeAttribute(ref)}"/></rights></about>`
  );
}

function rightsContent(rights: RightsStatement): string {
  if ('reference' in rights) return `<rightsReference ref="${escapeAttribute(rights.reference)}"/>`;
  return `<rightsDefinition>${rights.definition}</rightsDefinition>`;
}
