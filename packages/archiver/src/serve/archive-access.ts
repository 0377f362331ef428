// Who may have what of the archive (docs/serve.md, "Access"): the one decision every route of
// `oaibag serve` asks. The `--auth` rules name the archive's URL paths, and three kinds of thing
// are guarded:
// - a request's own path (`protect /oai alice` closes OAI-PMH);
// - a payload's bytes wherever they go (/files/, a /memento/, the By-Value base64 of oai_didl):
//   always by the payload's own /files/ path, so that no other route is a way around its rule;
// - the Linked Data view (/sparql, /resource/, /data/, /page/): one graph of the whole archive,
//   which a query can join any way, so it cannot be cut to what a viewer may see; with an auth
//   file that protects anything it is for users refused nothing.
import type { ServerResponse } from 'node:http';
import { AccessControl, type AuthConfig, basicChallenge, type Viewer } from '@oaibag/oai-pmh';
import { payloadUrlPath } from './payload-files.js';
import { answerPlain } from './text-answers.js';

export type { Viewer } from '@oaibag/oai-pmh';

const CHALLENGE = basicChallenge('oaibag archive');

/** A payload by its place in a bag (`aips/…`, `data/…`), as the catalog names it. */
export interface PayloadPlace {
  bagPath: string;
  path: string;
}

/** What a viewer asks for: a URL path, a payload's bytes, or the Linked Data graph. */
export type AccessTarget = { urlPath: string } | { payload: PayloadPlace } | { graph: true };

export class ArchiveAccess {
  private readonly control: AccessControl;

  constructor(auth?: AuthConfig) {
    this.control = new AccessControl(auth);
  }

  /** True when the auth file protects at least one path (answers then vary by Authorization). */
  get protectsAnything(): boolean {
    return this.control.protectsAnything;
  }

  /** The viewer of a request's credentials (none: the anonymous viewer); null when they are wrong. */
  viewerOf(authorization: string | undefined): Promise<Viewer | null> {
    return this.control.authenticate(authorization);
  }

  /** The decision. */
  allows(viewer: Viewer, target: AccessTarget): boolean {
    if ('urlPath' in target) return viewer.canSee(decodedPath(target.urlPath));
    // Decided by the payload's /files/ URL built from the catalog's names, never from the
    // request, so every route decides one payload the same way.
    if ('payload' in target) return viewer.canSee(decodedPath(payloadUrlPath(target.payload.bagPath, target.payload.path)));
    return viewer.hiddenPrefixes.length === 0;
  }

  /** Answers a refusal: 401 with the challenge to a request without credentials, 403 to a user. */
  refuse(res: ServerResponse, viewer: Viewer | null): void {
    if (viewer === null || viewer.user === null) res.setHeader('WWW-Authenticate', CHALLENGE);
    if (viewer === null) answerPlain(res, 401, 'the credentials sent are not valid\n');
    else answerPlain(res, viewer.user === null ? 401 : 403, 'this part of the archive is protected\n');
  }
}

/** A URL path as the auth rules name paths: without its leading `/`, percent-decoded. */
function decodedPath(path: string): string {
  try {
    return decodeURIComponent(path.slice(1));
  } catch {
    return path.slice(1);
  }
}
