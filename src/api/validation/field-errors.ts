/**
 * Builders for FieldError in kube-apiserver's shape: `type` is the Go ErrorType name
 * (FieldValueInvalid, …) that becomes Status.details.causes[].reason, and `message` is the
 * error body (`Invalid value: "x": detail`) that follows `field: ` in the summary line.
 */
import type { FieldError } from '../errors.js';

/** `parent.child` */
export function child(path: string, name: string): string {
  return path ? `${path}.${name}` : name;
}

/** `parent[3]` */
export function index(path: string, i: number): string {
  return `${path}[${i}]`;
}

/** `parent[key]` — map entries, e.g. `resources.limits[memory]` */
export function key(path: string, k: string): string {
  return `${path}[${k}]`;
}

/**
 * Renders an offending value the way Go's %q / %v would for the common cases: strings quoted,
 * numbers and booleans bare, missing values as `null`, anything else as JSON.
 */
export function formatBadValue(v: unknown): string {
  if (v === undefined || v === null) return 'null';
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}

function withDetail(body: string, detail?: string): string {
  return detail ? `${body}: ${detail}` : body;
}

export const fieldErrors = {
  required: (field: string, detail?: string): FieldError => ({
    field,
    type: 'FieldValueRequired',
    message: withDetail('Required value', detail),
  }),
  invalid: (field: string, value: unknown, detail: string): FieldError => ({
    field,
    type: 'FieldValueInvalid',
    message: withDetail(`Invalid value: ${formatBadValue(value)}`, detail),
  }),
  /** Wrong JSON type (a string where a list belongs, …) — Go would fail to decode these. */
  typeInvalid: (field: string, value: unknown, detail: string): FieldError => ({
    field,
    type: 'FieldValueTypeInvalid',
    message: withDetail(`Invalid value: ${formatBadValue(value)}`, detail),
  }),
  notSupported: (field: string, value: unknown, supported: readonly string[]): FieldError => ({
    field,
    type: 'FieldValueNotSupported',
    message: withDetail(
      `Unsupported value: ${formatBadValue(value)}`,
      supported.length ? `supported values: ${supported.map((s) => JSON.stringify(s)).join(', ')}` : undefined,
    ),
  }),
  duplicate: (field: string, value: unknown, detail?: string): FieldError => ({
    field,
    type: 'FieldValueDuplicate',
    message: withDetail(`Duplicate value: ${formatBadValue(value)}`, detail),
  }),
  notFound: (field: string, value: unknown): FieldError => ({
    field,
    type: 'FieldValueNotFound',
    message: `Not found: ${formatBadValue(value)}`,
  }),
  tooLong: (field: string, maxBytes: number): FieldError => ({
    field,
    type: 'FieldValueTooLong',
    message: `Too long: may not be more than ${maxBytes} bytes`,
  }),
  forbidden: (field: string, detail: string): FieldError => ({
    field,
    type: 'FieldValueForbidden',
    message: withDetail('Forbidden', detail),
  }),
};

/** One Invalid error per message, all at `field` — how Kubernetes reports name-format problems. */
export function invalidEach(field: string, value: unknown, messages: string[]): FieldError[] {
  return messages.map((m) => fieldErrors.invalid(field, value, m));
}

// ---------- tolerant readers: request bodies are untyped JSON until validated ----------

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Returns an error when `v` is present but is not a list. */
export function expectArray(field: string, v: unknown): FieldError[] {
  return v === undefined || v === null || Array.isArray(v) ? [] : [fieldErrors.typeInvalid(field, v, 'must be a list')];
}

/** Returns an error when `v` is present but is not an object. */
export function expectObject(field: string, v: unknown): FieldError[] {
  return v === undefined || v === null || isRecord(v) ? [] : [fieldErrors.typeInvalid(field, v, 'must be an object')];
}

/** Returns an error when `v` is present but is not a string-to-string map. */
export function expectStringMap(field: string, v: unknown): FieldError[] {
  if (v === undefined || v === null) return [];
  if (!isRecord(v)) return [fieldErrors.typeInvalid(field, v, 'must be a map of string keys to string values')];
  return Object.entries(v)
    .filter(([, value]) => typeof value !== 'string')
    .map(([k, value]) => fieldErrors.typeInvalid(key(field, k), value, 'must be a string'));
}

/** Returns an error when `v` is present but is not an integer. */
export function expectInteger(field: string, v: unknown): FieldError[] {
  return v === undefined || v === null || Number.isInteger(v) ? [] : [fieldErrors.typeInvalid(field, v, 'must be an integer')];
}

/** Returns an error when `v` is present but is not a string. */
export function expectString(field: string, v: unknown): FieldError[] {
  return v === undefined || v === null || typeof v === 'string' ? [] : [fieldErrors.typeInvalid(field, v, 'must be a string')];
}

/** Entries of a list that may be absent or the wrong type (already reported by expectArray). */
export function listOf(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}

/** Entries of a map that may be absent or the wrong type (already reported by expectObject). */
export function entriesOf(v: unknown): Array<[string, unknown]> {
  return isRecord(v) ? Object.entries(v) : [];
}
