// The OAI-PMH 2.0 protocol as a data provider speaks it, shared by `oaibag-repository` (a site)
// and `oaibag serve` (an archive): what a request may say, the errors, the dates, resumption
// tokens that carry the list's state so that no server keeps any, and the static file answer
// (conditional GET, ranges) for the datastreams records point to By-Reference, and the `--auth`
// file with its access rules, and the access log line both servers write per request.
// `site/`: the mapping of a site's file to its oai_didl record (identifier, base URL, export
// policy, MIME type), which `oaibag-repository` serves and `oaibag import` makes alike.

export {
  AccessControl,
  basicChallenge,
  challengeHeader,
  isUnderPrefix,
  linkKeepsProtection,
  parseBasicCredentials,
  type Viewer,
} from './access/access-control.js';
export { type AuthConfig, AuthFileError, emptyAuthConfig, loadAuthFile, normalizeUserName, type ProtectRule, parseAuthFile } from './access/auth-file.js';
export { hashPassword, isPasswordHash, verifyPassword } from './access/password-hash.js';
export { readPassword } from './access/read-password.js';
export { byteSize } from './byte-size.js';
export { coalescedBody } from './coalesced-body.js';
export { entityTag, type FileFacts, fileHeaders, httpDate, lastModifiedSeconds } from './file-headers.js';
export { MAX_FORM_BYTES, readFormBody } from './form-body.js';
export { HTTP_HEADER_SCHEMA, HTTP_HEADER_SCHEMA_PATH } from './http-header-schema.js';
export {
  isValidSetSpec,
  MAX_SET_SPEC_LENGTH,
  MIME_SET_ROOT,
  mimeEssence,
  mimeSetSelection,
  mimeSetSpec,
  mimeTypeForSetSpec,
  setNameFor,
  setSpecAncestors,
} from './mime-sets.js';
export {
  formatDatestamp,
  MAX_OAI_SECONDS,
  MIN_OAI_SECONDS,
  type OaiGranularity,
  type ParsedOaiDate,
  parseOaiDate,
} from './oai-date.js';
export { errorElements, RESPONSE_END, type ResponseBody, responseStart, resumptionTokenXml } from './oai-envelope.js';
export {
  characterCount,
  MAX_QUOTED_CHARACTERS,
  OAI_ERROR_DESCRIPTIONS,
  type OaiErrorCode,
  type OaiProtocolError,
  oaiError,
  quoteInput,
} from './oai-errors.js';
export {
  isOaiRequestFailure,
  MAX_ARGUMENT_LENGTH,
  METADATA_PREFIX_PATTERN,
  OAI_VERBS,
  type OaiDate,
  type OaiRequest,
  type OaiRequestArgs,
  type OaiRequestContext,
  type OaiRequestFailure,
  type OaiVerb,
  parseOaiRequest,
  SET_SPEC_PATTERN,
} from './oai-request.js';
export { OPTION_VALUES, type OptionValueRule } from './option-values.js';
export type {
  IdentifyFacts,
  ItemHeader,
  ItemKey,
  ItemRecord,
  ItemSource,
  ListWindow,
  MetadataFormatDescription,
  SetDescription,
} from './provider/item-source.js';
export { DEFAULT_COUNT_LIMIT, OaiProvider, type ProviderSettings } from './provider/oai-provider.js';
export { clfDate, logRequest } from './request-log.js';
export {
  decodeResumptionToken,
  encodeResumptionToken,
  type ListStart,
  type ListState,
  listIsEmpty,
  listStart,
  MAX_RESUMPTION_TOKEN_LENGTH,
  MIN_RESUMPTION_KEY_BYTES,
} from './resumption-token.js';
export { RIGHTS_NAMESPACE, type RightsStatement, recordRightsAbout, rightsManifestXml } from './rights.js';
export {
  drained,
  type FileResponsePlan,
  type HeaderField,
  parseHttpDate,
  parseRange,
  planFileResponse,
  type RangeDecision,
  type SendableFile,
  sendFile,
} from './send-file.js';
export { normalizeBaseUrl } from './site/base-url.js';
export {
  createExportPolicy,
  DEFAULT_EXCLUDES,
  DEFAULT_RUN_EXTENSIONS,
  type ExclusionReason,
  type ExportPolicy,
  type ExportPolicyOptions,
} from './site/export-policy.js';
export { mimeTypeForPath } from './site/mime-type.js';
export { SiteMappingError } from './site/site-mapping-error.js';
export { encodeUrlPath, identifierForPath, isAddressablePath, pathForIdentifier, pathForUrlPath } from './site/url-path.js';
