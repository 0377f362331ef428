// The words of `oaibag verify --bag FILE.zip`, which `oaibag import` of bag ZIPs uses too: one
// line per problem, naming the entry as the ZIP names it (`<folder>/data/…: sha256 <found>, the
// manifest says <expected>`), in the order of the ZIP's entries: what is wrong with the
// container first, then bagit.txt, the manifests, each entry's own problems, the files missing
// from the ZIP, Payload-Oxum. The checks are the bag verifier's (bag/bag-verifier.ts); only the
// wording is here.
import { encodeManifestPath } from '../bag/bag-paths.js';
import type { BagProblem, BagProblemDetail } from '../bag/bag-verifier.js';
import type { ZipContainerProblem } from '../bag/zip-bag-source.js';

export interface ZipBagWording {
  /** The ZIP file, as a container problem names it. */
  file: string;
  /** `<folder>/`, before every bag path ('' when the ZIP has no one folder). */
  prefix: string;
  container?: readonly ZipContainerProblem[];
  /** Where a bag path's entry is in the ZIP's directory (-1: not there), for the order of the lines. */
  indexOf?: (path: string) => number;
}

interface Line {
  text: string;
  /** The part of the report it belongs to, in the order above. */
  part: number;
  /** Its entry's place in the ZIP. */
  at: number;
}

/** The lines of a bag ZIP's problems: the container's, then the bag's (each with its detail, see verifyBagSource). */
export function zipBagLines(problems: readonly BagProblem[], details: ReadonlyMap<BagProblem, BagProblemDetail>, wording: ZipBagWording): string[] {
  const { file, prefix } = wording;
  const indexOf = wording.indexOf ?? (() => -1);
  const lines: Line[] = [];
  const say = (part: number, at: number, text: string) => void lines.push({ text, part, at });
  for (const problem of wording.container ?? []) {
    if (problem.kind === 'encrypted') say(0, problem.index, `${problem.entry}: encrypted, which a bag never is`);
    else if (problem.kind === 'folders')
      say(1, 0, `${file}: unpacks to ${problem.names.length} top-level names (${problem.names.slice(0, 3).join(', ')}…), not one folder`);
    else say(1, 0, `${file}: holds files outside its folder`);
  }
  const notListed = new Set<string>();
  for (const problem of problems) {
    const detail = details.get(problem);
    const path = problem.path ?? '';
    const entry = `${prefix}${path}`;
    const at = indexOf(path);
    switch (detail?.check) {
      case 'link':
        say(0, at, `${entry}: a symbolic link, which a bag never holds`);
        break;
      case 'normalisation':
        say(0, at, `${entry}: a second entry of that name (after Unicode NFC)`);
        break;
      case 'bagit':
        say(2, 0, `${prefix}bagit.txt: missing or not BagIt-Version 1.0`);
        break;
      case 'tag-file-size':
        say(path === 'bagit.txt' ? 2 : 3, at, `${entry}: a tag file of ${detail.bytes} bytes, larger than oaibag reads`);
        break;
      case 'algorithm':
        say(3, at, `${entry}: an algorithm oaibag does not check`);
        break;
      case 'manifest-line':
      case 'unsafe-path': {
        const why = detail.check === 'unsafe-path' ? 'a path that leaves the bag' : 'not a manifest line';
        say(3, indexOf(detail.manifest!), `${prefix}${detail.manifest}:${detail.line}: ${why}`);
        break;
      }
      case 'no-payload-manifest':
        say(4, 0, `${prefix}: no payload manifest`);
        break;
      case 'no-tag-manifest':
        say(4, 0, `${prefix}: no tag manifest, so the tag files are unprotected`);
        break;
      case 'not-listed': {
        // One line for a file, however many manifests do not list it.
        const which = path.startsWith('data/') ? 'payload' : 'tag';
        if (!notListed.has(`${which} ${path}`)) say(5, at, `${entry}: not in every ${which} manifest`);
        notListed.add(`${which} ${path}`);
        break;
      }
      case 'digest':
        say(5, at, `${entry}: ${problem.algorithm} ${problem.found}, the manifest says ${problem.expected}`);
        break;
      case 'unreadable':
        say(5, at, `${entry}: cannot be read (${detail.reason})`);
        break;
      case 'not-present':
        say(6, 0, `${entry}: in ${detail.manifest}, missing from the ZIP`);
        break;
      default:
        if (problem.kind === 'oxum' && problem.expected !== undefined)
          say(7, 0, `${prefix}bag-info.txt: Payload-Oxum ${problem.expected}, the payload is ${problem.found}`);
        else say(8, 0, `${entry}: ${withoutPath(problem.message, path)}`);
    }
  }
  // A stable sort: the verifier's own order within a part and an entry.
  return lines.sort((a, b) => a.part - b.part || a.at - b.at).map((line) => line.text);
}

/** A message without the path it starts with (the line names the entry already). */
function withoutPath(message: string, path: string): string {
  const shown = `${encodeManifestPath(path)} `;
  return path !== '' && message.startsWith(shown) ? message.slice(shown.length) : message;
}
