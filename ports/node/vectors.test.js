'use strict';
// Runs every rule-level vector (docs/vectors.md) through ports/node/rules.js.
// EPOCHAL_VECTORS names the directory `epochal vectors --out DIR` wrote.

const { test } = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const path = require('node:path');
const { FAMILIES, FORMAT } = require('./rules.js');

const dir = process.env.EPOCHAL_VECTORS;
if (!dir) throw new Error('set EPOCHAL_VECTORS to the directory `epochal vectors --out DIR` wrote');
const index = JSON.parse(fs.readFileSync(path.join(dir, 'index.json'), 'utf8'));

// the quota's tokens are compared with a tolerance; everything else exactly
function near(got, want) {
  if (typeof want === 'number' && typeof got === 'number' && !Number.isInteger(want)) {
    return Math.abs(got - want) <= 1e-9;
  }
  return false;
}

function equal(got, want) {
  if (near(got, want)) return true;
  try {
    assert.deepStrictEqual(got, want);
    return true;
  } catch {
    if (Array.isArray(want) && Array.isArray(got) && got.length === want.length) {
      return want.every((w, i) => equal(got[i], w));
    }
    if (want && got && typeof want === 'object' && typeof got === 'object') {
      const keys = Object.keys(want);
      return keys.length === Object.keys(got).length && keys.every((k) => equal(got[k], want[k]));
    }
    return false;
  }
}

test('the vectors are in a format this port reads', () => {
  assert.strictEqual(index.format, FORMAT);
});

test('this port implements every family the vectors have', () => {
  assert.deepStrictEqual(Object.keys(index.families).filter((f) => !(f in FAMILIES)), []);
});

for (const [family, { file, cases: count }] of Object.entries(index.families)) {
  test(`${family}: every case`, () => {
    const doc = JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8'));
    assert.strictEqual(doc.format, FORMAT);
    assert.strictEqual(doc.cases.length, count);
    const failed = [];
    for (const c of doc.cases) {
      const got = FAMILIES[family](c.input);
      if (!equal(got, c.expected)) failed.push(`${c.name} (${c.section}): got ${JSON.stringify(got)}, expected ${JSON.stringify(c.expected)}`);
    }
    assert.deepStrictEqual(failed.slice(0, 5), [], `${failed.length} of ${count} ${family} cases fail`);
  });
}
