/**
 * Kubernetes resource.Quantity with exact arithmetic.
 *
 * A quantity is held as a signed bigint count of nano-units (10^-9 of the base unit: cores, bytes…).
 * Nano is the finest precision Kubernetes keeps — it rounds anything finer up at parse time — so
 * one integer represents every quantity exactly and `1.5Gi` compares equal to `1536Mi` with no
 * float in sight. The format remembers which suffix family the user wrote, because Kubernetes
 * prints a quantity back in the family it was given in (`1536Mi` stays binary, `1500m` decimal).
 */

/** Which suffix family a quantity is printed with. */
export type QuantityFormat = 'DecimalSI' | 'BinarySI' | 'DecimalExponent';

export interface Quantity {
  /** The exact value in units of 10^-9 (so `1` is 1_000_000_000n and `100m` is 100_000_000n). */
  readonly nanos: bigint;
  readonly format: QuantityFormat;
}

/** The pattern Kubernetes quotes when a quantity does not parse. */
export const QUANTITY_REGEX_TEXT = '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$';

/** Kubernetes' wording for a malformed quantity, used verbatim in validation messages. */
export const QUANTITY_FORMAT_MESSAGE = `quantities must match the regular expression '${QUANTITY_REGEX_TEXT}'`;
const SUFFIX_MESSAGE = "unable to parse quantity's suffix";
const NUMERIC_MESSAGE = 'unable to parse numeric part of quantity';

/** Thrown by parseQuantity; `message` is the Kubernetes error text. */
export class QuantityError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'QuantityError';
  }
}

const QUANTITY_SHAPE = new RegExp(QUANTITY_REGEX_TEXT);
const NUMBER_SHAPE = /^([+-]?)([0-9]*)(?:\.([0-9]*))?$/;
const EXPONENT_SHAPE = /^[eE]([+-]?[0-9]+)$/;

const DECIMAL_EXPONENTS: Record<string, number> = { n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
const BINARY_POWERS: Record<string, number> = { Ki: 1, Mi: 2, Gi: 3, Ti: 4, Pi: 5, Ei: 6 };
const DECIMAL_SUFFIX_BY_EXPONENT = new Map<number, string>(Object.entries(DECIMAL_EXPONENTS).map(([s, e]) => [e, s]));
const BINARY_SUFFIXES = ['', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'];

/**
 * Exponents beyond this are refused: nobody requests 10^5000 bytes, and an unbounded exponent
 * would let one request make the server build an enormous bigint.
 */
const MAX_DECIMAL_EXPONENT = 4096;

const NANOS_PER_UNIT = 1_000_000_000n;
const NANOS_PER_MILLI = 1_000_000n;
const KIBI = 1024n;

interface Suffix {
  format: QuantityFormat;
  /** multiply by 10^decimalExponent … */
  decimalExponent: number;
  /** … and by 1024^binaryPower */
  binaryPower: number;
}

function interpretSuffix(suffix: string): Suffix | undefined {
  const decimal = DECIMAL_EXPONENTS[suffix];
  if (decimal !== undefined) return { format: 'DecimalSI', decimalExponent: decimal, binaryPower: 0 };
  const binary = BINARY_POWERS[suffix];
  if (binary !== undefined) return { format: 'BinarySI', decimalExponent: 0, binaryPower: binary };
  const exponent = EXPONENT_SHAPE.exec(suffix);
  if (exponent?.[1] !== undefined) {
    const value = Number.parseInt(exponent[1], 10);
    if (Math.abs(value) > MAX_DECIMAL_EXPONENT) throw new QuantityError(NUMERIC_MESSAGE);
    return { format: 'DecimalExponent', decimalExponent: value, binaryPower: 0 };
  }
  return undefined;
}

/** a / b rounded towards +infinity (b > 0). */
function ceilDiv(a: bigint, b: bigint): bigint {
  const q = a / b;
  return a > 0n && a % b !== 0n ? q + 1n : q;
}

/**
 * Parses a quantity string (`100m`, `1.5Gi`, `1e3`, `+5`, `.5`) exactly.
 * JSON numbers are accepted too, since Kubernetes decodes `cpu: 1` (unquoted) as a quantity.
 * Precision finer than 1n is rounded away from zero, as Kubernetes does.
 * @throws QuantityError with Kubernetes' message when the text is not a quantity.
 */
export function parseQuantity(input: string | number): Quantity {
  const text = typeof input === 'number' ? numberToQuantityText(input) : input;
  const shape = QUANTITY_SHAPE.exec(text);
  if (!shape) throw new QuantityError(QUANTITY_FORMAT_MESSAGE);
  const numberPart = shape[1] ?? '';
  const suffixPart = shape[2] ?? '';

  const num = NUMBER_SHAPE.exec(numberPart);
  const whole = num?.[2] ?? '';
  const fraction = num?.[3] ?? '';
  // `1.5.5` and a bare `.` fit the outer pattern but are not numbers.
  if (!num || whole.length + fraction.length === 0) throw new QuantityError(QUANTITY_FORMAT_MESSAGE);
  const negative = num[1] === '-';

  const suffix = interpretSuffix(suffixPart);
  if (!suffix) throw new QuantityError(SUFFIX_MESSAGE);

  // value = digits * 10^(decimalExponent - fraction.length) * 1024^binaryPower, expressed in nanos
  const digits = BigInt(whole + fraction || '0') * KIBI ** BigInt(suffix.binaryPower);
  const scale = suffix.decimalExponent - fraction.length + 9;
  const magnitude = scale >= 0 ? digits * 10n ** BigInt(scale) : ceilDiv(digits, 10n ** BigInt(-scale));
  const nanos = negative ? -magnitude : magnitude;
  // Kubernetes prints zero as plain "0" whatever suffix it came with.
  return { nanos, format: nanos === 0n && suffix.format === 'BinarySI' ? 'DecimalSI' : suffix.format };
}

function numberToQuantityText(n: number): string {
  if (!Number.isFinite(n)) throw new QuantityError(QUANTITY_FORMAT_MESSAGE);
  // String(1e21) is "1e+21", which is itself valid quantity syntax.
  return String(n);
}

/** parseQuantity that returns undefined instead of throwing. */
export function tryParseQuantity(input: string | number): Quantity | undefined {
  try {
    return parseQuantity(input);
  } catch (e) {
    if (e instanceof QuantityError) return undefined;
    throw e;
  }
}

/** Builds a quantity from an exact nano count. */
export function quantityFromNanos(nanos: bigint, format: QuantityFormat = 'DecimalSI'): Quantity {
  return { nanos, format };
}

/** Builds a quantity from thousandths of a unit (e.g. millicores). */
export function quantityFromMilli(milli: bigint, format: QuantityFormat = 'DecimalSI'): Quantity {
  return { nanos: milli * NANOS_PER_MILLI, format };
}

/** Builds a quantity from whole units (e.g. bytes). */
export function quantityFromValue(value: bigint, format: QuantityFormat = 'DecimalSI'): Quantity {
  return { nanos: value * NANOS_PER_UNIT, format };
}

/** Value in thousandths, rounded up (ceiling): cpu `0.0001` is 1m, as the kubelet would request. */
export function milliValue(q: Quantity): bigint {
  return ceilDiv(q.nanos, NANOS_PER_MILLI);
}

/** Value in whole units, rounded up (ceiling): memory `0.5` bytes is 1 byte. */
export function value(q: Quantity): bigint {
  return ceilDiv(q.nanos, NANOS_PER_UNIT);
}

/** -1, 0 or 1 as a is less than, equal to or greater than b. */
export function compare(a: Quantity, b: Quantity): -1 | 0 | 1 {
  return a.nanos < b.nanos ? -1 : a.nanos > b.nanos ? 1 : 0;
}

/** a + b, printed in a's format (as Kubernetes' Quantity.Add keeps the receiver's). */
export function add(a: Quantity, b: Quantity): Quantity {
  return { nanos: a.nanos + b.nanos, format: a.format };
}

/** a - b, printed in a's format. */
export function sub(a: Quantity, b: Quantity): Quantity {
  return { nanos: a.nanos - b.nanos, format: a.format };
}

export function isZero(q: Quantity): boolean {
  return q.nanos === 0n;
}

export function isNegative(q: Quantity): boolean {
  return q.nanos < 0n;
}

/**
 * The canonical string Kubernetes would serialize: `1.5Gi` → `1536Mi`, `0.5` → `500m`,
 * `1000` → `1k`, `1e3` → `1e3`. Binary quantities that are fractional or below 1Ki fall back to
 * decimal so no precision is lost.
 */
export function formatQuantity(q: Quantity): string {
  if (q.nanos === 0n) return '0';
  if (q.format === 'BinarySI') {
    const binary = formatBinary(q.nanos);
    if (binary !== undefined) return binary;
  }
  return formatDecimal(q.nanos, q.format === 'DecimalExponent');
}

function formatBinary(nanos: bigint): string | undefined {
  const magnitude = nanos < 0n ? -nanos : nanos;
  if (magnitude < KIBI * NANOS_PER_UNIT || magnitude % NANOS_PER_UNIT !== 0n) return undefined;
  let mantissa = nanos / NANOS_PER_UNIT;
  let power = 0;
  while (power < BINARY_SUFFIXES.length - 1 && mantissa % KIBI === 0n) {
    mantissa /= KIBI;
    power++;
  }
  return `${mantissa}${BINARY_SUFFIXES[power] ?? ''}`;
}

function formatDecimal(nanos: bigint, exponentForm: boolean): string {
  let mantissa = nanos;
  let exponent = -9;
  // SI suffixes stop at E; the exponent form may keep going.
  const maxExponent = exponentForm ? Number.POSITIVE_INFINITY : 18;
  while (exponent < maxExponent && mantissa % 1000n === 0n) {
    mantissa /= 1000n;
    exponent += 3;
  }
  if (exponentForm) return exponent === 0 ? `${mantissa}` : `${mantissa}e${exponent}`;
  return `${mantissa}${DECIMAL_SUFFIX_BY_EXPONENT.get(exponent) ?? ''}`;
}

/** Parses then re-prints a quantity in canonical form (what the API server stores and returns). */
export function canonicalizeQuantity(input: string | number): string {
  return formatQuantity(parseQuantity(input));
}
