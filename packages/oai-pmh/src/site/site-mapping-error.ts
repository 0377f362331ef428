/**
 * A value the mapping of a site's files to records cannot take: a glob, a run extension or a
 * reserved name the export policy refuses, a base URL that is not an http(s) URL without
 * query, fragment or credentials, a path with no UTF-8 form. One line, with what to do next
 * when there is something to say. Each user turns it into its own coded error:
 * `oaibag-repository`'s ERR_REPO_OPTIONS or ERR_REPO_PATH, `oaibag import`'s ERR_ARCHIVE_USAGE.
 */
export class SiteMappingError extends Error {
  readonly code = 'ERR_SITE_MAPPING';
  readonly hint: string | undefined;

  constructor(message: string, details: { hint?: string; cause?: unknown } = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = 'SiteMappingError';
    this.hint = details.hint;
  }
}
