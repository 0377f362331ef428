// The house rules, checked on the source: no import cycle in any package (type-only imports
// count: a cycle of types is still two modules that cannot be understood apart), and in the
// archiver, the repository and oai-pmh each folder imports only from the levels below it
// (docs/architecture.md); and the top-level tests import each package through its public API only.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** The archiver's folders, lowest first; a folder may import from its own and lower levels only. */
const ARCHIVER_LAYERS: Record<string, number> = {
  core: 0,
  archive: 1,
  oai: 2,
  bag: 2,
  aip: 2.5, // oaibag's AIP profile and layout on top of generic BagIt; read by catalog and everything above
  catalog: 3,
  ingest: 3.7, // one run that harvest and import feed: above catalog, oai and bag, below both sources
  harvest: 4,
  urls: 4,
  restore: 4,
  verify: 4,
  audit: 4,
  health: 3.5, // read by serve (/metrics) and mirror; reads catalog and archive
  reindex: 4,
  serve: 4,
  export: 4,
  import: 5, // above verify, whose bag check it runs on serialized bags
  mirror: 5,
  repair: 5, // above verify, whose fixity check it runs first
  migrate: 5, // above reindex and ingest, whose bag listing and crash recovery it runs
  commands: 6,
  '.': 7, // cli.ts and index.ts
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sourceFiles(join(dir, entry.name)) : entry.name.endsWith('.ts') ? [join(dir, entry.name)] : [],
  );
}

/** The package's modules and, for each, the modules it imports (static, type-only and re-exports). */
function importGraph(src: string): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(src)) {
    const text = readFileSync(file, 'utf8');
    const targets = [...text.matchAll(/(?:^|\n)\s*(?:import|export)\b[^;]*?\bfrom\s+'(\.{1,2}\/[^']+)\.js'/g)].map((match) =>
      relative(src, resolve(dirname(file), `${match[1]!}.ts`)),
    );
    graph.set(relative(src, file), [...new Set(targets)]);
  }
  return graph;
}

/** Every cycle found by a depth-first walk, each as the list of its modules. */
function cycles(graph: Map<string, string[]>): string[][] {
  const found: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (node: string): void => {
    state.set(node, 'open');
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      if (state.get(next) === 'open') found.push([...stack.slice(stack.indexOf(next)), next]);
      else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(node, 'done');
  };
  for (const node of [...graph.keys()].sort()) if (!state.has(node)) visit(node);
  return found;
}

for (const name of ['didl', 'oai-pmh', 'repository', 'archiver']) {
  test(`packages/${name}: no import cycle`, () => {
    const graph = importGraph(join(ROOT, 'packages', name, 'src'));
    assert.ok(graph.size > 5, 'the source was found');
    assert.deepEqual(
      cycles(graph).map((cycle) => cycle.join(' -> ')),
      [],
    );
  });
}

/** The repository's folders, lowest first (docs/architecture.md). */
const REPOSITORY_LAYERS: Record<string, number> = {
  core: 0,
  site: 1,
  access: 1,
  oai: 2,
  http: 3,
  '.': 4, // repository.ts, its options, cli.ts, index.ts
};

/**
@@ */
const OAI_PMH_LAYERS: Record<string, number> = {
  '.': 0,
  access: 0,
  site: 0,
  provider: 1,
  'index.ts': 2,
};

for (const [name, layers] of [
  ['archiver', ARCHIVER_LAYERS],
  ['repository', REPOSITORY_LAYERS],
  ['oai-pmh', OAI_PMH_LAYERS],
] as const) {
  test(`packages/${name}: every folder imports only from its own level and the levels below it`, () => {
    const graph = importGraph(join(ROOT, 'packages', name, 'src'));
    assert.ok(graph.size > 5, 'the source was found');
    const folderOf = (module: string): string => (module.includes('/') ? module.split('/')[0]! : module in layers ? module : '.');
    const wrong: string[] = [];
    for (const [module, targets] of graph) {
      const from = folderOf(module);
      assert.ok(from in layers, `${module}: its folder ${from} has no place in the layers (docs/architecture.md)`);
      for (const target of targets) {
        const to = folderOf(target);
        if (to !== from && (layers as Record<string, number>)[to]! >= (layers as Record<string, number>)[from]!) wrong.push(`${module} -> ${target}`);
      }
    }
    assert.deepEqual(wrong, []);
  });
}

test('packages/archiver: the catalog owns its SQL (no statement and no SQL text outside catalog/)', () => {
  const src = join(ROOT, 'packages/archiver/src');
  const found: string[] = [];
  for (const file of sourceFiles(src)) {
    const module = relative(src, file);
    if (module.startsWith('catalog/')) continue;
    readFileSync(file, 'utf8')
      .split('\n')
      .forEach((line, index) => {
        if (/\.statement\(|\b(SELECT|INSERT INTO|DELETE FROM|CREATE TABLE|BEGIN|COMMIT)\b|\bUPDATE \w+ SET\b/.test(line))
          found.push(`${module}:${index + 1}: ${line.trim()}`);
      });
  }
  assert.deepEqual(found, []);
});

test('test/: every package is imported through its public API (src/index.ts) only', () => {
  const dir = join(ROOT, 'test');
  const found: string[] = [];
  for (const name of readdirSync(dir)) {
    if (!/\.(ts|mts|mjs|cjs)$/.test(name)) continue;
    const text = readFileSync(join(dir, name), 'utf8');
    for (const match of text.matchAll(/(?:\bfrom\s+|\bimport\s*\(\s*)['"]((?:\.\.\/)+packages\/[^/'"]+\/(?:src|dist)\/[^'"]+)['"]/g)) {
      if (!/^(?:\.\.\/)+packages\/[^/]+\/src\/index\.ts$/.test(match[1]!)) found.push(`${name}: ${match[1]}`);
    }
  }
  assert.ok(readdirSync(dir).length > 20, 'the tests were found');
  assert.deepEqual(found, [], 'a behaviour test reaches into a package (docs/architecture.md, "Public APIs and the tests")');
});
