import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiError } from '../../src/api/errors.js';
import {
  assertFieldsSupported,
  fieldSelectorRequirements,
  fieldSelectorToString,
  isEverythingSelector,
  labelSelectorFromObject,
  labelSelectorToString,
  matchesFields,
  matchesLabels,
  parseFieldSelector,
  parseLabelSelector,
} from '../../src/api/selectors.js';

function badRequest(message?: RegExp | string) {
  return (e: unknown) => {
    assert.ok(e instanceof ApiError, `expected ApiError, got ${String(e)}`);
    assert.equal(e.code, 400);
    assert.equal(e.reason, 'BadRequest');
    if (typeof message === 'string') assert.equal(e.message, message);
    else if (message) assert.match(e.message, message);
    return true;
  };
}

const web = { app: 'web', tier: 'frontend', version: '3' };
const db = { app: 'db', tier: 'backend' };

function selects(selector: string, labels: Record<string, string> | undefined): boolean {
  return matchesLabels(parseLabelSelector(selector), labels);
}

describe('parseLabelSelector + matchesLabels', () => {
  it('empty and blank selectors match everything', () => {
    for (const s of ['', '   ']) {
      const sel = parseLabelSelector(s);
      assert.ok(isEverythingSelector(sel));
      assert.ok(matchesLabels(sel, web));
      assert.ok(matchesLabels(sel, undefined));
    }
  });

  it('equality: =, ==', () => {
    assert.ok(selects('app=web', web));
    assert.ok(selects('app==web', web));
    assert.ok(!selects('app=web', db));
    assert.ok(!selects('app=web', undefined));
  });

  it('inequality matches objects without the label', () => {
    assert.ok(selects('app!=web', db));
    assert.ok(!selects('app!=web', web));
    assert.ok(selects('missing!=x', web));
  });

  it('set membership', () => {
    assert.ok(selects('app in (web,db)', web));
    assert.ok(selects('app in (web, db)', db));
    assert.ok(!selects('app in (cache)', web));
    assert.ok(selects('app notin (cache,db)', web));
    assert.ok(!selects('app notin (web)', web));
    assert.ok(selects('missing notin (x)', web));
    assert.ok(!selects('missing in (x)', web));
  });

  it('existence', () => {
    assert.ok(selects('version', web));
    assert.ok(!selects('version', db));
    assert.ok(selects('!version', db));
    assert.ok(!selects('!version', web));
  });

  it('comma-joined requirements must all hold', () => {
    assert.ok(selects('app=web,tier=frontend', web));
    assert.ok(!selects('app=web,tier=backend', web));
    assert.ok(selects('app in (web,db), !gone, tier', db));
  });

  it('integer comparisons', () => {
    assert.ok(selects('version>2', web));
    assert.ok(!selects('version>3', web));
    assert.ok(selects('version<4', web));
    assert.ok(!selects('version<4', db));
  });

  it('empty values', () => {
    assert.ok(selects('app=', { app: '' }));
    assert.ok(!selects('app=', web));
    assert.ok(selects('app in ()', { app: '' }));
    assert.ok(selects('app in (web,)', { app: '' }));
  });

  it('prefixed keys and keyword-looking keys', () => {
    assert.ok(selects('example.com/role=api', { 'example.com/role': 'api' }));
    assert.ok(selects('in=x', { in: 'x' }));
    assert.ok(selects('notin in (in)', { notin: 'in' }));
  });

  it('requirements are sorted by key and values de-duplicated', () => {
    const sel = parseLabelSelector('b in (y,x,x),a=1');
    assert.deepEqual(sel.requirements, [
      { key: 'a', operator: 'Equals', values: ['1'] },
      { key: 'b', operator: 'In', values: ['x', 'y'] },
    ]);
  });
});

describe('parseLabelSelector syntax errors → 400', () => {
  const cases: Array<[string, RegExp | string]> = [
    ['app in web', "unable to parse requirement: found 'web', expected: '('"],
    ['app in (web', "unable to parse requirement: found '', expected: ',' or ')'"],
    ['app in (a b)', "unable to parse requirement: found 'b', expected: ',' or ')'"],
    ['app=web,', "found '', expected: identifier after ','"],
    [',app', "found ',', expected: !, identifier, or 'end of string'"],
    ['app web', /^unable to parse requirement: found 'web', expected: /],
    ['app=web tier=x', "found 'tier', expected: ',' or 'end of string'"],
    ['!app=web', "found '=', expected: ',' or 'end of string'"],
    ['app=(x)', "unable to parse requirement: found '(', expected: identifier"],
    ['bad key=x', "unable to parse requirement: found 'key', expected: =, !=, ==, in, notin, >, <"],
    ['Bad_-=x', /invalid label key "Bad_-": name part must consist of alphanumeric characters/],
    ['app=-x', /invalid label value: "-x": at key: "app": a valid label must be an empty string/],
    ['version>abc', "unable to parse requirement: for 'Gt', 'Lt' operators, the value must be an integer"],
    ['a/b/c=x', /invalid label key "a\/b\/c"/],
  ];
  for (const [input, message] of cases) {
    it(JSON.stringify(input), () => assert.throws(() => parseLabelSelector(input), badRequest(message)));
  }
});

describe('labelSelectorFromObject', () => {
  it('absent selects nothing, empty selects everything', () => {
    assert.ok(!matchesLabels(labelSelectorFromObject(undefined), web));
    assert.ok(!matchesLabels(labelSelectorFromObject(null), {}));
    assert.ok(matchesLabels(labelSelectorFromObject({}), web));
    assert.ok(matchesLabels(labelSelectorFromObject({ matchLabels: {}, matchExpressions: [] }), {}));
  });

  it('matchLabels and matchExpressions combine', () => {
    const sel = labelSelectorFromObject({
      matchLabels: { app: 'web' },
      matchExpressions: [
        { key: 'tier', operator: 'In', values: ['frontend', 'edge'] },
        { key: 'canary', operator: 'DoesNotExist' },
        { key: 'version', operator: 'Exists' },
        { key: 'env', operator: 'NotIn', values: ['prod'] },
      ],
    });
    assert.ok(matchesLabels(sel, web));
    assert.ok(!matchesLabels(sel, { ...web, canary: 'true' }));
    assert.ok(!matchesLabels(sel, { ...web, env: 'prod' }));
    assert.ok(!matchesLabels(sel, db));
    assert.equal(labelSelectorToString(sel), 'app=web,!canary,env notin (prod),tier in (edge,frontend),version');
  });

  it('rejects bad operators and value counts with 400', () => {
    assert.throws(
      () => labelSelectorFromObject({ matchExpressions: [{ key: 'a', operator: 'Equals', values: ['x'] }] }),
      badRequest('"Equals" is not a valid label selector operator'),
    );
    assert.throws(
      () => labelSelectorFromObject({ matchExpressions: [{ key: 'a', operator: 'In', values: [] }] }),
      badRequest("for 'in', 'notin' operators, values set can't be empty"),
    );
    assert.throws(
      () => labelSelectorFromObject({ matchExpressions: [{ key: 'a', operator: 'Exists', values: ['x'] }] }),
      badRequest('values set must be empty for exists and does not exist'),
    );
    assert.throws(() => labelSelectorFromObject({ matchLabels: { 'a b': 'x' } }), badRequest(/invalid label key "a b"/));
  });
});

describe('labelSelectorToString', () => {
  it('round-trips every operator', () => {
    const text = '!a,b,c!=1,d=2,e in (x,y),f notin (z),g>5,h<7';
    const sel = parseLabelSelector(text);
    assert.equal(labelSelectorToString(sel), text);
    assert.deepEqual(parseLabelSelector(labelSelectorToString(sel)), sel);
  });

  it('normalises == to =', () => {
    assert.equal(labelSelectorToString(parseLabelSelector('a==b')), 'a=b');
  });
});

describe('field selectors', () => {
  const pod = { 'metadata.name': 'web-1', 'metadata.namespace': 'default', 'spec.nodeName': 'n1', 'status.phase': 'Running' };

  it('empty selector matches everything', () => {
    assert.ok(matchesFields(parseFieldSelector(''), pod));
  });

  it('=, ==, != and combinations', () => {
    assert.ok(matchesFields(parseFieldSelector('spec.nodeName=n1'), pod));
    assert.ok(matchesFields(parseFieldSelector('spec.nodeName==n1'), pod));
    assert.ok(!matchesFields(parseFieldSelector('spec.nodeName!=n1'), pod));
    assert.ok(matchesFields(parseFieldSelector('status.phase!=Failed,metadata.name=web-1'), pod));
    assert.ok(!matchesFields(parseFieldSelector('status.phase!=Failed,metadata.name=web-2'), pod));
  });

  it('a missing field reads as the empty string', () => {
    assert.ok(matchesFields(parseFieldSelector('spec.nodeName='), { 'metadata.name': 'x' }));
    assert.ok(matchesFields(parseFieldSelector('spec.nodeName!=n1'), {}));
  });

  it('empty terms are skipped', () => {
    assert.equal(parseFieldSelector('a=1,,b=2,').requirements.length, 2);
  });

  it('escaped values', () => {
    const sel = parseFieldSelector('metadata.name=a\\,b\\=c\\\\d');
    assert.deepEqual(fieldSelectorRequirements(sel), [{ field: 'metadata.name', operator: 'Equals', value: 'a,b=c\\d' }]);
    assert.equal(fieldSelectorToString(sel), 'metadata.name=a\\,b\\=c\\\\d');
    assert.ok(matchesFields(sel, { 'metadata.name': 'a,b=c\\d' }));
  });

  it('syntax errors → 400', () => {
    assert.throws(() => parseFieldSelector('spec.nodeName'), badRequest("invalid selector: 'spec.nodeName'; can't understand 'spec.nodeName'"));
    assert.throws(() => parseFieldSelector('a=b=c'), badRequest('invalid field selector: unescaped character in value: ='));
    assert.throws(() => parseFieldSelector('a=b\\x'), badRequest('invalid field selector: invalid escape sequence: \\x'));
  });

  it('assertFieldsSupported', () => {
    const supported = ['spec.nodeName', 'status.phase'];
    assertFieldsSupported(parseFieldSelector('spec.nodeName=n1,metadata.name=x,metadata.namespace=y'), supported, 'Pod');
    assert.throws(
      () => assertFieldsSupported(parseFieldSelector('spec.nodeName=n1,xyz=1'), supported, 'Pod'),
      badRequest('field label not supported: xyz'),
    );
  });
});
