import { type OaiGranularity, parseOaiDate } from './oai-date.js';
import { characterCount, type OaiProtocolError, oaiError, quoteInput } from './oai-errors.js';

/** The six verbs of OAI-PMH 2.0. Verbs are case-sensitive: `identify` is a badVerb. */
export type OaiVerb = 'Identify' | 'ListMetadataFormats' | 'ListSets' | 'GetRecord' | 'ListIdentifiers' | 'ListRecords';

/** A `from` or `until` argument: the inclusive bound in seconds, and the text as sent. */
export interface OaiDate {
  seconds: number;
  granularity: OaiGranularity;
  text: string;
}

/**
 * The arguments exactly as the harvester sent them, `verb` included, for the attributes of
 * the response's `request` element (section 3.2). Only present when echoing is allowed.
 */
export type OaiRequestArgs = Readonly<Record<string, string>>;

/** A legal request, one shape per verb and argument combination the specification allows. */
export type OaiRequest =
  | { verb: 'Identify'; args: OaiRequestArgs }
  | { verb: 'ListMetadataFormats'; identifier?: string; args: OaiRequestArgs }
  | { verb: 'ListSets'; resumptionToken?: string; args: OaiRequestArgs }
  | { verb: 'GetRecord'; identifier: string; metadataPrefix: string; args: OaiRequestArgs }
  | {
      verb: 'ListIdentifiers' | 'ListRecords';
      metadataPrefix: string;
      from?: OaiDate;
      until?: OaiDate;
      set?: string;
      /** Never set in this form; present so that `request.resumptionToken` narrows. */
      resumptionToken?: undefined;
      args: OaiRequestArgs;
    }
  | { verb: 'ListIdentifiers' | 'ListRecords'; resumptionToken: string; metadataPrefix?: undefined; args: OaiRequestArgs };

/**
 * A request that must be answered with errors only. `echo` says whether the `request`
 * element may carry the arguments: never after badVerb or badArgument (section 3.2), so
 * those come with `echo: false`; a request refused only for its metadataPrefix is legal
 * and is echoed.
 */
export type OaiRequestFailure = { errors: OaiProtocolError[]; echo: false } | { errors: OaiProtocolError[]; echo: true; args: OaiRequestArgs };

/** What the caller knows about the repository that decides a request's legality. */
export interface OaiRequestContext {
  /** The metadataPrefix values the repository disseminates. */
  metadataPrefixes: readonly string[];
}

/** The longest argument value accepted, in characters (code points); longer is a badArgument. */
export const MAX_ARGUMENT_LENGTH = 4096;

/** setSpec syntax of the OAI-PMH schema (OAI-PMH.xsd, type setSpecType). */
export const SET_SPEC_PATTERN = /^([A-Za-z0-9\-_.!~*'()])+(:[A-Za-z0-9\-_.!~*'()]+)*$/;

/** metadataPrefix syntax of the OAI-PMH schema (OAI-PMH.xsd, type metadataPrefixType). */
export const METADATA_PREFIX_PATTERN = /^[A-Za-z0-9\-_.!~*'()]+$/;

interface VerbArguments {
  required: readonly string[];
  optional: readonly string[];
  /** An argument that, when given, must be the only one besides the verb. */
  exclusive?: string;
}

// Section 4, the "Arguments" of each verb.
const VERB_ARGUMENTS: Readonly<Record<OaiVerb, VerbArguments>> = {
  Identify: { required: [], optional: [] },
  ListMetadataFormats: { required: [], optional: ['identifier'] },
  ListSets: { required: [], optional: [], exclusive: 'resumptionToken' },
  GetRecord: { required: ['identifier', 'metadataPrefix'], optional: [] },
  ListIdentifiers: { required: ['metadataPrefix'], optional: ['from', 'until', 'set'], exclusive: 'resumptionToken' },
  ListRecords: { required: ['metadataPrefix'], optional: ['from', 'until', 'set'], exclusive: 'resumptionToken' },
};

/** The verbs, in the order of section 4. */
export const OAI_VERBS: readonly OaiVerb[] = Object.freeze(Object.keys(VERB_ARGUMENTS) as OaiVerb[]);

/**
 * Decides whether a request is legal OAI-PMH and what it asks for, from its decoded
 * name/value pairs in order (query string or POST body; the caller decodes them). Pure, so
 * that every rule of the specification is one table row in a test.
 *
 * A missing, repeated or unknown verb is one badVerb and nothing else: without a verb no
 * argument can be judged. Otherwise every badArgument problem is reported, one error each,
 * in a stable order (per argument in the order first given, then exclusivity, missing
 * arguments, dates, set and metadataPrefix syntax), since the specification asks for all
 * errors and a harvester's author fixes them in one go. An unsupported metadataPrefix is a
 * cannotDisseminateFormat, reported only when the request is otherwise legal.
 */
export function parseOaiRequest(pairs: ReadonlyArray<readonly [string, string]>, context: OaiRequestContext): OaiRequest | OaiRequestFailure {
  const verbs = pairs.filter(([name]) => name === 'verb');
  if (verbs.length === 0) return badVerb('the verb argument is missing');
  if (verbs.length > 1) return badVerb(`the verb argument is repeated (${verbs.length} times)`);
  const verbValue = verbs[0]![1];
  if (!isVerb(verbValue)) return badVerb(`${quoteInput(verbValue)} is not a legal OAI-PMH verb`);
  const verb = verbValue;
  const spec = VERB_ARGUMENTS[verb];
  const legal = new Set([...spec.required, ...spec.optional, ...(spec.exclusive === undefined ? [] : [spec.exclusive])]);

  // Group by name, keeping the order in which names first appear, so messages are stable.
  const given = new Map<string, string[]>();
  for (const [name, value] of pairs) {
    if (name === 'verb') continue;
    const values = given.get(name);
    if (values === undefined) given.set(name, [value]);
    else values.push(value);
  }

  const problems: string[] = [];
  const values = new Map<string, string>();
  for (const [name, occurrences] of given) {
    if (!legal.has(name)) {
      problems.push(`the argument ${quoteInput(name)} is not allowed with the verb ${verb}`);
    } else if (occurrences.length > 1) {
      problems.push(`the argument '${name}' is repeated (${occurrences.length} times)`);
    } else {
      const value = occurrences[0]!;
      const problem = valueProblem(name, value);
      if (problem === undefined) values.set(name, value);
      else problems.push(problem);
    }
  }

  const present = [...given.keys()].filter((name) => legal.has(name));
  if (spec.exclusive !== undefined && given.has(spec.exclusive)) {
    const others = present.filter((name) => name !== spec.exclusive);
    if (others.length > 0) {
      problems.push(`the argument '${spec.exclusive}' is exclusive and cannot be combined with ${others.map((name) => `'${name}'`).join(', ')}`);
    }
  } else {
    for (const name of spec.required) {
      if (!given.has(name)) problems.push(`the required argument '${name}' is missing`);
    }
  }

  const from = dateArgument(values, 'from', problems);
  const until = dateArgument(values, 'until', problems);
  if (from !== undefined && until !== undefined) {
    if (from.granularity !== until.granularity) {
      problems.push(`the arguments 'from' (${quoteInput(from.text)}) and 'until' (${quoteInput(until.text)}) have different granularities`);
    } else if (from.seconds > until.seconds) {
      problems.push(`the argument 'from' (${quoteInput(from.text)}) is later than 'until' (${quoteInput(until.text)})`);
    }
  }
  const set = values.get('set');
  if (set !== undefined && !SET_SPEC_PATTERN.test(set)) {
    problems.push(`the value of 'set' is not a legal setSpec: ${quoteInput(set)}`);
  }
  const metadataPrefix = values.get('metadataPrefix');
  if (metadataPrefix !== undefined && !METADATA_PREFIX_PATTERN.test(metadataPrefix)) {
    problems.push(`the value of 'metadataPrefix' is not a legal metadataPrefix: ${quoteInput(metadataPrefix)}`);
  }

  if (problems.length > 0) {
    return { errors: problems.map((problem) => oaiError('badArgument', problem)), echo: false };
  }

  // Legal from here on: every name is known and given once, so the arguments can be echoed.
  const args: Record<string, string> = { verb };
  for (const [name, value] of values) args[name] = value;

  if (metadataPrefix !== undefined && !context.metadataPrefixes.includes(metadataPrefix)) {
    const supported = context.metadataPrefixes.map((prefix) => quoteInput(prefix)).join(', ');
    return {
      errors: [
        oaiError(
          'cannotDisseminateFormat',
          `the metadataPrefix ${quoteInput(metadataPrefix)} is not one this repository disseminates (${supported || 'none'})`,
        ),
      ],
      echo: true,
      args,
    };
  }

  return buildRequest(verb, values, from, until, args);
}

/** Narrows a {@link parseOaiRequest} result to the failure case. */
export function isOaiRequestFailure(result: OaiRequest | OaiRequestFailure): result is OaiRequestFailure {
  return 'errors' in result;
}

function badVerb(detail: string): OaiRequestFailure {
  return { errors: [oaiError('badVerb', detail)], echo: false };
}

function isVerb(value: string): value is OaiVerb {
  return Object.hasOwn(VERB_ARGUMENTS, value);
}

// Characters a value may not hold: C0 and C1 controls and DEL (tab and line feeds included,
// no argument has a use for them), and what XML 1.0 cannot carry in the echoed attribute:
// U+FFFE, U+FFFF and unpaired surrogates.
const FORBIDDEN_CHARACTER = /[\u0000-\u001f\u007f-\u009f\ufffe\uffff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

function valueProblem(name: string, value: string): string | undefined {
  if (value === '') return `the argument '${name}' has an empty value`;
  const length = characterCount(value);
  // A token of any length is the token decoder's to refuse (badResumptionToken, the more
  // useful answer); the request body limit already bounds the work.
  if (length > MAX_ARGUMENT_LENGTH && name !== 'resumptionToken') {
    return `the value of '${name}' is ${length} characters long, more than the ${MAX_ARGUMENT_LENGTH} allowed`;
  }
  const forbidden = FORBIDDEN_CHARACTER.exec(value);
  if (forbidden !== null) {
    const code = forbidden[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, '0');
    return `the value of '${name}' contains the character U+${code} at position ${forbidden.index}, which is not allowed`;
  }
  return undefined;
}

function dateArgument(values: Map<string, string>, name: 'from' | 'until', problems: string[]): OaiDate | undefined {
  const text = values.get(name);
  if (text === undefined) return undefined;
  const parsed = parseOaiDate(text, name);
  if (parsed === null) {
    problems.push(`the value of '${name}' is not a legal date of the form YYYY-MM-DD or YYYY-MM-DDThh:mm:ssZ: ${quoteInput(text)}`);
    return undefined;
  }
  return { ...parsed, text };
}

function buildRequest(verb: OaiVerb, values: Map<string, string>, from: OaiDate | undefined, until: OaiDate | undefined, args: OaiRequestArgs): OaiRequest {
  const identifier = values.get('identifier');
  const metadataPrefix = values.get('metadataPrefix');
  const resumptionToken = values.get('resumptionToken');
  switch (verb) {
    case 'Identify':
      return { verb, args };
    case 'ListMetadataFormats':
      return identifier === undefined ? { verb, args } : { verb, identifier, args };
    case 'ListSets':
      return resumptionToken === undefined ? { verb, args } : { verb, resumptionToken, args };
    case 'GetRecord':
      return { verb, identifier: identifier!, metadataPrefix: metadataPrefix!, args };
    case 'ListIdentifiers':
    case 'ListRecords': {
      if (resumptionToken !== undefined) return { verb, resumptionToken, args };
      const request: OaiRequest = { verb, metadataPrefix: metadataPrefix!, args };
      if (from !== undefined) request.from = from;
      if (until !== undefined) request.until = until;
      const set = values.get('set');
      if (set !== undefined) request.set = set;
      return request;
    }
  }
}
