/**
 * Owns what a CustomResourceDefinition's structural schema does to a custom resource on every write,
 * as kube-apiserver does it: defaulting, pruning of undeclared fields, and validation of types,
 * required, enum, pattern and bounds with Kubernetes' field paths and messages. Validating the CRD
 * itself and serving its resources are src/registry/kinds/apiextensions.ts's.
 */
import type { FieldError } from '../api/errors.js';
import type { JSONSchemaProps } from '../api/types.js';

const ROOT_KEEP = new Set(['apiVersion', 'kind', 'metadata']);

/** Where the current applySchema call reports pruned paths (it is synchronous, so one slot suffices). */
let prunedSink: string[] | undefined;

/**
 * Apply a CRD's schema to an object as kube-apiserver does on every write: fill `default`s, drop
 * fields the schema does not declare (unless `x-kubernetes-preserve-unknown-fields`), then validate
 * types, required, enum, pattern, bounds. Mutates `obj` (defaulting, pruning) and returns the
 * errors with field paths. apiVersion, kind and metadata are the registry's business and are
 * never pruned or checked here.
 */
export function applySchema(obj: Record<string, unknown>, schema: JSONSchemaProps, pruned?: string[]): FieldError[] {
  const errors: FieldError[] = [];
  prunedSink = pruned;
  const props = schema.properties ?? {};
  for (const [k, sub] of Object.entries(props)) {
    if (ROOT_KEEP.has(k)) continue;
    if (obj[k] === undefined && sub.default !== undefined) obj[k] = structuredClone(sub.default);
  }
  for (const k of Object.keys(obj)) {
    if (ROOT_KEEP.has(k)) continue;
    const sub = props[k];
    if (!sub) {
      if (!schema['x-kubernetes-preserve-unknown-fields']) {
        prunedSink?.push(k);
        delete obj[k];
      }
      continue;
    }
    obj[k] = walk(obj[k], sub, k, errors);
  }
  for (const r of schema.required ?? []) {
    if (!ROOT_KEEP.has(r) && obj[r] === undefined) errors.push({ field: r, type: 'FieldValueRequired', message: 'Required value' });
  }
  return errors;
}

function typeName(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

function walk(value: unknown, s: JSONSchemaProps, path: string, errors: FieldError[]): unknown {
  if (value === null) {
    if (!s.nullable) errors.push({ field: path, type: 'FieldValueTypeInvalid', message: `Invalid value: "null": ${path} in body must be of type ${s.type ?? 'object'}: "null"` });
    return value;
  }
  if (s['x-kubernetes-int-or-string']) {
    if (typeof value !== 'string' && !(typeof value === 'number' && Number.isInteger(value))) {
      errors.push({ field: path, type: 'FieldValueTypeInvalid', message: `Invalid value: "${typeName(value)}": ${path} in body must be of type integer or string` });
    }
    return value;
  }
  const actual = typeName(value);
  const want = s.type;
  if (want && !(actual === want || (want === 'number' && actual === 'integer'))) {
    errors.push({ field: path, type: 'FieldValueTypeInvalid', message: `Invalid value: "${actual}": ${path} in body must be of type ${want}: "${actual}"` });
    return value;
  }
  if (s.enum && !s.enum.some((e) => JSON.stringify(e) === JSON.stringify(value))) {
    errors.push({ field: path, type: 'FieldValueNotSupported', message: `Unsupported value: ${JSON.stringify(value)}: supported values: ${s.enum.map((e) => JSON.stringify(e)).join(', ')}` });
  }
  if (typeof value === 'string') {
    if (s.pattern !== undefined && !safeRegExp(s.pattern).test(value)) {
      errors.push({ field: path, type: 'FieldValueInvalid', message: `Invalid value: "${value}": ${path} in body should match '${s.pattern}'` });
    }
    if (s.minLength !== undefined && value.length < s.minLength) errors.push({ field: path, type: 'FieldValueInvalid', message: `Invalid value: "${value}": ${path} in body should be at least ${s.minLength} chars long` });
    if (s.maxLength !== undefined && value.length > s.maxLength) errors.push({ field: path, type: 'FieldValueTooLong', message: `Too long: may not be longer than ${s.maxLength}` });
  }
  if (typeof value === 'number') {
    if (s.minimum !== undefined && (s.exclusiveMinimum ? value <= s.minimum : value < s.minimum)) {
      errors.push({ field: path, type: 'FieldValueInvalid', message: `Invalid value: ${value}: ${path} in body should be greater than or equal to ${s.minimum}` });
    }
    if (s.maximum !== undefined && (s.exclusiveMaximum ? value >= s.maximum : value > s.maximum)) {
      errors.push({ field: path, type: 'FieldValueInvalid', message: `Invalid value: ${value}: ${path} in body should be less than or equal to ${s.maximum}` });
    }
  }
  if (Array.isArray(value)) {
    if (s.minItems !== undefined && value.length < s.minItems) errors.push({ field: path, type: 'FieldValueInvalid', message: `Invalid value: ${value.length}: ${path} in body should have at least ${s.minItems} items` });
    if (s.maxItems !== undefined && value.length > s.maxItems) errors.push({ field: path, type: 'FieldValueTooMany', message: `Too many: ${value.length}: must have at most ${s.maxItems} items` });
    // A list of schemas (one per position) is not structural; Kubernetes refuses it in a CRD.
    const items = s.items;
    if (items && !Array.isArray(items)) return value.map((v, i) => walk(v, items, `${path}[${i}]`, errors));
    return value;
  }
  if (actual === 'object') {
    const o = value as Record<string, unknown>;
    if (s['x-kubernetes-embedded-resource']) return o;
    for (const [k, sub] of Object.entries(s.properties ?? {})) {
      if (o[k] === undefined && sub.default !== undefined) o[k] = structuredClone(sub.default);
    }
    const additional = s.additionalProperties;
    for (const k of Object.keys(o)) {
      const sub = s.properties?.[k] ?? (typeof additional === 'object' ? additional : undefined);
      if (sub) o[k] = walk(o[k], sub, `${path}.${k}`, errors);
      else if (!(s['x-kubernetes-preserve-unknown-fields'] || additional === true)) {
        prunedSink?.push(`${path}.${k}`);
        delete o[k];
      }
    }
    for (const r of s.required ?? []) if (o[r] === undefined) errors.push({ field: `${path}.${r}`, type: 'FieldValueRequired', message: 'Required value' });
    const n = Object.keys(o).length;
    if (s.minProperties !== undefined && n < s.minProperties) errors.push({ field: path, type: 'FieldValueInvalid', message: `Invalid value: ${n}: ${path} in body should have at least ${s.minProperties} properties` });
    if (s.maxProperties !== undefined && n > s.maxProperties) errors.push({ field: path, type: 'FieldValueTooMany', message: `Too many: ${n}: must have at most ${s.maxProperties} items` });
    return o;
  }
  return value;
}

const regexCache = new Map<string, RegExp>();
/** CRD patterns are ECMA-262 in OpenAPI; a bad one matches nothing rather than throwing on every write. */
function safeRegExp(p: string): RegExp {
  let r = regexCache.get(p);
  if (!r) {
    try {
      r = new RegExp(p, 'u');
    } catch {
      r = /(?!)/;
    }
    regexCache.set(p, r);
  }
  return r;
}

/** Read a value at a JSON path like `.spec.replicas` (printer columns, scale paths). */
export function valueAtPath(obj: unknown, jsonPath: string): unknown {
  let cur: unknown = obj;
  for (const part of jsonPath.replace(/^\./, '').split('.')) {
    if (!part) continue;
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string, unknown>)[part];
  }
  return cur;
}
