/**
 * Strategic-merge-patch metadata for the built-in kinds: which lists merge, and by which key, read
 * from the `x-kubernetes-patch-merge-key` / `x-kubernetes-patch-strategy` extensions of the
 * generated API data (src/api/api-definitions.ts), which carry Kubernetes' `patchStrategy` /
 * `patchMergeKey` struct tags. Lists without them are replaced wholesale, as in Kubernetes (e.g.
 * tolerations, args, containerStatuses).
 */
import { builtinApi, type Schema } from '../api-definitions.js';

/** Kubernetes' tag values; `retainKeys` only guides clients computing patches (`$retainKeys`). */
export type PatchStrategy = 'merge' | 'replace' | 'retainKeys' | 'merge,retainKeys';

export interface PatchMeta {
  /** field identifying list items, for lists of objects that merge */
  mergeKey?: string;
  strategy?: PatchStrategy;
}

/**
 * Patch metadata by field path: field names from the object root, list items transparent, e.g.
 * `['spec', 'containers', 'env']`. Undefined means: maps merge, lists are replaced.
 */
export type PatchSchema = (path: readonly string[]) => PatchMeta | undefined;

/** One schema entry, also handy for publishing x-kubernetes-patch-* in OpenAPI. */
export interface PatchField {
  path: readonly string[];
  meta: PatchMeta;
}

/** True when a list at this path merges rather than being replaced. */
export function mergesLists(meta: PatchMeta | undefined): boolean {
  return meta?.strategy === 'merge' || meta?.strategy === 'merge,retainKeys';
}

const REF_PREFIX = '#/components/schemas/';
const OBJECT_META = 'io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta';
/** What a kind without generated data has: the metadata every object carries. */
const METADATA_ONLY: Schema = { type: 'object', properties: { metadata: { allOf: [{ $ref: REF_PREFIX + OBJECT_META }] } } };

function isSchema(v: unknown): v is Schema {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A schema with its `allOf` / `$ref` resolved into the parts that make it up. */
function parts(schema: Schema, depth = 0): Schema[] {
  if (depth > 16) return [];
  const out: Schema[] = [schema];
  const ref = schema['$ref'];
  if (typeof ref === 'string' && ref.startsWith(REF_PREFIX)) {
    const target = builtinApi().definitions.get(ref.slice(REF_PREFIX.length));
    if (target) out.push(...parts(target, depth + 1));
  }
  const allOf = schema['allOf'];
  if (Array.isArray(allOf)) for (const sub of allOf) if (isSchema(sub)) out.push(...parts(sub, depth + 1));
  return out;
}

function first(of: Schema[], key: string): unknown {
  for (const p of of) if (p[key] !== undefined) return p[key];
  return undefined;
}

function metaOf(property: Schema): PatchMeta | undefined {
  const mergeKey = property['x-kubernetes-patch-merge-key'];
  const strategy = property['x-kubernetes-patch-strategy'];
  if (typeof mergeKey !== 'string' && typeof strategy !== 'string') return undefined;
  return {
    ...(typeof mergeKey === 'string' ? { mergeKey } : {}),
    ...(typeof strategy === 'string' ? { strategy: strategy as PatchStrategy } : {}),
  };
}

/** The schema of the field `name` inside a value described by `schema` (a declared property, else a map's values). */
function fieldOf(schema: Schema, name: string): Schema | undefined {
  const of = parts(schema);
  for (const p of of) {
    const properties = p['properties'];
    if (isSchema(properties) && Object.hasOwn(properties, name) && isSchema(properties[name])) return properties[name];
  }
  const additional = first(of, 'additionalProperties');
  return isSchema(additional) ? additional : undefined;
}

/** What one element of a list field holds; non-lists are themselves. */
function elementOf(schema: Schema): Schema {
  const items = first(parts(schema), 'items');
  return isSchema(items) ? items : schema;
}

/** The root schema of a built-in kind by kind name (the first served version; they share a shape). */
function rootSchema(kind: string): Schema {
  const api = builtinApi();
  for (const entry of api.kinds.values()) {
    if (entry.kind === kind) return api.definitions.get(entry.definition) ?? METADATA_ONLY;
  }
  return METADATA_ONLY;
}

/** Patch metadata at `path` below `root`, following declared properties, list items and map values. */
function lookup(root: Schema, path: readonly string[]): PatchMeta | undefined {
  let current = root;
  let field: Schema | undefined;
  for (let i = 0; i < path.length; i++) {
    if (i > 0) current = elementOf(field!);
    field = fieldOf(current, path[i]!);
    if (!field) return undefined;
  }
  return field && metaOf(field);
}

/**
 * Every patch-metadata entry of a kind (unknown kinds get ObjectMeta's only), found by walking
 * declared properties and list items; a definition already on the walk's path is not entered again
 * (recursive types such as a CRD's JSONSchemaProps).
 */
export function builtinPatchFields(kind: string): PatchField[] {
  const fields: PatchField[] = [];
  const visit = (schema: Schema, path: string[], entered: ReadonlySet<string>): void => {
    const names = new Set(entered);
    for (const p of parts(schema)) {
      const ref = p['$ref'];
      if (typeof ref === 'string') {
        if (names.has(ref)) return;
        names.add(ref);
      }
    }
    for (const p of parts(schema)) {
      const properties = p['properties'];
      if (!isSchema(properties)) continue;
      for (const [name, property] of Object.entries(properties)) {
        if (!isSchema(property)) continue;
        const meta = metaOf(property);
        if (meta) fields.push({ path: [...path, name], meta });
        visit(elementOf(property), [...path, name], names);
      }
    }
  };
  visit(rootSchema(kind), [], new Set());
  return fields;
}

/** Builds a PatchSchema from explicit entries. */
export function patchSchemaFromFields(fields: readonly PatchField[]): PatchSchema {
  // JSON.stringify keeps segment boundaries exact, whatever characters field names contain.
  const table = new Map(fields.map((f) => [JSON.stringify(f.path), f.meta]));
  return (path) => table.get(JSON.stringify(path));
}

const schemaCache = new Map<string, PatchSchema>();
const MAX_REMEMBERED_PATHS = 4096;

/**
 * The strategic-merge-patch schema for a built-in kind (by `kind`, e.g. `Deployment`). Answers are
 * looked up in the generated data on first use of each path and remembered.
 */
export function builtinPatchSchema(kind: string): PatchSchema {
  let schema = schemaCache.get(kind);
  if (!schema) {
    const answers = new Map<string, PatchMeta | undefined>();
    let root: Schema | undefined;
    schema = (path) => {
      const key = JSON.stringify(path);
      if (answers.has(key)) return answers.get(key);
      root ??= rootSchema(kind);
      const meta = lookup(root, path);
      // Paths include map keys from request bodies, so the memory of answers is bounded.
      if (answers.size >= MAX_REMEMBERED_PATHS) answers.clear();
      answers.set(key, meta);
      return meta;
    };
    schemaCache.set(kind, schema);
  }
  return schema;
}

/** Pod's schema, the one most patches use. */
export const podPatchSchema: PatchSchema = builtinPatchSchema('Pod');
