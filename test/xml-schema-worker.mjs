// @ts-check
/**
 * The libxml2 side of test/xml-schema.ts, in a worker thread started without tsx: tsx rewrites
 * every module with a dynamic import() and builds a source map for it, which costs about a second
 * on libxml2-wasm's one-megabyte module; plain Node loads it in under 100 ms. Plain JavaScript for
 * the same reason. Answers one request at a time: the reply goes on the port, then the shared flag
 * wakes the test's thread, which waits synchronously.
 */
import { existsSync, readFileSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { workerData } from 'node:worker_threads';

/** @type {{ port: import('node:worker_threads').MessagePort, flag: Int32Array, schemas: string }} */
const { port, flag, schemas: SCHEMAS } = workerData;

/** @type {typeof import('libxml2-wasm') | undefined} */
let libxml2;
/** @type {typeof import('libxml2-wasm/lib/nodejs.mjs') | undefined} */
let nodejs;
/** @type {string | undefined} */
let loadFailure;
try {
  libxml2 = await import('libxml2-wasm');
  nodejs = await import('libxml2-wasm/lib/nodejs.mjs');
} catch (error) {
  loadFailure = `libxml2-wasm could not be loaded (${error instanceof Error ? error.message : String(error)}); run the install first`;
}

/** @type {string[]} What the schemas tried to load that is not a local file (reset before each schema compiles). */
const unreachable = [];

/** @param {string} name */
function localPath(name) {
  if (/^[a-z][a-z0-9+.-]+:/i.test(name)) return name.startsWith('file:') ? fileURLToPath(name) : null;
  return name;
}

if (libxml2 && nodejs) {
  const files = nodejs.fsInputProviders;
  // Local files only: a URL (http, https, ftp...) or a file that does not exist is refused and noted.
  libxml2.xmlRegisterInputProvider({
    match(name) {
      const path = localPath(name);
      if (path !== null && existsSync(path)) return true;
      unreachable.push(name);
      return false;
    },
    open: (name) => files.open(/** @type {string} */ (localPath(name))),
    read: (fd, buffer) => files.read(fd, buffer),
    close: (fd) => files.close(fd),
  });
}

/** @returns {typeof import('libxml2-wasm')} */
function lib() {
  if (!libxml2) throw new Error(loadFailure);
  return libxml2;
}

/** As xmllint parses without options, plus --nonet. */
const PLAIN = libxml2?.ParseOption.XML_PARSE_NONET ?? 0;

/** @type {Map<string, { schema: import('libxml2-wasm').XmlDocument, validator: import('libxml2-wasm').XsdValidator }>} */
const compiled = new Map();

/** @param {string} schema a file name in test/schemas, or an absolute path */
function validatorFor(schema) {
  const { XmlDocument, XsdValidator } = lib();
  const path = isAbsolute(schema) ? schema : join(SCHEMAS, schema);
  const known = compiled.get(path);
  if (known) return known.validator;
  if (!existsSync(path)) throw new Error(`no schema ${path}`);
  unreachable.length = 0;
  const document = XmlDocument.fromBuffer(readFileSync(path), { url: path, option: PLAIN });
  let validator;
  try {
    validator = XsdValidator.fromDoc(document);
  } catch (error) {
    document.dispose();
    throw new Error(`schema ${path} does not compile: ${describe(error, path)}`);
  }
  if (unreachable.length > 0) {
    validator.dispose();
    document.dispose();
    throw new Error(`schema ${path} needs ${[...new Set(unreachable)].join(', ')}, not an existing local file (no network here: keep a copy in ${SCHEMAS})`);
  }
  compiled.set(path, { schema: document, validator });
  return validator;
}

/**
 * @param {unknown} error
 * @param {string} label
 */
function describe(error, label) {
  if (libxml2 && error instanceof libxml2.XmlLibError && error.details.length > 0) {
    return error.details.map((detail) => `${label}:${detail.line}: ${detail.message.trimEnd()}`).join('\n');
  }
  return error instanceof Error ? error.message : String(error);
}

/**
 * @param {string | Uint8Array | { file: string }} xml
 * @param {string} label
 * @param {number} option
 * @returns {{ document: import('libxml2-wasm').XmlDocument } | { problems: string }}
 */
function parse(xml, label, option = PLAIN) {
  const { XmlDocument } = lib();
  let bytes;
  let url;
  if (typeof xml === 'string') bytes = Buffer.from(xml, 'utf8');
  else if (xml instanceof Uint8Array) bytes = xml;
  else {
    bytes = readFileSync(xml.file);
    url = resolve(xml.file);
  }
  try {
    return { document: XmlDocument.fromBuffer(bytes, url === undefined ? { option } : { url, option }) };
  } catch (error) {
    return { problems: describe(error, label) };
  }
}

/**
 * @param {import('libxml2-wasm').XsdValidator} validator
 * @param {string | Uint8Array | { file: string }} xml
 * @param {string} label
 * @returns {string[]}
 */
function check(validator, xml, label) {
  const parsed = parse(xml, label);
  if ('problems' in parsed) return [parsed.problems, `${label} fails to validate`];
  try {
    validator.validate(parsed.document);
    return [];
  } catch (error) {
    return [describe(error, label), `${label} fails to validate`];
  } finally {
    parsed.document.dispose();
  }
}

/** @param {string[]} problems */
const result = (problems) => ({ ok: problems.length === 0, output: problems.join('\n') });

/** @param {any} request */
function answer(request) {
  switch (request.op) {
    case 'validate': {
      const validator = validatorFor(request.schema);
      return result(request.documents.flatMap((/** @type {any} */ document) => check(validator, document.xml, document.label)));
    }
    case 'well-formed': {
      const parsed = parse(request.xml, request.label);
      if ('problems' in parsed) return { ok: false, output: parsed.problems };
      parsed.document.dispose();
      return { ok: true, output: '' };
    }
    case 'c14n': {
      const { ParseOption, XmlC14NMode } = lib();
      // xmllint --c14n parses with entities substituted and default attributes added.
      const parsed = parse(request.xml, request.label, PLAIN | ParseOption.XML_PARSE_NOENT | ParseOption.XML_PARSE_DTDATTR);
      if ('problems' in parsed) throw new Error(`not well-formed: ${parsed.problems}`);
      try {
        return parsed.document.canonicalizeToString({ mode: XmlC14NMode.XML_C14N_1_0, withComments: true });
      } finally {
        parsed.document.dispose();
      }
    }
    default:
      throw new Error(`unknown request ${request.op}`);
  }
}

port.on('message', (request) => {
  let reply;
  try {
    reply = { value: answer(request) };
  } catch (error) {
    reply = { error: error instanceof Error ? error.message : String(error) };
  }
  port.postMessage(reply);
  Atomics.store(flag, 0, 1);
  Atomics.notify(flag, 0);
});
