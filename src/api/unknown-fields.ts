/**
 * Unknown-field detection for `fieldValidation` (Strict / Warn): walk a request body against the
 * kind's OpenAPI v3 schema and name every key the schema does not declare, in the form
 * kube-apiserver prints them — `spec.containers[0].imagePullPolicyy`, `metadata.labelz`, a map
 * entry as `.key`.
 *
 * The schemas come from the caller: built-in kinds' from the generated API data
 * (src/api/api-definitions.ts), which lists every field Kubernetes publishes.
 *
 * Only `properties` restrict. An object schema without them, or with `additionalProperties` or
 * `x-kubernetes-preserve-unknown-fields`, accepts any key, and scalars (strings, int-or-string,
 * Quantity, RawExtension, …) are not descended. So a definition that is loose errs towards
 * accepting, never towards refusing a manifest Kubernetes accepts: kubectl validates strictly by
 * default, and a false positive breaks a user's apply.
 */

export type Schema = { readonly [key: string]: unknown };

/** Named schemas, referenced as `#/components/schemas/<name>` (a Map satisfies it). */
export interface SchemaDefinitions {
  get(name: string): Schema | undefined;
}

export interface UnknownFieldOptions {
  /**
   * The body is a merge or strategic-merge patch: `$`-prefixed keys are patch directives
   * (`$patch`, `$retainKeys`, `$setElementOrder/…`), and a key set to null is a deletion, which
   * leaves nothing behind to be unknown.
   */
  patch?: boolean;
  /**
   * Delete every unknown key from `value` as it is found. A built-in kind has no place to keep a key
   * its schema lacks — the apiserver's decoder drops it — so what is stored matches Kubernetes.
   */
  prune?: boolean;
}

const REF_PREFIX = '#/components/schemas/';
/** Always accepted at the top level, whatever the schema says (the type header of every object). */
const TOP_LEVEL = new Set(['apiVersion', 'kind']);

/** Paths of the keys in `value` that `schema` does not declare, in document order. */
export function findUnknownFields(value: unknown, schema: Schema, definitions: SchemaDefinitions, options: UnknownFieldOptions = {}): string[] {
  const found: string[] = [];
  walk(value, schema, '', definitions, options, found);
  return found;
}

function walk(value: unknown, schema: Schema, path: string, defs: SchemaDefinitions, options: UnknownFieldOptions, found: string[]): void {
  if (value === null || typeof value !== 'object') return;
  const parts = flatten(schema, defs);
  if (parts.some((p) => p['x-kubernetes-preserve-unknown-fields'] === true)) return;

  if (Array.isArray(value)) {
    const items = firstOf(parts, 'items');
    if (!isSchema(items)) return;
    value.forEach((item, i) => walk(item, items, `${path}[${i}]`, defs, options, found));
    return;
  }

  const withProperties = parts.filter((p) => isSchema(p['properties']));
  const additional = firstOf(parts, 'additionalProperties');
  if (withProperties.length === 0 && !isSchema(additional)) return; // not modelled: any key goes
  const properties: Record<string, Schema> = Object.assign({}, ...withProperties.map((p) => p['properties']));

  for (const [key, child] of Object.entries(value as Record<string, unknown>)) {
    if (options.patch && (key.startsWith('$') || child === null)) continue;
    const at = path === '' ? key : `${path}.${key}`;
    const declared = Object.hasOwn(properties, key) ? properties[key] : isSchema(additional) ? additional : undefined;
    if (declared) walk(child, declared, at, defs, options, found);
    else if (withProperties.length > 0 && additional !== true && !(path === '' && TOP_LEVEL.has(key))) {
      found.push(at);
      if (options.prune) delete (value as Record<string, unknown>)[key];
    }
  }
}

/**
 * A schema and everything it stands for through `$ref` and `allOf` (the apiserver wraps named
 * references as `{allOf: [{$ref}], description}`). An unresolvable reference contributes nothing,
 * i.e. is permissive, as the OpenAPI documents treat it.
 */
function flatten(schema: Schema, defs: SchemaDefinitions, depth = 0): Schema[] {
  if (depth > 32) return []; // a reference cycle with no shape of its own
  const out: Schema[] = [schema];
  const ref = schema['$ref'];
  if (typeof ref === 'string' && ref.startsWith(REF_PREFIX)) {
    const target = defs.get(ref.slice(REF_PREFIX.length));
    if (target) out.push(...flatten(target, defs, depth + 1));
  }
  const allOf = schema['allOf'];
  if (Array.isArray(allOf)) for (const sub of allOf) if (isSchema(sub)) out.push(...flatten(sub, defs, depth + 1));
  return out;
}

function firstOf(parts: Schema[], key: string): unknown {
  for (const p of parts) if (p[key] !== undefined) return p[key];
  return undefined;
}

function isSchema(v: unknown): v is Schema {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
