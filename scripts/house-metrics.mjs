#!/usr/bin/env node
// Measures the house (issue 26): sizes, the longest functions, imports between the archiver's
// stage folders, tests that import modules by deep path, the public API of each package, and
// the places that format or parse the AIP layout names and bag-info labels. A measuring tool,
// not a test: it prints Markdown tables to compare before and after a refactoring.
//
//   node scripts/house-metrics.mjs                    the working tree, Markdown on stdout
//   node scripts/house-metrics.mjs --rev <commit>     the files of a commit (git), not the working tree
//   node scripts/house-metrics.mjs --json [file]      JSON instead of Markdown (on stdout, or into file)
//
// It only reads: the files, or with --rev git's objects. Syntax comes from TypeScript's parser
// (one file at a time, no type checking), so comments never count as code.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, posix, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const SOURCE = /\.(ts|mts|cts|js|mjs|cjs)$/;
const LONGEST = 15;

/** The labels the archiver writes into bag-info.txt (bag/bag-writer.ts, harvest/harvest-batch.ts at 7c307fe). */
const BAG_INFO_LABELS = new Set([
  'Bagging-Date',
  'Bag-Size',
  'Payload-Oxum',
  'Oaibag-Format',
  'External-Description',
  'OAI-Base-URL',
  'Source-Repository-Name',
  'Harvest-Id',
  'Harvest-Started',
  'Metadata-Prefix',
  'Delivery-Name',
  'Delivery-Kind',
  'Delivery-Size',
  'Harvest-From',
  'Harvest-Until',
  'Harvest-Set',
  'List-Response-Date',
  'Batch-Pages',
  'Resumption-Token',
  'List-End',
  'Bagged-At',
  'New-Payloads',
]);

const LOWER_CASE_LABELS = new Set([...BAG_INFO_LABELS].map((label) => label.toLowerCase()));

function parseArguments(argv) {
  const options = { rev: null, json: false, jsonFile: null };
  for (let i = 0; i < argv.length; i++) {
    const argument = argv[i];
    if (argument === '--rev' && argv[i + 1]) options.rev = argv[++i];
    else if (argument === '--json') {
      options.json = true;
      if (argv[i + 1] && !argv[i + 1].startsWith('--')) options.jsonFile = argv[++i];
    } else {
      process.stderr.write(`house-metrics: unknown argument ${argument}\nusage: node scripts/house-metrics.mjs [--rev <commit>] [--json [file]]\n`);
      process.exit(2);
    }
  }
  return options;
}

/** The measured files (repository-relative, '/'-separated) and their text: from the working tree or from a commit. */
function readFiles(rev) {
  const wanted = (path) => SOURCE.test(path) && !path.includes('/dist/') && !path.includes('node_modules/') && isMeasured(path);
  const files = new Map();
  if (rev === null) {
    const walk = (dir) => {
      for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
        const path = posix.join(dir, entry.name);
        if (entry.isDirectory() && entry.name !== 'node_modules' && entry.name !== 'dist') walk(path);
        else if (entry.isFile() && wanted(path)) files.set(path, readFileSync(join(ROOT, path), 'utf8'));
      }
    };
    walk('test');
    for (const name of readdirSync(join(ROOT, 'packages'))) {
      for (const part of ['src', 'test']) {
        try {
          walk(`packages/${name}/${part}`);
        } catch (error) {
          if (error.code !== 'ENOENT') throw error;
        }
      }
    }
    return files;
  }
  const listing = git(['ls-tree', '-r', rev, '--', 'packages', 'test'])
    .split('\n')
    .filter(Boolean)
    .map((line) => /^\d+ blob ([0-9a-f]+)\t(.+)$/.exec(line))
    .filter((match) => match && wanted(match[2]));
  const batch = execFileSync('git', ['cat-file', '--batch'], {
    cwd: ROOT,
    input: listing.map((match) => match[1]).join('\n'),
    maxBuffer: 1 << 30,
  });
  let at = 0;
  for (const match of listing) {
    const headerEnd = batch.indexOf(10, at);
    const size = Number(batch.subarray(at, headerEnd).toString('latin1').split(' ')[2]);
    files.set(match[2], batch.subarray(headerEnd + 1, headerEnd + 1 + size).toString('utf8'));
    at = headerEnd + 1 + size + 1;
  }
  return files;
}

function isMeasured(path) {
  return path.startsWith('test/') || /^packages\/[^/]+\/(src|test)\//.test(path);
}

function git(args) {
  return execFileSync('git', args, { cwd: ROOT, encoding: 'utf8', maxBuffer: 1 << 28 });
}

const nonBlankLines = (text) => text.split('\n').filter((line) => line.trim() !== '').length;
const packageOf = (path) => /^packages\/([^/]+)\//.exec(path)?.[1] ?? null;
const isSource = (path) => /^packages\/[^/]+\/src\//.test(path);
const isTest = (path) => path.startsWith('test/') || /^packages\/[^/]+\/test\//.test(path);

/** The archiver's stage folder of a source path ('.' for cli.ts and index.ts). */
function archiverFolder(path) {
  const rest = path.slice('packages/archiver/src/'.length);
  return rest.includes('/') ? rest.slice(0, rest.indexOf('/')) : '.';
}

function parse(path, text) {
  const kind = path.endsWith('.ts') ? ts.ScriptKind.TS : ts.ScriptKind.JS;
  return ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true, kind);
}

function visitAll(node, visit) {
  visit(node);
  ts.forEachChild(node, (child) => visitAll(child, visit));
}

const lineOf = (sourceFile, position) => sourceFile.getLineAndCharacterOfPosition(position).line + 1;

// --- sizes -------------------------------------------------------------------------------------

function sizes(files) {
  const rows = new Map();
  const add = (key, text) => {
    const row = rows.get(key) ?? { files: 0, lines: 0 };
    row.files++;
    row.lines += nonBlankLines(text);
    rows.set(key, row);
  };
  for (const [path, text] of files) {
    const name = packageOf(path);
    if (isSource(path)) add(`packages/${name}/src`, text);
    else if (name !== null) add(`packages/${name}/test`, text);
    else add('test', text);
  }
  const folders = new Map();
  for (const [path, text] of files) {
    if (!path.startsWith('packages/archiver/src/')) continue;
    const folder = archiverFolder(path);
    const row = folders.get(folder) ?? { files: 0, lines: 0 };
    row.files++;
    row.lines += nonBlankLines(text);
    folders.set(folder, row);
  }
  const sorted = (map) => Object.fromEntries([...map].sort(([a], [b]) => a.localeCompare(b)));
  return { packages: sorted(rows), archiverFolders: sorted(folders) };
}

// --- functions ---------------------------------------------------------------------------------

const FUNCTION_KINDS = new Set([
  ts.SyntaxKind.FunctionDeclaration,
  ts.SyntaxKind.FunctionExpression,
  ts.SyntaxKind.ArrowFunction,
  ts.SyntaxKind.MethodDeclaration,
  ts.SyntaxKind.Constructor,
  ts.SyntaxKind.GetAccessor,
  ts.SyntaxKind.SetAccessor,
]);

/** A readable name: `f`, `Class.method`, `variable`, or `(callback in f)` for an anonymous one. */
function functionName(node) {
  const own = (n) => {
    if (n.name && (ts.isIdentifier(n.name) || ts.isStringLiteral(n.name) || ts.isPrivateIdentifier(n.name))) return n.name.text;
    if (ts.isConstructorDeclaration(n)) return 'constructor';
    const parent = n.parent;
    if (parent && (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent)) && ts.isIdentifier(parent.name))
      return parent.name.text;
    return null;
  };
  const qualified = (n) => {
    const name = own(n);
    if (name === null) return null;
    const holder = ts.isPropertyDeclaration(n.parent) ? n.parent.parent : n.parent;
    return holder && ts.isClassLike(holder) && holder.name ? `${holder.name.text}.${name}` : name;
  };
  const name = qualified(node);
  if (name !== null) return name;
  for (let up = node.parent; up; up = up.parent) {
    if (FUNCTION_KINDS.has(up.kind)) {
      const outer = qualified(up);
      if (outer !== null) return `(callback in ${outer})`;
    }
  }
  return '(anonymous)';
}

function functions(sourceFiles) {
  const found = [];
  for (const [path, sourceFile] of sourceFiles) {
    if (!isSource(path)) continue;
    visitAll(sourceFile, (node) => {
      if (!FUNCTION_KINDS.has(node.kind) || !node.body) return;
      const start = lineOf(sourceFile, node.getStart(sourceFile));
      const lines = lineOf(sourceFile, node.end) - start + 1;
      found.push({ lines, at: `${path.replace(/^packages\//, '')}:${start}`, name: functionName(node) });
    });
  }
  found.sort((a, b) => b.lines - a.lines || a.at.localeCompare(b.at));
  return {
    count: found.length,
    over50: found.filter((f) => f.lines > 50).length,
    over100: found.filter((f) => f.lines > 100).length,
    longest: found.slice(0, LONGEST),
  };
}

// --- imports -----------------------------------------------------------------------------------

/** Every module specifier a file names: import and export … from, import(), import('…') types, require(). */
function specifiers(sourceFile) {
  const found = [];
  visitAll(sourceFile, (node) => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier))
      found.push(node.moduleSpecifier.text);
    else if (ts.isCallExpression(node) && node.arguments.length > 0 && ts.isStringLiteralLike(node.arguments[0])) {
      const dynamic = node.expression.kind === ts.SyntaxKind.ImportKeyword;
      const required = ts.isIdentifier(node.expression) && node.expression.text === 'require';
      if (dynamic || required) found.push(node.arguments[0].text);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal))
      found.push(node.argument.literal.text);
  });
  return found;
}

/** The repository path a relative specifier names, with `.js` read as the `.ts` source beside it. */
function resolveRelative(from, specifier) {
  if (!specifier.startsWith('.')) return null;
  return posix.normalize(posix.join(posix.dirname(from), specifier)).replace(/\.js$/, '.ts');
}

/** For each archiver folder, the modules of other folders (and packages) it imports: one edge per importing file and imported module. */
function folderImports(sourceFiles) {
  const matrix = {};
  for (const [path, sourceFile] of sourceFiles) {
    if (!path.startsWith('packages/archiver/src/')) continue;
    const from = archiverFolder(path);
    const targets = new Set();
    for (const specifier of specifiers(sourceFile)) {
      const target = resolveRelative(path, specifier);
      if (target?.startsWith('packages/archiver/src/')) targets.add(target);
      else if (specifier.startsWith('@oaibag/')) targets.add(specifier);
    }
    const row = (matrix[from] ??= {});
    for (const target of targets) {
      const to = target.startsWith('@') ? target : archiverFolder(target);
      row[to] = (row[to] ?? 0) + 1;
    }
  }
  return matrix;
}

/**
 * Per package: the modules of its src/ (other than src/index.ts) that tests import by path, how many
 * import statements do, and how many import the public API instead (src/index.ts or `@oaibag/<name>`).
 */
function deepTestImports(sourceFiles) {
  const result = {};
  for (const [path, sourceFile] of sourceFiles) {
    if (!isTest(path)) continue;
    for (const specifier of specifiers(sourceFile)) {
      const byName = /^@oaibag\/([^/]+)$/.exec(specifier)?.[1];
      const target = byName ? `packages/${byName}/src/index.ts` : resolveRelative(path, specifier);
      const name = target && /^packages\/([^/]+)\/src\//.exec(target)?.[1];
      if (!name) continue;
      const entry = (result[name] ??= { modules: new Set(), statements: 0, testFiles: new Set(), viaIndex: 0 });
      if (target === `packages/${name}/src/index.ts`) {
        entry.viaIndex++;
        continue;
      }
      entry.modules.add(target);
      entry.statements++;
      entry.testFiles.add(path);
    }
  }
  return Object.fromEntries(
    Object.entries(result)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([name, entry]) => [
        name,
        {
          modules: entry.modules.size,
          statements: entry.statements,
          testFiles: entry.testFiles.size,
          indexStatements: entry.viaIndex,
          moduleList: [...entry.modules].sort(),
        },
      ]),
  );
}

// --- public API --------------------------------------------------------------------------------

/** The names a module exports (values and types apart), following `export * from` through the parsed files. */
function exportedNames(path, sourceFiles, seen = new Set()) {
  const names = new Map();
  const sourceFile = sourceFiles.get(path);
  if (!sourceFile || seen.has(path)) return { names, unresolved: sourceFile ? [] : [path] };
  seen.add(path);
  const unresolved = [];
  const isExported = (node) => ts.getCombinedModifierFlags(node) & ts.ModifierFlags.Export;
  for (const statement of sourceFile.statements) {
    if (ts.isExportDeclaration(statement)) {
      const typeOnly = statement.isTypeOnly;
      if (statement.exportClause && ts.isNamedExports(statement.exportClause)) {
        for (const element of statement.exportClause.elements) names.set(element.name.text, typeOnly || element.isTypeOnly ? 'type' : 'value');
      } else if (statement.exportClause) {
        names.set(statement.exportClause.name.text, typeOnly ? 'type' : 'value');
      } else if (statement.moduleSpecifier) {
        const target = resolveRelative(path, statement.moduleSpecifier.text);
        if (!target) unresolved.push(statement.moduleSpecifier.text);
        else {
          const inner = exportedNames(target, sourceFiles, seen);
          for (const [name, kind] of inner.names) if (name !== 'default') names.set(name, typeOnly ? 'type' : kind);
          unresolved.push(...inner.unresolved);
        }
      }
    } else if (ts.isExportAssignment(statement)) names.set('default', 'value');
    else if (isExported(statement)) {
      const type = ts.isInterfaceDeclaration(statement) || ts.isTypeAliasDeclaration(statement);
      if (ts.isVariableStatement(statement)) {
        for (const declaration of statement.declarationList.declarations) if (ts.isIdentifier(declaration.name)) names.set(declaration.name.text, 'value');
      } else if (statement.name) names.set(statement.name.text, type ? 'type' : 'value');
    }
  }
  return { names, unresolved };
}

function publicApi(sourceFiles) {
  const result = {};
  for (const path of [...sourceFiles.keys()].filter((p) => /^packages\/[^/]+\/src\/index\.ts$/.test(p)).sort()) {
    const { names, unresolved } = exportedNames(path, sourceFiles);
    const values = [...names.values()].filter((kind) => kind === 'value').length;
    result[packageOf(path)] = { names: names.size, values, types: names.size - values, unresolvedStarExports: unresolved };
  }
  return result;
}

// --- the AIP layout and bag-info labels ----------------------------------------------------------

/**
 * Where packages/*\/src formats or parses `harvest-NNNNNN` / `batch-NNNNN` names and bag-info
 * labels, found in the syntax (comments never match):
 * - layout parse: a regular expression literal containing `harvest-` or `batch-`;
 * - layout format: a string or template literal with `harvest-` or `batch-` before a digit, a
 *   `${…}` or its end, or a `.padStart(6|5, …)` call;
 * - layout split: `<bag path>.split('/').slice(1)`, code that knows a bag path is `aips/<harvest>/<batch>`
 *   (counted apart: it names no layout string);
 * - label read: a label of BAG_INFO_LABELS (any case) as the argument of `.get(…)` or compared with `===`, or a regular expression
 *   or string literal containing `Label:`; label write: a label as the first element of an array
 *   literal (a [label, value] pair) or a template text `Label: `.
 */
/** `x.split('/').slice(1)` where x names a bag path (its text mentions "bag"). */
function isBagPathSplit(node, sourceFile) {
  if (!ts.isCallExpression(node) || !ts.isPropertyAccessExpression(node.expression) || node.expression.name.text !== 'slice') return false;
  const split = node.expression.expression;
  return (
    ts.isCallExpression(split) &&
    ts.isPropertyAccessExpression(split.expression) &&
    split.expression.name.text === 'split' &&
    split.arguments[0]?.getText(sourceFile) === "'/'" &&
    /bag/i.test(split.expression.expression.getText(sourceFile)) &&
    node.arguments[0]?.getText(sourceFile) === '1'
  );
}

function layoutPlaces(sourceFiles) {
  const places = [];
  const LAYOUT_TEXT = /(?:^|[^\w-])(?:harvest|batch)-(?:\d|$|N{5})/;
  const labelIn = (text) => [...BAG_INFO_LABELS].find((label) => text.includes(`${label}:`));
  for (const [path, sourceFile] of sourceFiles) {
    if (!isSource(path)) continue;
    const add = (node, kind, what) => places.push({ at: `${path.replace(/^packages\//, '')}:${lineOf(sourceFile, node.getStart(sourceFile))}`, kind, what });
    visitAll(sourceFile, (node) => {
      if (node.kind === ts.SyntaxKind.RegularExpressionLiteral) {
        if (/harvest-|batch-/.test(node.text)) add(node, 'layout parse', node.text);
        const label = labelIn(node.text);
        if (label) add(node, 'label read', `${label} (regex)`);
      } else if (ts.isTemplateExpression(node)) {
        const texts = [node.head.text, ...node.templateSpans.map((span) => span.literal.text)];
        if (texts.some((text) => LAYOUT_TEXT.test(text))) add(node, 'layout format', node.getText(sourceFile).slice(0, 60));
        const label = texts.map(labelIn).find(Boolean);
        if (label) add(node, 'label write', `${label} (template)`);
      } else if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) {
        if (LAYOUT_TEXT.test(node.text)) add(node, 'layout format', JSON.stringify(node.text).slice(0, 60));
        if (LOWER_CASE_LABELS.has(node.text.toLowerCase())) {
          const parent = node.parent;
          const isGet = ts.isCallExpression(parent) && ts.isPropertyAccessExpression(parent.expression) && parent.expression.name.text === 'get';
          const isCompared = ts.isBinaryExpression(parent) && parent.operatorToken.kind === ts.SyntaxKind.EqualsEqualsEqualsToken;
          const isPair = ts.isArrayLiteralExpression(parent) && parent.elements[0] === node && parent.elements.length === 2;
          add(node, isGet || isCompared ? 'label read' : isPair ? 'label write' : 'label other', node.text);
        } else {
          const label = labelIn(node.text);
          if (label) add(node, 'label read', `${label} (string)`);
        }
      } else if (isBagPathSplit(node, sourceFile)) add(node, 'layout split', node.getText(sourceFile).slice(0, 60));
      else if (
        ts.isCallExpression(node) &&
        ts.isPropertyAccessExpression(node.expression) &&
        node.expression.name.text === 'padStart' &&
        node.arguments[0] &&
        ts.isNumericLiteral(node.arguments[0]) &&
        ['5', '6'].includes(node.arguments[0].text)
      )
        add(node, 'layout format', `padStart(${node.arguments[0].text})`);
    });
  }
  const byFile = {};
  for (const place of places) {
    const file = place.at.slice(0, place.at.lastIndexOf(':'));
    const row = (byFile[file] ??= { 'layout parse': 0, 'layout format': 0, 'layout split': 0, 'label read': 0, 'label write': 0, 'label other': 0, lines: [] });
    row[place.kind]++;
    row.lines.push(`${place.at.slice(place.at.lastIndexOf(':') + 1)} ${place.kind}: ${place.what}`);
  }
  const filesWith = (...kinds) => Object.keys(byFile).filter((file) => kinds.some((kind) => byFile[file][kind] > 0));
  return {
    layoutFiles: filesWith('layout parse', 'layout format'),
    layoutSplitFiles: filesWith('layout split'),
    labelReadFiles: filesWith('label read'),
    labelWriteFiles: filesWith('label write'),
    byFile,
  };
}

// --- output ------------------------------------------------------------------------------------

function measure(options) {
  const files = readFiles(options.rev);
  const sourceFiles = new Map([...files].map(([path, text]) => [path, parse(path, text)]));
  const rev = options.rev ?? 'HEAD';
  const commit = git(['log', '-1', '--format=%h %cI', rev]).trim().split(' ');
  return {
    measured: options.rev === null ? `working tree at ${commit[0]}` : `commit ${commit[0]}`,
    commit: commit[0],
    commitDate: commit[1],
    sizes: sizes(files),
    functions: functions(sourceFiles),
    folderImports: folderImports(sourceFiles),
    deepTestImports: deepTestImports(sourceFiles),
    publicApi: publicApi(sourceFiles),
    layout: layoutPlaces(sourceFiles),
  };
}

function table(header, rows) {
  return [`| ${header.join(' | ')} |`, `| ${header.map(() => '---').join(' | ')} |`, ...rows.map((row) => `| ${row.join(' | ')} |`)].join('\n');
}

function markdown(m) {
  const out = [];
  out.push(`Measured: ${m.measured} (${m.commitDate}), by scripts/house-metrics.mjs. Lines are non-blank lines.`, '');
  out.push(
    table(
      ['files of', 'files', 'lines'],
      Object.entries(m.sizes.packages).map(([key, row]) => [key, row.files, row.lines]),
    ),
    '',
  );
  const folders = Object.entries(m.sizes.archiverFolders);
  out.push(
    table(
      ['archiver folder', 'files', 'lines'],
      folders.map(([key, row]) => [`\`${key}/\``, row.files, row.lines]),
    ),
    '',
  );
  const f = m.functions;
  out.push(`Functions and methods in packages/*/src: ${f.count}; over 50 lines: ${f.over50}; over 100 lines: ${f.over100}. The ${LONGEST} longest:`, '');
  out.push(
    table(
      ['lines', 'where', 'name'],
      f.longest.map((row) => [row.lines, row.at, `\`${row.name}\``]),
    ),
    '',
  );
  out.push('Imports between the archiver folders (one edge per importing file and imported module; `own`: within the folder):', '');
  const rows = Object.entries(m.folderImports)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([from, row]) => {
      const own = row[from] ?? 0;
      const others = Object.entries(row)
        .filter(([to]) => to !== from)
        .sort(([, a], [, b]) => b - a)
        .map(([to, n]) => `${to} ${n}`);
      const total = Object.entries(row).reduce((sum, [to, n]) => sum + (to === from ? 0 : n), 0);
      return [`\`${from}/\``, own, total, others.join(', ')];
    });
  out.push(table(['from', 'own', 'to others', 'edges to'], rows), '');
  out.push(
    'Deep test imports (test/ and packages/*/test/ importing src/ modules other than src/index.ts by path; the public API is src/index.ts or `@oaibag/<name>`):',
    '',
  );
  out.push(
    table(
      ['package', 'modules', 'import statements', 'test files', 'statements via the public API'],
      Object.entries(m.deepTestImports).map(([name, row]) => [name, row.modules, row.statements, row.testFiles, row.indexStatements]),
    ),
    '',
  );
  out.push('Public API (names exported by src/index.ts; `export *` followed through the sources):', '');
  out.push(
    table(
      ['package', 'names', 'values', 'types', 'unresolved export *'],
      Object.entries(m.publicApi).map(([name, row]) => [name, row.names, row.values, row.types, row.unresolvedStarExports.length]),
    ),
    '',
  );
  const l = m.layout;
  out.push(
    `AIP layout names and bag-info labels in packages/*/src (syntax, not comments): layout names formatted or parsed in ${l.layoutFiles.length} files, ` +
      `labels read back in ${l.labelReadFiles.length}, written in ${l.labelWriteFiles.length}; ` +
      `a bag path split by its two levels in ${l.layoutSplitFiles.length}:`,
    '',
  );
  out.push(
    table(
      ['file', 'layout parse', 'layout format', 'layout split', 'label read', 'label write', 'label other', 'lines'],
      Object.entries(l.byFile)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([file, row]) => [
          file,
          row['layout parse'],
          row['layout format'],
          row['layout split'],
          row['label read'],
          row['label write'],
          row['label other'],
          [...new Set(row.lines.map((line) => line.split(' ')[0]))].join(' '),
        ]),
    ),
  );
  return `${out.join('\n')}\n`;
}

const options = parseArguments(process.argv.slice(2));
const metrics = measure(options);
if (!options.json) process.stdout.write(markdown(metrics));
else if (options.jsonFile) writeFileSync(options.jsonFile, `${JSON.stringify(metrics, null, 2)}\n`);
else process.stdout.write(`${JSON.stringify(metrics, null, 2)}\n`);
