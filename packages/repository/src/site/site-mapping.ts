// The mapping of a site's files to records lives in @oaibag/oai-pmh, shared with `oaibag
// import`; it throws SiteMappingError. Here it speaks the repository's codes, as
// docs/repository.md lists them: a refused option is ERR_REPO_OPTIONS (exit 2), a path with
// no UTF-8 form ERR_REPO_PATH.
import {
  createExportPolicy,
  type ExportPolicy,
  type ExportPolicyOptions,
  encodeUrlPath as encodeShared,
  identifierForPath as identifierShared,
  normalizeBaseUrl,
  SiteMappingError,
} from '@oaibag/oai-pmh';
import { RepositoryError, type RepositoryErrorCode } from '../core/errors.js';

/** The export policy of `--exclude` and `--run-extensions`; ERR_REPO_OPTIONS for a bad value. */
export function exportPolicyOption(options: ExportPolicyOptions): ExportPolicy {
  return inRepositoryTerms('ERR_REPO_OPTIONS', '', () => createExportPolicy(options));
}

/** `--base-url` normalized (docs/repository.md); ERR_REPO_OPTIONS for anything but an http(s) URL. */
export function baseUrlOption(value: string): string {
  return inRepositoryTerms('ERR_REPO_OPTIONS', '--base-url ', () => normalizeBaseUrl(value));
}

/** encodeUrlPath of @oaibag/oai-pmh; ERR_REPO_PATH for a path with no UTF-8 form. */
export function encodeUrlPath(relPath: string): string {
  return inRepositoryTerms('ERR_REPO_PATH', '', () => encodeShared(relPath));
}

/** identifierForPath of @oaibag/oai-pmh; ERR_REPO_PATH for a path with no UTF-8 form. */
export function identifierForPath(baseUrl: string, relPath: string): string {
  return inRepositoryTerms('ERR_REPO_PATH', '', () => identifierShared(baseUrl, relPath));
}

function inRepositoryTerms<T>(code: RepositoryErrorCode, prefix: string, run: () => T): T {
  try {
    return run();
  } catch (error) {
    if (!(error instanceof SiteMappingError)) throw error;
    throw new RepositoryError(code, `${prefix}${error.message}`, { cause: error, ...(error.hint === undefined ? {} : { hint: error.hint }) });
  }
}
