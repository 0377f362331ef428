/**
 * XML checks for every package's tests: XML Schema validation, well-formedness, Canonical XML.
 * libxml2 compiled to WebAssembly (the `libxml2-wasm` devDependency), so a fresh clone needs
 * neither the `xmllint` binary nor anything outside the repository.
 *
 * As strict as `xmllint --noout --nonet --schema`: schemas and their imports are read only from
 * local files (the copies in test/schemas, see its README, or an absolute path such as our own
 * http_header.xsd); a schema that tries to load anything else (a URL, a missing file) is an error
 * here, not a skipped import. Each schema is compiled once per test process and reused.
 *
 * libxml2 runs in a worker thread started without tsx (xml-schema-worker.mjs says why), on the
 * first check; these functions wait for its answer, so they stay synchronous like spawnSync was.
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MessageChannel, type MessagePort, receiveMessageOnPort, Worker } from 'node:worker_threads';

/** The schemas the tests validate against (copies kept in the repository; see schemas/README.md). */
export const SCHEMAS = join(dirname(fileURLToPath(import.meta.url)), 'schemas');

/** An XML document: its text, its bytes, or a file to read. */
export type XmlSource = string | Uint8Array | { file: string };

export interface XmlCheck {
  ok: boolean;
  /** One line per problem (`label:line: message`), then `label fails to validate`; empty when ok. */
  output: string;
}

type Request =
  | { op: 'validate'; schema: string; documents: ReadonlyArray<{ label: string; xml: XmlSource }> }
  | { op: 'well-formed'; xml: XmlSource; label: string }
  | { op: 'c14n'; xml: XmlSource; label: string };

/** Far longer than any check takes (the first starts the worker and compiles its schema: well under a second). */
const ANSWER_WITHIN_MS = 60_000;

let worker: { port: MessagePort; flag: Int32Array } | undefined;

function start(): { port: MessagePort; flag: Int32Array } {
  const { port1, port2 } = new MessageChannel();
  const flag = new Int32Array(new SharedArrayBuffer(4));
  const thread = new Worker(new URL('./xml-schema-worker.mjs', import.meta.url), {
    execArgv: [],
    workerData: { port: port2, flag, schemas: SCHEMAS },
    transferList: [port2],
  });
  // Never keeps a test process alive; it ends with the process.
  thread.unref();
  port1.unref();
  return { port: port1, flag };
}

function ask<T>(request: Request): T {
  worker ??= start();
  const { port, flag } = worker;
  Atomics.store(flag, 0, 0);
  port.postMessage(request);
  if (Atomics.wait(flag, 0, 0, ANSWER_WITHIN_MS) === 'timed-out') {
    worker = undefined; // its late answer must not be taken for the next one's
    throw new Error(`test/xml-schema-worker.mjs gave no answer in ${ANSWER_WITHIN_MS / 1000} s`);
  }
  const reply = receiveMessageOnPort(port)?.message as { value: T } | { error: string } | undefined;
  if (reply === undefined) throw new Error('test/xml-schema-worker.mjs woke without an answer');
  if ('error' in reply) throw new Error(reply.error);
  return reply.value;
}

function labelOf(xml: XmlSource): string {
  return typeof xml === 'object' && !(xml instanceof Uint8Array) ? xml.file : 'document';
}

/**
 * Validates one document against a schema (a file name in test/schemas, or an absolute path),
 * like `xmllint --noout --nonet --schema SCHEMA FILE`.
 */
export function validateXmlSchema(schema: string, xml: XmlSource, label = labelOf(xml)): XmlCheck {
  return ask({ op: 'validate', schema, documents: [{ label, xml }] });
}

/**
 * Validates many documents against one schema, compiled once, in one exchange with the worker;
 * `output` names each failing document by its label.
 */
export function validateXmlSchemaAll(schema: string, documents: ReadonlyArray<{ label: string; xml: XmlSource }>): XmlCheck {
  return ask({ op: 'validate', schema, documents });
}

/** Checks that a document is well-formed XML, like `xmllint --noout FILE`. */
export function checkWellFormed(xml: XmlSource, label = labelOf(xml)): XmlCheck {
  return ask({ op: 'well-formed', xml, label });
}

/**
 * Canonical XML 1.0 with comments, like `xmllint --c14n` (entities substituted, default attributes
 * added). Throws when the document is not well-formed.
 */
export function canonicalXml(xml: XmlSource): string {
  return ask({ op: 'c14n', xml, label: labelOf(xml) });
}
