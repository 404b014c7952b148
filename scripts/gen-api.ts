/**
 * `npm run gen`: turns the Kubernetes API facts (the published OpenAPI v2 document with its
 * descriptions removed, ../shared/data/kubernetes-api/openapi-v2-facts.json) into the committed
 * schema data Berth serves from, src/api/generated/openapi-definitions.json, and the TypeScript
 * shapes Berth's code is written against, src/api/generated/types.ts.
 *
 * The JSON holds, for every kind in SERVED_KINDS below, the name of its definition (and of its
 * list's), and every definition reachable from them in OpenAPI v3 form (`#/components/schemas/`
 * references, a reference beside other keywords wrapped in `allOf` as the apiserver publishes it).
 * The OpenAPI documents, unknown-field checking and strategic-merge metadata all read it
 * (src/api/api-definitions.ts). types.ts declares one type per definition of that JSON
 * (generateApiTypes below says how), so the code and the served schemas cannot drift apart. A
 * checkout builds without ../shared because both outputs are committed.
 *
 * Usage: npm run gen [-- --facts <openapi-v2-facts.json>] [-- --out <dir>]
 *   (the facts path may also come from BERTH_API_FACTS; without either, findApiFacts looks for
 *   shared/data/kubernetes-api/ above the checkout)
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** One kind Berth serves, as the generator looks it up in the facts. */
export interface ServedKindEntry {
  group: string;
  version: string;
  kind: string;
  /** false for kinds that have no list (subresource bodies such as Scale and Eviction) */
  list?: boolean;
  /**
   * A version the facts no longer publish, served with the shape of another version of the same
   * group (batch/v1beta1 CronJob has the batch/v1 shape; API 1.36 dropped v1beta1).
   */
  shapeOf?: string;
}

/**
 * Every group/version/kind Berth serves with a built-in schema. A new built-in kind adds one line
 * here and runs `npm run gen`.
 */
export const SERVED_KINDS: readonly ServedKindEntry[] = [
  { group: '', version: 'v1', kind: 'Pod' },
  { group: '', version: 'v1', kind: 'Node' },
  { group: '', version: 'v1', kind: 'Namespace' },
  { group: '', version: 'v1', kind: 'Event' },
  { group: '', version: 'v1', kind: 'ConfigMap' },
  { group: '', version: 'v1', kind: 'Secret' },
  { group: '', version: 'v1', kind: 'PersistentVolumeClaim' },
  { group: '', version: 'v1', kind: 'PersistentVolume' },
  { group: 'storage.k8s.io', version: 'v1', kind: 'StorageClass' },
  { group: '', version: 'v1', kind: 'Service' },
  { group: '', version: 'v1', kind: 'Endpoints' },
  { group: '', version: 'v1', kind: 'ServiceAccount' },
  { group: '', version: 'v1', kind: 'ReplicationController' },
  { group: '', version: 'v1', kind: 'PodTemplate' },
  { group: '', version: 'v1', kind: 'ResourceQuota' },
  { group: '', version: 'v1', kind: 'LimitRange' },
  { group: 'discovery.k8s.io', version: 'v1', kind: 'EndpointSlice' },
  { group: 'apps', version: 'v1', kind: 'Deployment' },
  { group: 'apps', version: 'v1', kind: 'ReplicaSet' },
  { group: 'apps', version: 'v1', kind: 'DaemonSet' },
  { group: 'apps', version: 'v1', kind: 'StatefulSet' },
  { group: 'apps', version: 'v1', kind: 'ControllerRevision' },
  { group: 'batch', version: 'v1', kind: 'Job' },
  { group: 'batch', version: 'v1', kind: 'CronJob' },
  { group: 'batch', version: 'v1beta1', kind: 'CronJob', shapeOf: 'v1' },
  { group: 'autoscaling', version: 'v2', kind: 'HorizontalPodAutoscaler' },
  { group: 'autoscaling', version: 'v1', kind: 'HorizontalPodAutoscaler' },
  { group: 'coordination.k8s.io', version: 'v1', kind: 'Lease' },
  { group: 'admissionregistration.k8s.io', version: 'v1', kind: 'MutatingWebhookConfiguration' },
  { group: 'admissionregistration.k8s.io', version: 'v1', kind: 'ValidatingWebhookConfiguration' },
  { group: 'apiextensions.k8s.io', version: 'v1', kind: 'CustomResourceDefinition' },
  { group: 'policy', version: 'v1', kind: 'PodDisruptionBudget' },
  { group: 'scheduling.k8s.io', version: 'v1', kind: 'PriorityClass' },
  { group: 'networking.k8s.io', version: 'v1', kind: 'NetworkPolicy' },
  { group: 'networking.k8s.io', version: 'v1', kind: 'Ingress' },
  { group: 'networking.k8s.io', version: 'v1', kind: 'IngressClass' },
  { group: 'certificates.k8s.io', version: 'v1', kind: 'CertificateSigningRequest' },
  { group: 'rbac.authorization.k8s.io', version: 'v1', kind: 'Role' },
  { group: 'rbac.authorization.k8s.io', version: 'v1', kind: 'ClusterRole' },
  { group: 'rbac.authorization.k8s.io', version: 'v1', kind: 'RoleBinding' },
  { group: 'rbac.authorization.k8s.io', version: 'v1', kind: 'ClusterRoleBinding' },
  { group: 'apiregistration.k8s.io', version: 'v1', kind: 'APIService' },
  // Bodies of subresources: /scale, /eviction and serviceaccounts/token.
  { group: 'autoscaling', version: 'v1', kind: 'Scale', list: false },
  { group: 'policy', version: 'v1', kind: 'Eviction', list: false },
  { group: 'authentication.k8s.io', version: 'v1', kind: 'TokenRequest', list: false },
];

/** Shared types the documents' operations refer to, whatever kinds are served. */
export const SUPPORTING_DEFINITIONS: readonly string[] = [
  'io.k8s.apimachinery.pkg.apis.meta.v1.Status',
  'io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions',
  'io.k8s.apimachinery.pkg.apis.meta.v1.Patch',
  'io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent',
];

/**
 * Fields the facts lost: removing descriptions also removed properties that are named
 * `description` (JSON Schema's own keyword in a CRD schema, a printer column's text). Kubernetes
 * has them, so manifests carry them.
 */
const LOST_PROPERTIES: Record<string, Record<string, Schema>> = {
  'io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps': { description: { type: 'string' } },
  'io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.ExternalDocumentation': { description: { type: 'string' } },
  'io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceColumnDefinition': { description: { type: 'string' } },
};

/**
 * The OpenAPI v3 form of types whose JSON takes more than one type. v2 can only say `string`
 * (kubectl's v2 validator lets any scalar through a string); v3 says what is accepted, and the
 * v2 document is converted back from it (src/server/openapi-v2.ts).
 */
const V3_FORMS: Record<string, Schema> = {
  'io.k8s.apimachinery.pkg.api.resource.Quantity': { oneOf: [{ type: 'string' }, { type: 'number' }] },
  'io.k8s.apimachinery.pkg.util.intstr.IntOrString': { 'x-kubernetes-int-or-string': true, anyOf: [{ type: 'integer' }, { type: 'string' }] },
};

type Schema = { [key: string]: unknown };

interface Facts {
  source?: string;
  definitions: Record<string, Schema>;
}

/** One served kind in the output. */
export interface GeneratedKind {
  group: string;
  version: string;
  kind: string;
  definition: string;
  listKind?: string;
  listDefinition?: string;
}

/** The whole generated file. */
export interface GeneratedApiData {
  _generated: string;
  source: string;
  kinds: GeneratedKind[];
  definitions: Record<string, Schema>;
}

const V2_REF = '#/definitions/';
const V3_REF = '#/components/schemas/';
export const GENERATED_FILE = 'src/api/generated/openapi-definitions.json';
export const GENERATED_TYPES_FILE = 'src/api/generated/types.ts';

function isObject(value: unknown): value is Schema {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function gvkMatches(schema: Schema, group: string, version: string, kind: string): boolean {
  const gvks = schema['x-kubernetes-group-version-kind'];
  return Array.isArray(gvks) && gvks.some((g) => isObject(g) && g['group'] === group && g['version'] === version && g['kind'] === kind);
}

/** The definition tagged with this group/version/kind (by its extension, not by guessing its name). */
function definitionOf(facts: Facts, group: string, version: string, kind: string): string {
  const found = Object.entries(facts.definitions).filter(([, schema]) => gvkMatches(schema, group, version, kind));
  if (found.length !== 1) throw new Error(`the facts have ${found.length} definitions for ${group || 'core'}/${version} ${kind}; expected one`);
  return found[0]![0];
}

/**
 * A facts schema in v3 form: references renamed; a property or item that is a reference gets it
 * inside `allOf`, so that siblings such as `x-kubernetes-patch-strategy` stay legal; the
 * group-version-kind tags are dropped (the server tags the kinds it serves).
 */
function toV3(schema: unknown, position: 'definition' | 'nested'): unknown {
  if (Array.isArray(schema)) return schema.map((s) => toV3(s, 'nested'));
  if (!isObject(schema)) return schema;
  const out: Schema = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === 'x-kubernetes-group-version-kind') continue;
    if (key === '$ref' && typeof value === 'string') continue;
    if (key === 'properties' && isObject(value)) {
      const properties: Schema = {};
      for (const name of Object.keys(value).sort()) properties[name] = toV3(value[name], 'nested');
      out[key] = properties;
    } else {
      out[key] = toV3(value, 'nested');
    }
  }
  const ref = schema['$ref'];
  if (typeof ref === 'string') {
    const v3 = { $ref: V3_REF + ref.slice(V2_REF.length) };
    if (position === 'nested') return { allOf: [v3], ...out };
    return { ...v3, ...out };
  }
  return out;
}

function collectRefs(value: unknown, into: Set<string>): void {
  if (Array.isArray(value)) {
    for (const v of value) collectRefs(v, into);
  } else if (isObject(value)) {
    for (const [key, v] of Object.entries(value)) {
      if (key === '$ref' && typeof v === 'string') into.add(v.startsWith(V2_REF) ? v.slice(V2_REF.length) : v);
      else collectRefs(v, into);
    }
  }
}

/** The generated data for `kinds`, from the facts. Pure, so a test can compare it with the committed file. */
export function generateApiData(facts: Facts, factsName: string, kinds: readonly ServedKindEntry[] = SERVED_KINDS): GeneratedApiData {
  const generatedKinds: GeneratedKind[] = [];
  const roots: string[] = [...SUPPORTING_DEFINITIONS];
  for (const entry of kinds) {
    const shapeVersion = entry.shapeOf ?? entry.version;
    const definition = definitionOf(facts, entry.group, shapeVersion, entry.kind);
    const out: GeneratedKind = { group: entry.group, version: entry.version, kind: entry.kind, definition };
    roots.push(definition);
    if (entry.list !== false) {
      const listKind = `${entry.kind}List`;
      out.listKind = listKind;
      out.listDefinition = definitionOf(facts, entry.group, shapeVersion, listKind);
      roots.push(out.listDefinition);
    }
    generatedKinds.push(out);
  }

  const reachable = new Set<string>();
  const queue = [...roots];
  while (queue.length > 0) {
    const name = queue.pop()!;
    if (reachable.has(name)) continue;
    const schema = facts.definitions[name];
    if (!schema) throw new Error(`the facts have no definition ${name}`);
    reachable.add(name);
    const refs = new Set<string>();
    collectRefs(schema, refs);
    queue.push(...refs);
  }

  const definitions: Record<string, Schema> = {};
  for (const name of [...reachable].sort()) {
    let schema = toV3(facts.definitions[name], 'definition') as Schema;
    if (V3_FORMS[name]) schema = { ...V3_FORMS[name] };
    const lost = LOST_PROPERTIES[name];
    if (lost && isObject(schema['properties'])) {
      const properties: Schema = { ...schema['properties'], ...lost };
      schema = { ...schema, properties: Object.fromEntries(Object.keys(properties).sort().map((k) => [k, properties[k]])) };
    }
    definitions[name] = schema;
  }
  return {
    _generated:
      `Generated by scripts/gen-api.ts from ${factsName} (${facts.source ?? 'Kubernetes OpenAPI v2'}, API 1.36): ` +
      'do not edit; add a kind to SERVED_KINDS there and run `npm run gen`.',
    source: factsName,
    kinds: generatedKinds,
    definitions,
  };
}

/** The file's text: stable key order and a final newline, so a regeneration without changes is byte-identical. */
export function renderApiData(data: GeneratedApiData): string {
  return `${JSON.stringify(data, null, 1)}\n`;
}

/**
 * Definitions whose type is written here rather than read from the facts, because their JSON takes
 * more than one form. Berth stores a Quantity as its canonical string (src/api/quantity-fields.ts
 * rewrites `1` as `"1"` on write), so its type is `string` although a number is accepted on input.
 * A Time is a string or `null`: the zero time is written as `null` (a pod condition's
 * `lastProbeTime`, a review's `creationTimestamp`), by Kubernetes and by Berth alike. The
 * JSONSchemaPropsOr… definitions are a schema or an array, a boolean or a string list, which the
 * facts leave untyped.
 */
const WRITTEN_TYPES: Record<string, string> = {
  'io.k8s.apimachinery.pkg.api.resource.Quantity': 'string',
  'io.k8s.apimachinery.pkg.util.intstr.IntOrString': 'number | string',
  'io.k8s.apimachinery.pkg.apis.meta.v1.Time': 'string | null',
  'io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime': 'string | null',
  'io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrArray': 'JSONSchemaProps | JSONSchemaProps[]',
  'io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool': 'JSONSchemaProps | boolean',
  'io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrStringArray': 'JSONSchemaProps | string[]',
};

/** The part of a definition name that says its API group: `core` in io.k8s.api.core.v1.Pod. */
function groupOf(definition: string): string {
  const parts = definition.split('.');
  const version = parts.length - 2;
  return /^v\d/.test(parts[version] ?? '') ? parts[version - 1]! : parts[version]!;
}

function versionOf(definition: string): string {
  const parts = definition.split('.');
  const version = parts[parts.length - 2] ?? '';
  return /^v\d/.test(version) ? version : '';
}

function pascal(word: string): string {
  return word
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((w) => w[0]!.toUpperCase() + w.slice(1))
    .join('');
}

/**
 * The TypeScript name of every definition. A definition is named by its short name, the last
 * segment (io.k8s.api.core.v1.PodSpec → PodSpec). When several definitions share a short name, every
 * one of them is prefixed with its API group (CoreEndpointPort, DiscoveryEndpointPort), or with its
 * group and version when that still leaves two alike (AutoscalingV1HorizontalPodAutoscaler,
 * AutoscalingV2HorizontalPodAutoscaler). The rule looks only at the set of names, never at their
 * order, so it is deterministic; a kind added later can rename an existing shape only by bringing a
 * definition of the same short name, and src/api/types.ts then says which one the short name means.
 */
export function typeNames(definitions: readonly string[]): Map<string, string> {
  const byShort = new Map<string, string[]>();
  for (const name of definitions) {
    const short = name.slice(name.lastIndexOf('.') + 1);
    byShort.set(short, [...(byShort.get(short) ?? []), name]);
  }
  const names = new Map<string, string>();
  for (const [short, holders] of byShort) {
    if (holders.length === 1) {
      names.set(holders[0]!, short);
      continue;
    }
    const groups = holders.map(groupOf);
    const byGroup = new Set(groups).size === holders.length;
    for (const holder of holders) {
      const prefix = byGroup ? pascal(groupOf(holder)) : pascal(groupOf(holder)) + pascal(versionOf(holder));
      names.set(holder, prefix + short);
    }
  }
  const taken = new Map<string, string>();
  for (const [definition, name] of names) {
    const other = taken.get(name);
    if (other) throw new Error(`gen-api: ${definition} and ${other} would both be named ${name}`);
    taken.set(name, definition);
  }
  return names;
}

/**
 * Fields Berth's types hold as always present where the facts leave them optional: every object of
 * these kinds that Berth stores has them, because its validation refuses one without. Kubernetes'
 * Go types hold them as struct values, so its objects always carry them as well. (A served kind's
 * metadata is always present too; generateApiTypes adds it for every kind.)
 * test/unit/api-definitions.test.ts checks each entry against the registry.
 */
export const ALWAYS_PRESENT: Readonly<Record<string, readonly string[]>> = {
  'io.k8s.api.core.v1.Pod': ['spec'],
  'io.k8s.api.core.v1.Service': ['spec'],
  'io.k8s.api.core.v1.PersistentVolumeClaim': ['spec'],
  'io.k8s.api.core.v1.ReplicationController': ['spec'],
  'io.k8s.api.core.v1.PodTemplate': ['template'],
  'io.k8s.api.core.v1.PodTemplateSpec': ['spec'],
  'io.k8s.api.core.v1.Container': ['image'],
  'io.k8s.api.apps.v1.Deployment': ['spec'],
  'io.k8s.api.apps.v1.ReplicaSet': ['spec'],
  'io.k8s.api.apps.v1.ReplicaSetSpec': ['template'],
  'io.k8s.api.apps.v1.DaemonSet': ['spec'],
  'io.k8s.api.apps.v1.StatefulSet': ['spec'],
  'io.k8s.api.batch.v1.Job': ['spec'],
  'io.k8s.api.batch.v1.CronJob': ['spec'],
  'io.k8s.api.batch.v1.JobTemplateSpec': ['spec'],
  'io.k8s.api.autoscaling.v1.HorizontalPodAutoscaler': ['spec'],
  'io.k8s.api.autoscaling.v2.HorizontalPodAutoscaler': ['spec'],
  'io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIService': ['spec'],
};

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

function union(type: string): string {
  return type.includes('|') ? `(${type})` : type;
}

/** The TypeScript type of a v3 schema (a property, an item, a map value or a whole definition). */
function typeOf(schema: unknown, names: ReadonlyMap<string, string>, indent: string): string {
  if (!isObject(schema)) return 'unknown';
  const ref = schema['$ref'];
  if (typeof ref === 'string') {
    const name = names.get(ref.slice(V3_REF.length));
    if (!name) throw new Error(`gen-api: dangling reference ${ref}`);
    return name;
  }
  const allOf = schema['allOf'];
  if (Array.isArray(allOf) && allOf.length === 1) return typeOf(allOf[0], names, indent);
  for (const key of ['oneOf', 'anyOf']) {
    const options = schema[key];
    if (Array.isArray(options)) return [...new Set(options.map((o) => typeOf(o, names, indent)))].join(' | ');
  }
  switch (schema['type']) {
    case 'string':
      return 'string';
    case 'integer':
    case 'number':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'array':
      return `${union(typeOf(schema['items'], names, indent))}[]`;
    case 'object': {
      const properties = schema['properties'];
      if (isObject(properties)) return objectType(schema, properties, names, indent);
      const values = schema['additionalProperties'];
      return `Record<string, ${isObject(values) && Object.keys(values).length > 0 ? typeOf(values, names, indent) : 'unknown'}>`;
    }
    default:
      return 'unknown';
  }
}

function objectType(schema: Schema, properties: Schema, names: ReadonlyMap<string, string>, indent: string, alsoRequired: readonly string[] = []): string {
  const required = new Set([...(Array.isArray(schema['required']) ? (schema['required'] as string[]) : []), ...alsoRequired]);
  const inner = `${indent}  `;
  const lines = Object.keys(properties)
    .sort()
    .map((name) => `${inner}${IDENTIFIER.test(name) ? name : `'${name}'`}${required.has(name) ? '' : '?'}: ${typeOf(properties[name], names, inner)};`);
  return `{\n${lines.join('\n')}\n${indent}}`;
}

/**
 * src/api/generated/types.ts for the generated data: one exported type per definition, named by
 * typeNames. A property is optional unless its definition lists it as required; a map is a
 * `Record<string, T>`; a Quantity is a string, a Time or MicroTime a string or null, an IntOrString
 * `number | string` (WRITTEN_TYPES, which also gives apiextensions' JSONSchemaPropsOr… their forms);
 * a definition the facts leave untyped (apiextensions' JSON) is `unknown`. The facts carry no
 * enums, so enumerated strings are `string`. Berth adds what it guarantees beyond the facts: a
 * served kind's `metadata` is required (every object Berth stores or serves has one, as KubeObject
 * says), and so are the fields in ALWAYS_PRESENT.
 *
 * The shapes are object type aliases rather than `interface`s: only an alias gets TypeScript's
 * implicit index signature, so a typed Pod can go wherever any API object goes (KubeObject, a
 * `Record<string, unknown>` walked by generic code) without a cast.
 */
export function generateApiTypes(data: GeneratedApiData): string {
  const definitions = Object.keys(data.definitions).sort();
  const names = typeNames(definitions);
  const kindDefinitions = new Set(data.kinds.map((k) => k.definition));
  const kindsOf = new Map<string, string[]>();
  for (const k of data.kinds) {
    const apiVersion = k.group ? `${k.group}/${k.version}` : k.version;
    kindsOf.set(k.definition, [...(kindsOf.get(k.definition) ?? []), `${apiVersion} ${k.kind}`]);
    if (k.listDefinition) kindsOf.set(k.listDefinition, [...(kindsOf.get(k.listDefinition) ?? []), `${apiVersion} ${k.listKind}`]);
  }
  const blocks = definitions
    .map((definition) => ({ definition, name: names.get(definition)! }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map(({ definition, name }) => {
      const schema = data.definitions[definition]!;
      const served = kindsOf.get(definition);
      const note = `/** ${definition}${served ? ` (${served.join(', ')})` : ''} */`;
      const properties = schema['properties'];
      let type: string;
      if (WRITTEN_TYPES[definition]) type = WRITTEN_TYPES[definition];
      else if (schema['type'] === 'object' && isObject(properties)) {
        const alsoRequired = [...(kindDefinitions.has(definition) && properties['metadata'] ? ['metadata'] : []), ...(ALWAYS_PRESENT[definition] ?? [])];
        for (const field of alsoRequired) if (!properties[field]) throw new Error(`gen-api: ${definition} has no field ${field}`);
        type = objectType(schema, properties, names, '', alsoRequired);
      } else type = typeOf(schema, names, '');
      return `${note}\nexport type ${name} = ${type};\n`;
    });
  return [
    '/**',
    ` * ${data._generated}`,
    ' *',
    ' * The shapes of every definition the built-in kinds reach, one type each, named by short name;',
    ' * names that clash across groups are prefixed with the group (and version): see typeNames and',
    ' * generateApiTypes in scripts/gen-api.ts. Import them from src/api/types.ts.',
    ' */',
    '',
    ...blocks,
  ]
    .join('\n')
    .replace(/\n+$/, '\n');
}

/** The facts file as a relative name for the output's note (it names the path the default uses). */
export const FACTS_NAME = 'shared/data/kubernetes-api/openapi-v2-facts.json';

/**
 * Where the API facts are: `explicit` (a --facts argument or BERTH_API_FACTS, relative to `root`)
 * when given, else the first shared/data/kubernetes-api/openapi-v2-facts.json found in `root`'s
 * parent, its grandparent, and so on up (../shared beside a checkout, ../../shared beside a
 * worktree). Undefined when nothing is found.
 */
export function findApiFacts(root: string, explicit?: string): string | undefined {
  if (explicit) return path.resolve(root, explicit);
  for (let dir = path.dirname(path.resolve(root)); ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, FACTS_NAME);
    if (existsSync(candidate)) return candidate;
    if (path.dirname(dir) === dir) return undefined;
  }
}

function argument(name: string): string | undefined {
  const at = process.argv.indexOf(name);
  return at >= 0 ? process.argv[at + 1] : undefined;
}

function main(): void {
  // dist/scripts/gen-api.js → the repository root
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
  const factsPath = findApiFacts(root, argument('--facts') ?? process.env['BERTH_API_FACTS']);
  const outDir = path.resolve(root, argument('--out') ?? path.dirname(GENERATED_FILE));
  if (!factsPath || !existsSync(factsPath)) {
    process.stderr.write(`gen-api: no API facts ${factsPath ? `at ${factsPath}` : `(${FACTS_NAME}) above ${root}`}; pass --facts <openapi-v2-facts.json> or set BERTH_API_FACTS\n`);
    process.exit(1);
  }
  const facts = JSON.parse(readFileSync(factsPath, 'utf8')) as Facts;
  const data = generateApiData(facts, FACTS_NAME);
  mkdirSync(outDir, { recursive: true });
  const target = path.join(outDir, path.basename(GENERATED_FILE));
  writeFileSync(target, renderApiData(data));
  process.stdout.write(`${target}: ${data.kinds.length} kinds, ${Object.keys(data.definitions).length} definitions\n`);
  const typesTarget = path.join(outDir, path.basename(GENERATED_TYPES_FILE));
  writeFileSync(typesTarget, generateApiTypes(data));
  process.stdout.write(`${typesTarget}: ${Object.keys(data.definitions).length} types\n`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) main();
