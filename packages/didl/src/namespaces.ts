/** XML namespaces of the DIDL profile (see docs/didl-profile.md). */
export const NS = {
  didl: 'urn:mpeg:mpeg21:2002:02-DIDL-NS',
  dii: 'urn:mpeg:mpeg21:2002:01-DII-NS',
  http: 'http://www.openarchives.org/OAI/2.0/http_header/',
  premis: 'http://www.loc.gov/premis/v3',
  dc: 'http://purl.org/dc/elements/1.1/',
  oai: 'http://www.openarchives.org/OAI/2.0/',
  xsi: 'http://www.w3.org/2001/XMLSchema-instance',
  xml: 'http://www.w3.org/XML/1998/namespace',
  xmlns: 'http://www.w3.org/2000/xmlns/',
} as const;

/** `dc:type` value that marks a nested Item as the metadata of its parent (aDORe / LANL style). */
export const METADATA_ENTITY_TYPE = 'http://www.openarchives.org/OAI/2.0/entity#metadata';

/** Where the DIDL schema is published; written into xsi:schemaLocation. */
export const DIDL_SCHEMA_LOCATION = 'http://standards.iso.org/ittf/PubliclyAvailableStandards/MPEG-21_schema_files/did/didl.xsd';
