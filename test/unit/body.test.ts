import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError } from '../../src/api/errors.js';
import {
  MAX_BODY_BYTES,
  MAX_NESTING_DEPTH,
  assertObject,
  decodeBody,
  decodeDocuments,
  exceedsDepth,
  findDuplicateFields,
  mediaTypeOf,
  yamlNestingBound,
} from '../../src/api/body.js';

const JSON_TYPE = 'application/json';
const YAML_TYPE = 'application/yaml';

function rejects(fn: () => unknown, code: number, pattern?: RegExp): ApiError {
  let caught: unknown;
  try {
    fn();
  } catch (e) {
    caught = e;
  }
  assert.ok(caught instanceof ApiError, `expected an ApiError, got ${String(caught)}`);
  assert.equal(caught.code, code, caught.message);
  if (pattern) assert.match(caught.message, pattern);
  return caught;
}

function timed<T>(fn: () => T): { ms: number; result: T | undefined; error: unknown } {
  const start = performance.now();
  try {
    const result = fn();
    return { ms: performance.now() - start, result, error: undefined };
  } catch (error) {
    return { ms: performance.now() - start, result: undefined, error };
  }
}

const b = (text: string): Buffer => Buffer.from(text, 'utf8');

test('MAX_BODY_BYTES is 3 MiB', () => {
  assert.equal(MAX_BODY_BYTES, 3 * 1024 * 1024);
});

test('mediaTypeOf strips parameters and case', () => {
  assert.equal(mediaTypeOf('Application/JSON; charset=utf-8'), 'application/json');
  assert.equal(mediaTypeOf(''), undefined);
  assert.equal(mediaTypeOf(undefined), undefined);
});

test('decodes JSON, including the +json patch types', () => {
  assert.deepEqual(decodeBody(b('{"a":[1,2,{"b":null}]}'), JSON_TYPE), { a: [1, 2, { b: null }] });
  assert.deepEqual(decodeBody(b('[{"op":"add"}]'), 'application/json-patch+json'), [{ op: 'add' }]);
  assert.deepEqual(decodeBody(b('{"a":1}'), 'application/merge-patch+json; charset=utf-8'), { a: 1 });
});

test('a JSON content type requires JSON', () => {
  rejects(() => decodeBody(b('a: 1'), JSON_TYPE), 400, /error decoding JSON/);
  rejects(() => decodeBody(b('{"a": 1,,}'), JSON_TYPE), 400, /error decoding JSON/);
});

test('JSON vs YAML detection', () => {
  // JSON sent as YAML, and without any content type
  assert.deepEqual(decodeBody(b('{"kind":"Pod"}'), YAML_TYPE), { kind: 'Pod' });
  assert.deepEqual(decodeBody(b('  {"kind":"Pod"}'), undefined), { kind: 'Pod' });
  // YAML without a content type
  assert.deepEqual(decodeBody(b('kind: Pod\nspec:\n  a: [1, 2]\n'), undefined), { kind: 'Pod', spec: { a: [1, 2] } });
  // YAML flow mapping that starts like JSON but is not JSON
  assert.deepEqual(decodeBody(b('{kind: Pod, n: 1}'), YAML_TYPE), { kind: 'Pod', n: 1 });
  assert.deepEqual(decodeBody(b('{kind: Pod}'), 'application/apply-patch+yaml'), { kind: 'Pod' });
});

test('unsupported media types are 415 and name the accepted types', () => {
  rejects(() => decodeBody(b('{}'), 'application/cbor'), 415, /application\/json, application\/yaml/);
  rejects(() => decodeBody(b('a=1'), 'application/x-www-form-urlencoded'), 415);
  const accept = ['application/json-patch+json', 'application/merge-patch+json'];
  rejects(() => decodeBody(b('{}'), JSON_TYPE, { accept }), 415, /json-patch\+json, application\/merge-patch\+json/);
  assert.deepEqual(decodeBody(b('[]'), 'application/json-patch+json', { accept }), []);
});

test('invalid UTF-8 is 400', () => {
  rejects(() => decodeBody(Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0x22, 0x7d]), JSON_TYPE), 400, /UTF-8/);
  rejects(() => decodeBody(Buffer.from([0x61, 0x3a, 0x20, 0xff]), YAML_TYPE), 400, /UTF-8/);
});

test('an empty body is 400 for decodeBody and no documents for decodeDocuments', () => {
  rejects(() => decodeBody(b('  \n'), JSON_TYPE), 400, /empty/);
  rejects(() => decodeBody(b('# only a comment\n'), YAML_TYPE), 400, /empty/);
  assert.deepEqual(decodeDocuments(b(''), YAML_TYPE), []);
});

test('100k nested [ is rejected quickly with 400, whatever the content type', () => {
  for (const [text, type] of [
    ['['.repeat(100_000), JSON_TYPE],
    ['['.repeat(100_000) + ']'.repeat(100_000), JSON_TYPE],
    ['['.repeat(100_000) + ']'.repeat(100_000), YAML_TYPE],
    ['['.repeat(100_000), undefined],
    ['{"a":'.repeat(100_000), JSON_TYPE],
    ['{a: '.repeat(100_000), YAML_TYPE],
    ['- '.repeat(100_000) + 'x', YAML_TYPE],
    ['a: '.repeat(100_000), YAML_TYPE],
    [Array.from({ length: 2000 }, (_, i) => `${' '.repeat(i)}k:`).join('\n'), YAML_TYPE],
  ] as const) {
    const { ms, error } = timed(() => decodeBody(b(text), type));
    assert.ok(error instanceof ApiError && error.code === 400, `${text.slice(0, 20)}: ${String(error)}`);
    assert.match(error.message, /nested too deeply/);
    assert.ok(ms < 1000, `${text.slice(0, 12)}… took ${ms.toFixed(0)} ms`);
  }
});

test('nesting up to the limit is accepted', () => {
  const depth = MAX_NESTING_DEPTH;
  const json = '['.repeat(depth) + ']'.repeat(depth);
  assert.ok(Array.isArray(decodeBody(b(json), JSON_TYPE)));
  rejects(() => decodeBody(b(`[${json}]`), JSON_TYPE), 400, /nested too deeply/);
  // brackets inside JSON strings do not count
  assert.deepEqual(decodeBody(b(JSON.stringify({ s: '['.repeat(10_000) })), JSON_TYPE), { s: '['.repeat(10_000) });
});

test('the YAML nesting bound never under-counts a realistic deep manifest', () => {
  let yaml = 'root:\n';
  for (let i = 1; i <= 40; i++) yaml += `${'  '.repeat(i)}- k${i}:\n`;
  yaml += `${'  '.repeat(41)}leaf: 1\n`;
  const bound = yamlNestingBound(yaml);
  assert.ok(bound >= 81 && bound <= MAX_NESTING_DEPTH, `bound ${bound}`);
  const decoded = decodeBody(b(yaml), YAML_TYPE);
  assert.equal(exceedsDepth(decoded, 81), false);
  assert.equal(exceedsDepth(decoded, 80), true);
});

test('a YAML alias bomb (9 levels x 9 aliases) is rejected fast with 400', () => {
  const lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
  const names = 'abcdefghi';
  for (let i = 1; i < names.length; i++) {
    lines.push(`${names[i]}: &${names[i]} [${Array(9).fill(`*${names[i - 1]}`).join(',')}]`);
  }
  const heapBefore = process.memoryUsage().heapUsed;
  const { ms, error } = timed(() => decodeBody(b(lines.join('\n')), YAML_TYPE));
  assert.ok(error instanceof ApiError && error.code === 400, String(error));
  assert.match(error.message, /alias/);
  assert.ok(ms < 100, `took ${ms.toFixed(1)} ms`);
  assert.ok(process.memoryUsage().heapUsed - heapBefore < 64 * 1024 * 1024, 'memory stayed bounded');
});

test('aliases of big values are rejected once the expansion budget is spent', () => {
  const text = `a: &a "${'x'.repeat(500_000)}"\nb: [${Array(60).fill('*a').join(',')}]`;
  rejects(() => decodeBody(b(text), YAML_TYPE), 400, /expands to too much data/);
});

test('YAML aliases are copied, not shared; self-reference is refused', () => {
  const doc = decodeBody(b('base: &b {image: nginx}\nx: *b\ny: *b\n'), YAML_TYPE) as Record<string, Record<string, string>>;
  assert.deepEqual(doc.x, { image: 'nginx' });
  doc.x!.image = 'changed';
  assert.equal(doc.y!.image, 'nginx');
  assert.equal(doc.base!.image, 'nginx');
  rejects(() => decodeBody(b('a: &r [1, *r]\n'), YAML_TYPE), 400, /inside itself/);
  rejects(() => decodeBody(b('a: *missing\n'), YAML_TYPE), 400, /unknown anchor/);
});

test('YAML 1.2 core schema: JSON-compatible values only', () => {
  assert.deepEqual(decodeBody(b('a: yes\nb: on\nc: 2001-12-14\nd: 0x1F\ne: ~\nf: 012\n1: one\ntrue: t\n'), YAML_TYPE), {
    a: 'yes',
    b: 'on',
    c: '2001-12-14',
    d: 31,
    e: null,
    f: 12,
    '1': 'one',
    true: 't',
  });
  rejects(() => decodeBody(b('a: !!binary aGVsbG8=\n'), YAML_TYPE), 400, /line 1: unsupported tag !!binary/);
  rejects(() => decodeBody(b('a: 1\nb: !custom {x: 1}\n'), YAML_TYPE), 400, /line 2: unsupported tag !custom/);
  rejects(() => decodeBody(b('a: .inf\n'), YAML_TYPE), 400, /Infinity cannot be represented in JSON/);
  rejects(() => decodeBody(b('a: .nan\n'), YAML_TYPE), 400, /NaN/);
  rejects(() => decodeBody(b('base: &b {x: 1}\nd:\n  <<: *b\n'), YAML_TYPE), 400, /line 3: merge keys/);
  rejects(() => decodeBody(b('? [a, b]\n: c\n'), YAML_TYPE), 400, /mapping keys must be/);
  assert.deepEqual(decodeBody(b('"<<": quoted keys are fine\n'), YAML_TYPE), { '<<': 'quoted keys are fine' });
  // explicit core tags are fine
  assert.deepEqual(decodeBody(b('a: !!str 12\nb: !!int "7"\n'), YAML_TYPE), { a: '12', b: 7 });
});

test('a __proto__ key stays an ordinary property', () => {
  const fromYaml = decodeBody(b('__proto__: {polluted: true}\n'), YAML_TYPE) as Record<string, unknown>;
  assert.equal(Object.getPrototypeOf(fromYaml), Object.prototype);
  assert.deepEqual(Object.keys(fromYaml), ['__proto__']);
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
});

test('YAML syntax errors are 400 with document and line', () => {
  rejects(() => decodeBody(b('a: 1\nb: [1, 2\n'), YAML_TYPE), 400, /^error converting YAML to JSON: yaml: line \d+: /);
  rejects(() => decodeDocuments(b('a: 1\n---\nb: c: d\n'), YAML_TYPE), 400, /^document 2: error converting YAML to JSON: yaml: line 3: /);
});

test('multi-document YAML: empty documents are skipped; decodeBody wants exactly one', () => {
  const text = '---\napiVersion: v1\nkind: ConfigMap\n---\n# nothing here\n---\n---\napiVersion: v1\nkind: Secret\n...\n';
  assert.deepEqual(decodeDocuments(b(text), YAML_TYPE), [
    { apiVersion: 'v1', kind: 'ConfigMap' },
    { apiVersion: 'v1', kind: 'Secret' },
  ]);
  assert.deepEqual(decodeDocuments(b('{"kind":"Pod"}'), JSON_TYPE), [{ kind: 'Pod' }]);
  rejects(() => decodeBody(b(text), YAML_TYPE), 400, /single document, found 2/);
  assert.deepEqual(decodeBody(b('---\nkind: Pod\n---\n'), YAML_TYPE), { kind: 'Pod' });
});

test('anchors do not cross documents', () => {
  rejects(() => decodeDocuments(b('a: &x 1\n---\nb: *x\n'), YAML_TYPE), 400, /document 2: .*unknown anchor/);
});

test('duplicate keys keep the last value; findDuplicateFields reports their paths', () => {
  assert.deepEqual(decodeBody(b('{"a":1,"a":2}'), JSON_TYPE), { a: 2 });
  assert.deepEqual(decodeBody(b('a: 1\na: 2\n'), YAML_TYPE), { a: 2 });
  const json = '{"metadata":{"name":"x","name":"y"},"spec":{"containers":[{"name":"a","image":"i","image":"j"}]},"spec":{}}';
  assert.deepEqual(findDuplicateFields(b(json), JSON_TYPE), ['metadata.name', 'spec.containers[0].image', 'spec']);
  const yaml = 'metadata:\n  labels: {a: 1, a: 2}\nspec:\n  containers:\n  - name: a\n    name: b\n';
  assert.deepEqual(findDuplicateFields(b(yaml), YAML_TYPE), ['metadata.labels.a', 'spec.containers[0].name']);
  assert.deepEqual(findDuplicateFields(b('{"a\\u0062":1,"ab":2,"s":"x\\"y"}'), JSON_TYPE), ['ab']);
  assert.deepEqual(findDuplicateFields(b('{"a":1}'), JSON_TYPE), []);
  rejects(() => findDuplicateFields(b('{"a":'), JSON_TYPE), 400);
});

test('assertObject checks for an object with apiVersion and kind', () => {
  assertObject({ apiVersion: 'v1', kind: 'Pod' });
  rejects(() => assertObject([1]), 400, /JSON object.*got an array/);
  rejects(() => assertObject('x', 2), 400, /^document 3: /);
  rejects(() => assertObject({ apiVersion: 'v1' }), 400, /Object 'Kind' is missing in '\{"apiVersion":"v1"\}'/);
  rejects(() => assertObject({ kind: 'Pod', apiVersion: 5 }), 400, /Object 'apiVersion' is missing/);
});

test('exceedsDepth is iterative and exact', () => {
  let deep: unknown = 1;
  for (let i = 0; i < 200_000; i++) deep = [deep];
  assert.equal(exceedsDepth(deep), true);
  assert.equal(exceedsDepth({ a: [{}] }, 3), false);
  assert.equal(exceedsDepth({ a: [{ b: [] }] }, 3), true);
});
