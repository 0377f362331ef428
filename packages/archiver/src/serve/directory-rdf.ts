// `/all` and `/all/<kind>` (docs/linked-data.md, "Directory and /all"): the directory as RDF,
// OAI2LOD's `/all`. `/all` describes the archive as a VoID dataset with one subset per kind
// (each a Hydra collection with its count); `/all/<kind>` is a page of that collection's
// members, each with its class and a label, and `hydra:next` to the next page. Written here in
// Turtle, RDF/XML or N-Triples from a page's few hundred triples (nothing is read from the
// SPARQL store).
import { escapeAttribute, escapeText } from '@oaibag/didl';
import { NAMESPACES } from './archive-graph.js';
import type { Offer } from './content-negotiation.js';
import { countText, type DirectoryPage, type KindCount, type KindInfo } from './directory-listing.js';

export const HYDRA = 'http://www.w3.org/ns/hydra/core#';
export const VOID = 'http://rdfs.org/ns/void#';

/** The RDF formats of `/all`, first the default; `output=` names them by key. */
export const ALL_FORMATS: ReadonlyArray<Offer<string>> = [
  { mediaType: 'text/turtle', value: 'turtle' },
  { mediaType: 'application/rdf+xml', value: 'rdfxml' },
  { mediaType: 'application/n-triples', value: 'ntriples' },
];

const PREFIXES: Readonly<Record<string, string>> = { ...NAMESPACES, hydra: HYDRA, void: VOID };
const { rdf, rdfs, xsd, dcterms } = NAMESPACES;

type RdfObject = { iri: string } | { literal: string; datatype?: string };

interface Triple {
  subject: string;
  predicate: string;
  object: RdfObject;
}

/** A small graph in the order it was said, written whole in one of ALL_FORMATS. */
class SmallGraph {
  readonly triples: Triple[] = [];

  iri(subject: string, predicate: string, object: string): void {
    this.triples.push({ subject, predicate, object: { iri: object } });
  }

  literal(subject: string, predicate: string, value: string, datatype?: string): void {
    this.triples.push({ subject, predicate, object: datatype ? { literal: value, datatype } : { literal: value } });
  }

  write(mediaType: string): string {
    if (mediaType === 'application/n-triples') return this.nTriples();
    if (mediaType === 'application/rdf+xml') return this.rdfXml();
    return this.turtle();
  }

  private nTriples(): string {
    return this.triples.map((t) => `${iriTerm(t.subject)} ${iriTerm(t.predicate)} ${objectTerm(t.object, false)} .\n`).join('');
  }

  private turtle(): string {
    let out = Object.entries(PREFIXES)
      .map(([prefix, namespace]) => `@prefix ${prefix}: <${namespace}> .\n`)
      .join('');
    for (const [subject, triples] of this.bySubject()) {
      out += `\n${iriTerm(subject)}`;
      triples.forEach((t, index) => {
        const predicate = t.predicate === `${rdf}type` ? 'a' : turtleName(t.predicate);
        out += `${index === 0 ? ' ' : ' ;\n    '}${predicate} ${objectTerm(t.object, true)}`;
      });
      out += ' .\n';
    }
    return out;
  }

  private rdfXml(): string {
    let out = '<?xml version="1.0" encoding="utf-8"?>\n<rdf:RDF';
    for (const [prefix, namespace] of Object.entries(PREFIXES)) out += `\n    xmlns:${prefix}="${escapeAttribute(namespace)}"`;
    out += '>\n';
    for (const [subject, triples] of this.bySubject()) {
      out += `  <rdf:Description rdf:about="${escapeAttribute(xmlSafe(subject))}">\n`;
      for (const t of triples) {
        const name = xmlName(t.predicate);
        if ('iri' in t.object) out += `    <${name} rdf:resource="${escapeAttribute(xmlSafe(t.object.iri))}"/>\n`;
        else {
          const datatype = t.object.datatype ? ` rdf:datatype="${escapeAttribute(t.object.datatype)}"` : '';
          out += `    <${name}${datatype}>${escapeText(xmlSafe(t.object.literal))}</${name}>\n`;
        }
      }
      out += '  </rdf:Description>\n';
    }
    return `${out}</rdf:RDF>\n`;
  }

  private bySubject(): Map<string, Triple[]> {
    const subjects = new Map<string, Triple[]>();
    for (const triple of this.triples) {
      const list = subjects.get(triple.subject) ?? [];
      list.push(triple);
      subjects.set(triple.subject, list);
    }
    return subjects;
  }
}

/** What `/all` says: the archive as a dataset, one subset per kind with its count and the collection of its members. */
export function allDocument(base: string, kinds: ReadonlyArray<{ info: KindInfo; count: KindCount }>, mediaType: string): string {
  const graph = new SmallGraph();
  const all = `${base}/all`;
  graph.iri(all, `${rdf}type`, `${VOID}Dataset`);
  graph.literal(all, `${dcterms}title`, `Everything the archive at ${base} describes`);
  graph.iri(all, `${VOID}sparqlEndpoint`, `${base}/sparql`);
  graph.literal(all, `${VOID}uriSpace`, `${base}/resource/`);
  graph.iri(all, `${rdfs}seeAlso`, `${base}/directory`);
  for (const { info, count } of kinds) {
    const collection = `${all}/${info.kind}`;
    graph.iri(all, `${VOID}subset`, collection);
    describeCollection(graph, base, info, count);
  }
  return graph.write(mediaType);
}

/** A page of `/all/<kind>`: the collection, this page as its view with `hydra:next`, and each member with its class and label. */
export function allPage(base: string, page: DirectoryPage, count: KindCount, pageUrl: (after?: string) => string, mediaType: string): string {
  const graph = new SmallGraph();
  const collection = `${base}/all/${page.kind.kind}`;
  describeCollection(graph, base, page.kind, count);
  const view = pageUrl();
  graph.iri(collection, `${HYDRA}view`, view);
  graph.iri(view, `${rdf}type`, `${HYDRA}PartialCollectionView`);
  graph.iri(view, `${HYDRA}first`, collection);
  if (page.next !== undefined) graph.iri(view, `${HYDRA}next`, pageUrl(page.next));
  for (const member of page.members) graph.iri(collection, `${HYDRA}member`, member.uri);
  for (const member of page.members) {
    graph.iri(member.uri, `${rdf}type`, page.kind.classIri);
    graph.literal(member.uri, `${rdfs}label`, member.label);
  }
  return graph.write(mediaType);
}

function describeCollection(graph: SmallGraph, base: string, info: KindInfo, count: KindCount): void {
  const collection = `${base}/all/${info.kind}`;
  graph.iri(collection, `${rdf}type`, `${HYDRA}Collection`);
  graph.iri(collection, `${rdf}type`, `${VOID}Dataset`);
  graph.literal(collection, `${dcterms}title`, info.title);
  graph.literal(collection, `${dcterms}description`, info.about);
  graph.iri(collection, `${VOID}class`, info.classIri);
  graph.iri(collection, `${rdfs}seeAlso`, `${base}/directory/${info.kind}`);
  if (count.precision === 'exact') {
    graph.literal(collection, `${VOID}entities`, String(count.count), `${xsd}integer`);
    graph.literal(collection, `${HYDRA}totalItems`, String(count.count), `${xsd}integer`);
  } else {
    graph.literal(collection, `${rdfs}comment`, `${countText(count)} (not counted further: docs/linked-data.md, "Directory and /all")`);
  }
}

function iriTerm(value: string): string {
  // The URIs are percent-encoded where it matters; anything an IRI may not hold is escaped too.
  return `<${value.replace(/[\u0000-\u0020<>"{}|\\^`]/g, (char) => `%${char.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`)}>`;
}

function objectTerm(object: RdfObject, turtle: boolean): string {
  if ('iri' in object) return turtle ? (turtleClass(object.iri) ?? iriTerm(object.iri)) : iriTerm(object.iri);
  const quoted = `"${object.literal.replace(/[\\"\n\r\t]/g, (char) => ({ '\\': '\\\\', '"': '\\"', '\n': '\\n', '\r': '\\r', '\t': '\\t' })[char]!)}"`;
  if (!object.datatype) return quoted;
  if (turtle && object.datatype === `${xsd}integer`) return object.literal;
  return `${quoted}^^${turtle ? (turtleClass(object.datatype) ?? iriTerm(object.datatype)) : iriTerm(object.datatype)}`;
}

/** A prefixed name for a predicate (every predicate here has one). */
function turtleName(iri: string): string {
  return turtleClass(iri) ?? iriTerm(iri);
}

/** The prefixed name of an IRI in one of the prefixes, when its local part needs no escape. */
function turtleClass(iri: string): string | undefined {
  for (const [prefix, namespace] of Object.entries(PREFIXES)) {
    if (iri.startsWith(namespace) && /^[A-Za-z_][A-Za-z0-9_-]*$/.test(iri.slice(namespace.length))) return `${prefix}:${iri.slice(namespace.length)}`;
  }
  return undefined;
}

/** The qualified name of a predicate in RDF/XML (every predicate here is in one of the prefixes). */
function xmlName(iri: string): string {
  const name = turtleClass(iri);
  if (name === undefined) throw new Error(`no prefix for the predicate ${iri}`);
  return name;
}

/** XML 1.0 cannot hold some characters at all (C0 controls but tab, LF, CR; lone surrogates): U+FFFD stands for them. */
function xmlSafe(value: string): string {
  return value.replace(
    /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g,
    '\uFFFD',
  );
}
