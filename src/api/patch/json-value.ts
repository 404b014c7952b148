/**
 * Small helpers for plain JSON values (what JSON.parse / decodeBody produce), shared by the
 * patch algorithms. Every object write goes through setOwn so a key named `__proto__` becomes an
 * ordinary own property instead of swapping the object's prototype.
 */

export type JsonObject = Record<string, unknown>;

/** A JSON object: not null, not an array. */
export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Reads an own property only; inherited names such as `constructor` never leak in. */
export function getOwn(obj: JsonObject, key: string): unknown {
  return Object.hasOwn(obj, key) ? obj[key] : undefined;
}

/** Writes an own enumerable property, safe for the key `__proto__`. */
export function setOwn(obj: JsonObject, key: string, value: unknown): void {
  if (key === '__proto__') {
    Object.defineProperty(obj, key, { value, writable: true, enumerable: true, configurable: true });
  } else {
    obj[key] = value;
  }
}

/** Deep copy of a JSON value; the copy shares nothing with the input. */
export function cloneJson<T>(value: T): T {
  if (Array.isArray(value)) return value.map((item) => cloneJson(item)) as T;
  if (isJsonObject(value)) {
    const out: JsonObject = {};
    for (const key of Object.keys(value)) setOwn(out, key, cloneJson(value[key]));
    return out as T;
  }
  return value;
}

/**
 * Copy of a patch value about to be stored where nothing merges into it, with every object
 * member whose value is null removed at any depth. Null items of arrays stay (they are values, not
 * deletions), but objects inside arrays are pruned too: a patch that replaces a list of containers
 * must not store `memory: null` in one of them.
 */
export function withoutNullMembers<T>(value: T): T {
  if (Array.isArray(value)) return value.map((item) => withoutNullMembers(item)) as T;
  if (isJsonObject(value)) {
    const out: JsonObject = {};
    for (const key of Object.keys(value)) {
      if (value[key] !== null) setOwn(out, key, withoutNullMembers(value[key]));
    }
    return out as T;
  }
  return value;
}

/** Structural equality as RFC 6902 `test` defines it: object member order does not matter. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    return a.every((item, i) => jsonEqual(item, b[i]));
  }
  if (isJsonObject(a)) {
    if (!isJsonObject(b)) return false;
    const keys = Object.keys(a);
    if (keys.length !== Object.keys(b).length) return false;
    return keys.every((key) => Object.hasOwn(b, key) && jsonEqual(a[key], b[key]));
  }
  return false;
}

/** The JSON type name, for error messages. */
export function jsonTypeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

/**
 * Rough size in bytes of the JSON text for `value`, stopping early once it passes `limit`
 * (so measuring a huge value costs at most about `limit` work).
 */
export function approximateJsonSize(value: unknown, limit = Number.POSITIVE_INFINITY): number {
  let total = 0;
  const pending: unknown[] = [value];
  while (pending.length > 0 && total <= limit) {
    const item = pending.pop();
    if (typeof item === 'string') total += item.length + 2;
    else if (Array.isArray(item)) {
      total += 2 + item.length;
      for (const child of item) pending.push(child);
    } else if (isJsonObject(item)) {
      total += 2;
      for (const key of Object.keys(item)) {
        total += key.length + 4;
        pending.push(item[key]);
      }
    } else total += 5;
  }
  return total;
}
