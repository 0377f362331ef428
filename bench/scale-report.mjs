// The report of the scale benchmark (scale.mjs): the growth exponent of each step between
// consecutive sizes (log(t2/t1) / log(n2/n1), for wall time, each process's CPU time and peak
// RSS), the targets of issue 27's "Done when" (measured at 1M, or projected to 1M from the largest
// size measured with the last CPU-time exponent, and said so), and the Markdown tables for
// bench/README.md.

const MB = 1e6;
export const MILLION = 1_000_000;

/** `10k`, `1m`, `2.5M`, `300000` → a whole number of resources. */
export function parseSize(text) {
  const match = /^(\d+(?:\.\d+)?)([km]?)$/i.exec(text.trim());
  if (!match) return undefined;
  const n = Number(match[1]) * { '': 1, k: 1e3, m: 1e6 }[match[2].toLowerCase()];
  return Number.isSafeInteger(n) && n > 0 ? n : undefined;
}

/** 10000 → `10k`, 1000000 → `1M`, 1020000 → `1.02M`. */
export function sizeLabel(n) {
  if (n >= 1e6) return `${Number((n / 1e6).toFixed(2))}M`;
  if (n >= 1e3) return `${Number((n / 1e3).toFixed(1))}k`;
  return String(n);
}

/** The exponent of growth from (n1, v1) to (n2, v2); undefined when either value is not positive. */
export function exponent(n1, v1, n2, v2) {
  if (!(v1 > 0 && v2 > 0) || n1 === n2) return undefined;
  return Math.log(v2 / v1) / Math.log(n2 / n1);
}

/** Exponents between consecutive sizes of `entries` ([{ n, steps }]), step by step. */
export function exponents(entries) {
  const sorted = [...entries].sort((a, b) => a.n - b.n);
  const pairs = [];
  for (let i = 1; i < sorted.length; i++) {
    const [a, b] = [sorted[i - 1], sorted[i]];
    const steps = {};
    for (const step of b.steps) {
      const earlier = a.steps.find((candidate) => candidate.step === step.step);
      if (!earlier?.ok || !step.ok) continue;
      const cpu = {};
      const memory = {};
      for (const [name, figures] of Object.entries(step.processes)) {
        const before = earlier.processes[name];
        if (!before) continue;
        cpu[name] = exponent(a.n, before.cpuSeconds, b.n, figures.cpuSeconds);
        memory[name] = exponent(a.n, before.peakRssBytes, b.n, figures.peakRssBytes);
      }
      steps[step.step] = { time: exponent(a.n, earlier.seconds, b.n, step.seconds), cpu, memory };
    }
    pairs.push({ from: a.n, to: b.n, sameCode: a.commit === b.commit, steps });
  }
  return pairs;
}

/**
 * Time targets of the issue (seconds, at 1M resources). `floor`: the least exponent a projection
 * to 1M uses (the work of a step over every resource grows at least linearly; a no-op's need not
 * grow), so that fixed costs at a small size do not make a projection look better than it is.
 */
const TIME_TARGETS = [
  { step: 'baseline', limit: 1200, floor: 1, text: 'baseline harvest ≤ 20 min' },
  { step: 'noop', limit: 2, floor: 0, text: 'no-op update ≤ 2 s' },
  { step: 'touch', limit: 120, floor: 1, text: 'touch-only update of 10 % ≤ 2 min (rescan included)' },
  { step: 'serve-harvest', limit: 1800, floor: 1, text: 'full harvest of the served archive ≤ 30 min' },
  { step: 'restore', limit: 1200, floor: 1, text: 'restore ≤ 20 min' },
  { step: 'reindex', limit: 600, floor: 1, text: 'reindex ≤ 10 min' },
];
/** Memory targets (bytes of the process named, at 1M resources). */
const MEMORY_TARGETS = [
  { step: 'audit', process: 'oaibag', limit: 300 * MB, text: 'audit under 300 MB RSS' },
  { step: 'export-rdf', process: 'oaibag', limit: 300 * MB, text: 'export-rdf under 300 MB RSS' },
  { step: 'restore', process: 'oaibag', limit: 300 * MB, text: 'restore under 300 MB RSS' },
  { step: 'sparql', process: 'serve', limit: 1000 * MB, text: "serve's RSS under 1 GB (SPARQL)" },
];

/**
 * The targets checked against `entries` (the real sizes, [{ n, steps }]): at 1M when measured,
 * else projected from the largest size with the exponent of the last pair (time: at least 1;
 * memory: at least 0). Returns [{ text, value, limit, unit, pass, basis }].
 */
export function checkTargets(entries) {
  const sorted = [...entries].sort((a, b) => a.n - b.n);
  const last = sorted.at(-1);
  if (!last) return [];
  const pair = exponents(sorted).at(-1);
  const at1M = last.n === MILLION;
  const checks = [];
  const find = (step) => last.steps.find((candidate) => candidate.step === step);
  const basis = (e, kind) =>
    at1M ? 'measured at 1M' : `projected from ${sizeLabel(last.n)} with ${kind} exponent ${e.toFixed(2)}${pair ? '' : ' (assumed: one size measured)'}`;
  // Projections use the CPU time's exponent (on a shared machine the wall time's follows the
  // load), the largest of the step's processes: the one growing fastest takes over at 1M.
  const cpuExponent = (growthPair, step) => {
    const values = Object.values(growthPair?.steps[step]?.cpu ?? {}).filter((value) => value !== undefined);
    return values.length > 0 ? Math.max(...values) : undefined;
  };
  for (const target of TIME_TARGETS) {
    const step = find(target.step);
    if (!step) continue;
    const e = Math.max(target.floor, cpuExponent(pair, target.step) ?? target.floor);
    const value = step.ok ? (at1M ? step.seconds : step.seconds * (MILLION / last.n) ** e) : Number.POSITIVE_INFINITY;
    checks.push({
      text: target.text,
      value,
      limit: target.limit,
      unit: 's',
      pass: value <= target.limit,
      basis: step.ok ? basis(e, 'CPU time') : `failed at ${sizeLabel(last.n)}`,
    });
  }
  const served = find('serve-harvest');
  if (served?.ok && served.facts.pageRatio !== undefined) {
    const value = served.facts.pageRatio;
    checks.push({
      text: 'first and last ListRecords page within 2× of each other',
      value,
      limit: 2,
      unit: '×',
      pass: value <= 2,
      basis: `measured at ${sizeLabel(last.n)}`,
    });
  }
  for (const target of MEMORY_TARGETS) {
    const step = find(target.step);
    const figures = step?.processes[target.process];
    if (!figures) continue;
    const e = Math.max(0, pair?.steps[target.step]?.memory[target.process] ?? 0);
    const value = step.ok ? (at1M ? figures.peakRssBytes : figures.peakRssBytes * (MILLION / last.n) ** e) : Number.POSITIVE_INFINITY;
    checks.push({
      text: target.text,
      value: value / MB,
      limit: target.limit / MB,
      unit: 'MB',
      pass: value < target.limit,
      basis: step.ok ? basis(e, 'memory') : `failed at ${sizeLabel(last.n)}`,
    });
  }
  const sparql = find('sparql');
  if (sparql) {
    for (const [name, query] of Object.entries(sparql.facts.queries ?? {})) {
      const value = query.status === 200 ? query.medianSeconds : Number.POSITIVE_INFINITY;
      checks.push({
        text: `SPARQL ${name} under 1 s`,
        value,
        limit: 1,
        unit: 's',
        pass: value < 1,
        basis: `measured at ${sizeLabel(last.n)} (${sparql.facts.store} store)`,
      });
    }
  }
  // Every step's growth between the two largest sizes: the issue asks it of 100k → 1M.
  if (pair) {
    for (const [step, growth] of Object.entries(pair.steps)) {
      const main = mainProcess(last.steps.find((candidate) => candidate.step === step));
      const cpu = growth.cpu[main];
      if (growth.time !== undefined)
        checks.push(exponentCheck(`${step}: time exponent`, growth.time, 1.1, pair, cpu === undefined ? '' : `; CPU ${cpu.toFixed(2)}`));
      const memory = growth.memory[main];
      if (memory !== undefined) checks.push(exponentCheck(`${step}: memory exponent (${main})`, memory, 0.1, pair));
    }
  }
  return checks;
}

/** A growth exponent against its limit; `more` ends the basis (the CPU time's exponent beside the wall time's). */
function exponentCheck(text, value, limit, pair, more = '') {
  return {
    text: `${text} ≤ ${limit}`,
    value,
    limit,
    unit: '',
    pass: value <= limit,
    basis: `${sizeLabel(pair.from)} → ${sizeLabel(pair.to)}${pair.sameCode ? '' : ' (different code)'}${more}`,
  };
}

/** The process a step is about: the command it runs, else its server. */
export function mainProcess(step) {
  if (!step) return undefined;
  return ['oaibag', 'repository', 'serve'].find((name) => step.processes[name]);
}

const fixed = (value, digits) => (value === undefined || !Number.isFinite(value) ? '—' : value.toFixed(digits));
const seconds = (value) => (value === undefined ? '—' : value < 10 ? value.toFixed(2) : value.toFixed(value < 100 ? 1 : 0));

/** What the notes column says of a step: its pages, its queries, what it wrote. */
function notes(step) {
  const facts = step.facts ?? {};
  const parts = [];
  if (facts.counts?.records !== undefined) parts.push(`${facts.counts.records} records`);
  if (facts.rescanSeconds !== undefined) parts.push(`rescan ${seconds(facts.rescanSeconds)} s`);
  if (facts.firstPageMs !== undefined) {
    const medians =
      facts.firstTenMedianMs !== undefined
        ? `; medians: first ten ${facts.firstTenMedianMs}, last ten ${facts.lastTenMedianMs}, all ${facts.medianPageMs}`
        : '';
    parts.push(`page ms first ${facts.firstPageMs}, last full ${facts.lastFullPageMs} (${facts.pages} pages${medians})`);
  }
  if (facts.firstListRecordsMs !== undefined) parts.push(`first ListRecords (cold) ${facts.firstListRecordsMs} ms`);
  if (facts.queries)
    parts.push(
      `ready ${seconds(facts.firstAnswerSeconds)} s; ${Object.entries(facts.queries)
        .map(([name, query]) => `${name.split(':')[0]} ${query.status === 200 ? `${(query.medianSeconds * 1000).toFixed(0)} ms` : query.status}`)
        .join(', ')}`,
    );
  if (facts.files !== undefined) parts.push(`${facts.files} files`);
  if (facts.outputBytes) parts.push(`${fixed(facts.outputBytes / MB, 1)} MB out`);
  if (!step.ok) parts.push(step.timedOut ? '**timed out**' : '**failed**');
  return parts.join('; ');
}

/** One Markdown table of a size's steps. */
export function stepTable(entry) {
  const lines = [`| step | wall s | oaibag CPU s | oaibag peak MB | server CPU s | server peak MB | notes |`, '| --- | --: | --: | --: | --: | --: | --- |'];
  for (const step of entry.steps) {
    const own = step.processes.oaibag;
    const serverName = step.processes.repository ? 'repository' : step.processes.serve ? 'serve' : undefined;
    const server = serverName ? step.processes[serverName] : undefined;
    lines.push(
      `| ${step.step}${serverName ? ` (${serverName})` : ''} | ${seconds(step.seconds)} | ${own ? seconds(own.cpuSeconds) : ''} | ${own ? fixed(own.peakRssBytes / MB, 0) : ''} | ${server ? seconds(server.cpuSeconds) : ''} | ${server ? fixed(server.peakRssBytes / MB, 0) : ''} | ${notes(step)} |`,
    );
  }
  return lines.join('\n');
}

/** The exponents as a table: one row per step, one column group per pair of sizes. */
export function exponentTable(pairs) {
  if (pairs.length === 0) return '';
  const head = pairs.map((pair) => `${sizeLabel(pair.from)}→${sizeLabel(pair.to)} time / CPU / memory`);
  const lines = [`| step | ${head.join(' | ')} |`, `| --- | ${pairs.map(() => '---').join(' | ')} |`];
  const steps = [...new Set(pairs.flatMap((pair) => Object.keys(pair.steps)))];
  for (const step of steps) {
    const cells = pairs.map((pair) => {
      const growth = pair.steps[step];
      if (!growth) return '—';
      const main = Object.keys(growth.cpu)[0];
      return `${fixed(growth.time, 2)} / ${fixed(growth.cpu[main], 2)} / ${fixed(growth.memory[main], 2)}`;
    });
    lines.push(`| ${step} | ${cells.join(' | ')} |`);
  }
  return lines.join('\n');
}

export function targetTable(checks) {
  const lines = ['| target | value | limit | | basis |', '| --- | --: | --: | --- | --- |'];
  for (const check of checks)
    lines.push(
      `| ${check.text} | ${Number.isFinite(check.value) ? `${fixed(check.value, 2)} ${check.unit}` : 'failed'} | ${check.limit} ${check.unit} | ${check.pass ? 'PASS' : 'MISS'} | ${check.basis} |`,
    );
  return lines.join('\n');
}

/** The whole Markdown report of a results file: per size, the exponents, the targets, the synthetic catalogs. */
export function markdownReport(results) {
  const entries = Object.values(results.sizes ?? {}).sort((a, b) => a.n - b.n);
  const out = [];
  for (const entry of entries) {
    const site = entry.site ?? {};
    out.push(
      `**${sizeLabel(entry.n)} files** (${entry.date}, ${entry.commit}; load average ${entry.loadAverage?.map((value) => value.toFixed(1)).join(' ')}; site ${fixed((site.bytes ?? 0) / MB, 0)} MB${site.generationSeconds ? `, generated in ${seconds(site.generationSeconds)} s` : ''}; the whole size took ${seconds(entry.totalSeconds)} s)\n`,
    );
    out.push(stepTable(entry), '');
  }
  const pairs = exponents(entries);
  if (pairs.length > 0) out.push("**Growth exponents** (wall time / CPU of the step's own process / its peak RSS)\n", exponentTable(pairs), '');
  const synthetic = Object.values(results.synthetic ?? {}).sort((a, b) => a.n - b.n);
  for (const entry of synthetic) {
    out.push(
      `**Synthetic catalog of ${sizeLabel(entry.n)} resources** (from the ${sizeLabel(entry.from)} archive, ${entry.build.copies} copies, built in ${seconds(entry.build.seconds)} s, catalog ${fixed(entry.build.catalogBytes / MB, 0)} MB)\n`,
    );
    out.push(stepTable(entry), '');
  }
  const syntheticPairs = exponents([...entries.filter((entry) => entry.n === synthetic[0]?.from), ...synthetic]);
  if (syntheticPairs.length > 0) out.push('**Growth exponents, synthetic catalogs**\n', exponentTable(syntheticPairs), '');
  const checks = checkTargets(entries);
  if (checks.length > 0) out.push('**Targets** (issue 27\'s "Done when")\n', targetTable(checks), '');
  return out.join('\n');
}
