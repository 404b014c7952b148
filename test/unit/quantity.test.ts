import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  add,
  canonicalizeQuantity,
  compare,
  formatQuantity,
  isNegative,
  milliValue,
  parseQuantity,
  QUANTITY_FORMAT_MESSAGE,
  QuantityError,
  quantityFromMilli,
  quantityFromValue,
  sub,
  tryParseQuantity,
  value,
} from '../../src/api/quantity.js';

const q = parseQuantity;

describe('parseQuantity: exact values', () => {
  it('binary and decimal forms of the same amount are exactly equal', () => {
    assert.equal(compare(q('1.5Gi'), q('1536Mi')), 0);
    assert.equal(value(q('1.5Gi')), 1610612736n);
    assert.equal(compare(q('1Ki'), q('1024')), 0);
    assert.equal(compare(q('1k'), q('1000')), 0);
    assert.equal(compare(q('1G'), q('1000M')), 0);
  });

  it('milli suffix and fractional cores', () => {
    assert.equal(milliValue(q('100m')), 100n);
    assert.equal(milliValue(q('0.1')), 100n);
    assert.equal(milliValue(q('2')), 2000n);
    assert.equal(milliValue(q('1.5')), 1500n);
    assert.equal(compare(q('0.5'), q('500m')), 0);
  });

  it('rounds milli values up: more than 3 decimals of cores become at least 1m', () => {
    assert.equal(milliValue(q('0.0001')), 1n);
    assert.equal(milliValue(q('0.0011')), 2n);
    assert.equal(milliValue(q('1u')), 1n);
    assert.equal(milliValue(q('1n')), 1n);
    assert.equal(milliValue(q('0')), 0n);
  });

  it('rounds whole-unit values up', () => {
    assert.equal(value(q('100m')), 1n);
    assert.equal(value(q('1.0000001')), 2n);
    assert.equal(value(q('1')), 1n);
    assert.equal(value(q('1500m')), 2n);
  });

  it('exponent forms', () => {
    assert.equal(value(q('1e3')), 1000n);
    assert.equal(value(q('1E3')), 1000n);
    assert.equal(value(q('1e+3')), 1000n);
    assert.equal(milliValue(q('1e-3')), 1n);
    assert.equal(value(q('2.5e2')), 250n);
  });

  it('huge values stay exact as bigint', () => {
    assert.equal(value(q('5Ei')), 5n * 2n ** 60n);
    assert.equal(value(q('8E')), 8n * 10n ** 18n);
    assert.equal(value(q('1e30')), 10n ** 30n);
    assert.equal(value(q('123456789012345678901234567890')), 123456789012345678901234567890n);
  });

  it('every suffix', () => {
    const cases: Array<[string, bigint]> = [
      ['1n', 1n],
      ['1u', 1000n],
      ['1m', 1000000n],
      ['1', 10n ** 9n],
      ['1k', 10n ** 12n],
      ['1M', 10n ** 15n],
      ['1G', 10n ** 18n],
      ['1T', 10n ** 21n],
      ['1P', 10n ** 24n],
      ['1E', 10n ** 27n],
      ['1Ki', 1024n * 10n ** 9n],
      ['1Mi', 1024n ** 2n * 10n ** 9n],
      ['1Gi', 1024n ** 3n * 10n ** 9n],
      ['1Ti', 1024n ** 4n * 10n ** 9n],
      ['1Pi', 1024n ** 5n * 10n ** 9n],
      ['1Ei', 1024n ** 6n * 10n ** 9n],
    ];
    for (const [text, nanos] of cases) assert.equal(q(text).nanos, nanos, text);
  });

  it('signs, leading dot, trailing dot', () => {
    assert.equal(milliValue(q('+5')), 5000n);
    assert.equal(milliValue(q('-5')), -5000n);
    assert.ok(isNegative(q('-1Mi')));
    assert.equal(milliValue(q('.5')), 500n);
    assert.equal(value(q('5.')), 5n);
  });

  it('rounds sub-nano precision away from zero, as Kubernetes does', () => {
    assert.equal(q('0.0000000001').nanos, 1n);
    assert.equal(q('-0.0000000001').nanos, -1n);
  });

  it('accepts JSON numbers (unquoted quantities)', () => {
    assert.equal(milliValue(q(1)), 1000n);
    assert.equal(milliValue(q(0.25)), 250n);
  });
});

describe('parseQuantity: invalid input', () => {
  const formatWrong = ['', '1.5.5Gi', '10XB', 'abc', ' 1', '1 ', '1 Gi', '.', '-', 'Gi', '1Gi ', '--1', '1e3.5', '0x10'];
  for (const text of formatWrong) {
    it(`rejects ${JSON.stringify(text)} with the regex message`, () => {
      assert.throws(
        () => q(text),
        (e: unknown) => e instanceof QuantityError && e instanceof Error && e.message === QUANTITY_FORMAT_MESSAGE,
      );
    });
  }

  it('the message is Kubernetes text', () => {
    assert.equal(
      QUANTITY_FORMAT_MESSAGE,
      "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
    );
  });

  for (const text of ['1K', '1ki', '1e', '1Kii', '1mi', '1Ki3']) {
    it(`rejects suffix ${JSON.stringify(text)}`, () => {
      assert.throws(() => q(text), { name: 'QuantityError', message: "unable to parse quantity's suffix" });
    });
  }

  it('rejects absurd exponents instead of building giant numbers', () => {
    assert.throws(() => q('1e999999999'), QuantityError);
  });

  it('rejects non-finite numbers', () => {
    assert.throws(() => q(Number.NaN), QuantityError);
  });

  it('tryParseQuantity returns undefined', () => {
    assert.equal(tryParseQuantity('nope'), undefined);
    assert.equal(tryParseQuantity('1')?.nanos, 10n ** 9n);
  });
});

describe('arithmetic', () => {
  it('compare', () => {
    assert.equal(compare(q('100m'), q('0.2')), -1);
    assert.equal(compare(q('1Gi'), q('1G')), 1);
    assert.equal(compare(q('1Gi'), q('1073741824')), 0);
  });

  it('add and sub are exact and keep the left format', () => {
    const sum = add(q('1Gi'), q('512Mi'));
    assert.equal(formatQuantity(sum), '1536Mi');
    assert.equal(compare(sum, q('1.5Gi')), 0);
    assert.equal(formatQuantity(add(q('100m'), q('250m'))), '350m');
    assert.equal(formatQuantity(sub(q('1'), q('0.1'))), '900m');
    assert.equal(formatQuantity(sub(q('100m'), q('200m'))), '-100m');
    // 0.1 + 0.2 has no float error here.
    assert.equal(compare(add(q('0.1'), q('0.2')), q('0.3')), 0);
  });

  it('constructors', () => {
    assert.equal(formatQuantity(quantityFromMilli(1500n)), '1500m');
    assert.equal(formatQuantity(quantityFromValue(2048n, 'BinarySI')), '2Ki');
    assert.equal(formatQuantity(quantityFromValue(3000n)), '3k');
  });
});

describe('formatQuantity (canonical form)', () => {
  const cases: Array<[string, string]> = [
    ['1.5Gi', '1536Mi'],
    ['1536Mi', '1536Mi'],
    ['2048Mi', '2Gi'],
    ['1024', '1024'],
    ['1Ki', '1Ki'],
    ['0.5Ki', '512'],
    ['1.5Ki', '1536'],
    ['100m', '100m'],
    ['0.1', '100m'],
    ['1.5', '1500m'],
    ['1000', '1k'],
    ['1500', '1500'],
    ['1000000', '1M'],
    ['0', '0'],
    ['0Gi', '0'],
    ['0.0001', '100u'],
    ['1e3', '1e3'],
    ['1E3', '1e3'],
    ['1.5e3', '1500'],
    ['1e-3', '1e-3'],
    ['5Ei', '5Ei'],
    ['-2Ki', '-2Ki'],
    ['-1.5', '-1500m'],
    ['1000E', '1000E'],
    ['1e21', '1e21'],
    // apimachinery's TestQuantityParseEmit, each also negated
    ['1024Mi', '1Gi'],
    ['1000M', '1G'],
    ['.001Ki', '1024m'],
    ['.000001Ki', '1024u'],
    ['.000000001Ki', '1024n'],
    ['.000000000001Ki', '2n'],
    ['-1024Mi', '-1Gi'],
    ['-1000M', '-1G'],
    ['-.001Ki', '-1024m'],
    ['-.000000000001Ki', '-2n'],
    ['1024Ki', '1Mi'],
    ['100M', '100M'],
    ['1000m', '1'],
  ];
  for (const [input, expected] of cases) {
    it(`${input} → ${expected}`, () => assert.equal(canonicalizeQuantity(input), expected));
  }
});
