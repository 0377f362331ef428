// The repository's sets are mod_oai's MIME-type sets (@oaibag/oai-pmh); a file's MIME type
// comes from the mime package or from configuration, never from a request, so one that is
// not `type/subtype` is a configuration error.
import { mimeSetSpec } from '@oaibag/oai-pmh';
import { RepositoryError } from '../core/errors.js';

export { isValidSetSpec, MAX_SET_SPEC_LENGTH, MIME_SET_ROOT, mimeTypeForSetSpec, setNameFor, setSpecAncestors } from '@oaibag/oai-pmh';

/** The set of a MIME type; throws ERR_REPO_OPTIONS for a string that is not `type/subtype`. */
export function setSpecForMimeType(mimeType: string): string {
  const spec = mimeSetSpec(mimeType);
  if (spec === null) throw new RepositoryError('ERR_REPO_OPTIONS', `not a MIME type (expected type/subtype): ${JSON.stringify(mimeType)}`);
  return spec;
}
