import { escapeText, NS, writeDidl } from '@oaibag/didl';
import { fileHeaders, formatDatestamp, HTTP_HEADER_SCHEMA_PATH, lastModifiedSeconds } from '@oaibag/oai-pmh';
import type { IndexedFile } from '../core/model.js';

/** What a format needs to write one record's metadata. */
export interface RecordSource {
  file: IndexedFile;
  identifier: string;
  /** The file's bytes, when the format carries them (oai_didl By-Value); read once. */
  byValue?: AsyncIterable<Uint8Array>;
}

export interface MetadataFormat {
  prefix: string;
  schema: string;
  namespace: string;
  /** True when records of this format carry the file's bytes up to --by-value-max. */
  carriesContent: boolean;
  write(source: RecordSource): AsyncIterable<string>;
}

/** The three formats of mod_oai, in the order ListMetadataFormats gives them. */
export function metadataFormats(baseUrl: string): MetadataFormat[] {
  return [
    {
      prefix: 'oai_dc',
      schema: 'http://www.openarchives.org/OAI/2.0/oai_dc.xsd',
      namespace: 'http://www.openarchives.org/OAI/2.0/oai_dc/',
      carriesContent: false,
      write: writeOaiDc,
    },
    {
      prefix: 'http_header',
      schema: `${baseUrl}/${HTTP_HEADER_SCHEMA_PATH}`,
      namespace: NS.http,
      carriesContent: false,
      write: writeHttpHeader,
    },
    {
      prefix: 'oai_didl',
      schema: 'http://standards.iso.org/ittf/PubliclyAvailableStandards/MPEG-21_schema_files/did/didl.xsd',
      namespace: NS.didl,
      carriesContent: true,
      write: writeOaiDidl,
    },
  ];
}

/** DCMI Type for a MIME major type; none for the ones with no clear match. */
const DCMI_TYPES: Record<string, string> = {
  text: 'Text',
  image: 'StillImage',
  audio: 'Sound',
  video: 'MovingImage',
};

/** Technical Dublin Core only: what the server knows, nothing it would have to guess. */
async function* writeOaiDc({ file, identifier }: RecordSource): AsyncGenerator<string> {
  const type = DCMI_TYPES[file.mimeType.split('/')[0] ?? ''];
  yield `<oai_dc:dc xmlns:oai_dc="http://www.openarchives.org/OAI/2.0/oai_dc/" xmlns:dc="${NS.dc}" ` +
    `xsi:schemaLocation="http://www.openarchives.org/OAI/2.0/oai_dc/ http://www.openarchives.org/OAI/2.0/oai_dc.xsd">\n` +
    `<dc:identifier>${escapeText(identifier)}</dc:identifier>\n` +
    `<dc:format>${escapeText(file.mimeType)}</dc:format>\n` +
    `<dc:format>${file.size} bytes</dc:format>\n` +
    `<dc:date>${formatDatestamp(lastModifiedSeconds(file.mtimeNs))}</dc:date>\n` +
    (type ? `<dc:type>${type}</dc:type>\n` : '') +
    '</oai_dc:dc>\n';
}

async function* writeHttpHeader({ file }: RecordSource): AsyncGenerator<string> {
  let xml = `<http:header xmlns:http="${NS.http}">\n`;
  for (const { name, value } of fileHeaders(file)) xml += `<http:${name}>${escapeText(value)}</http:${name}>\n`;
  yield `${xml}</http:header>\n`;
}

/** The DIDL profile of packages/didl: By-Reference always, By-Value when given the bytes. */
function writeOaiDidl({ file, identifier, byValue }: RecordSource): AsyncIterable<string> {
  return writeDidl(
    {
      identifier,
      headers: fileHeaders(file),
      components: [
        {
          mimeType: file.mimeType,
          ref: identifier,
          digest: { algorithm: 'SHA-256', value: file.sha256 },
          ...(byValue ? { byValue } : {}),
        },
      ],
    },
    { xmlDeclaration: false, schemaLocation: false },
  );
}
