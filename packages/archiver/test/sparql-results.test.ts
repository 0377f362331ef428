// serve/sparql-results.ts: a select query's solutions cut to the row limit before they are
// parsed (test/sparql-limits.test.ts runs the limits against the server).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { firstSolutions } from '../src/serve/sparql-results.ts';

test("a select query's solutions are cut to the row limit before they are parsed, braces and quotes inside values included", () => {
  const rows = [{ s: { type: 'literal', value: 'a "}{]" \\ b' } }, { s: { type: 'uri', value: 'urn:x' } }, { s: { type: 'literal', value: '}}},' } }];
  const json = JSON.stringify({ head: { vars: ['s'] }, results: { bindings: rows } });
  for (let limit = 1; limit <= 4; limit++) {
    const { solutions, truncated } = firstSolutions(json, limit);
    assert.deepEqual(solutions, { head: { vars: ['s'] }, results: { bindings: rows.slice(0, limit) } });
    assert.equal(truncated, limit < rows.length);
  }
  assert.deepEqual(firstSolutions('{"head":{"vars":[]},"results":{"bindings":[]}}', 2), {
    solutions: { head: { vars: [] }, results: { bindings: [] } },
    truncated: false,
  });
});
